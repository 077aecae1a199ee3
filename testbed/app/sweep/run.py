"""``testbed sweep``: run a grid of scenario variants over several seeds.

Each cell is one ``testbed run`` in a child process, with ``--set`` overrides
for its values and seed, writing ``<sweep dir>/<cell>/`` (its console output
to ``<sweep dir>/logs/<cell>.log``); the cells run on a local pool or a Dask cluster
(``testbed/app/sweep/executor.py``), in grid order as slots free up. A cell whose
``summary.json`` exists is finished and skipped, so an interrupted sweep
resumes where it stopped; the cell it stopped in runs again from scratch.
At the end the sweep writes ``sweep.csv``, ``sweep.md`` and ``sweep.png``
(``testbed/app/sweep/results.py``), failed runs flagged in each.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from testbed.app.sweep.cells import cell_command
from testbed.app.sweep.executor import run_cells
from testbed.app.sweep.grid import Variation, grid
from testbed.app.sweep.options import SERIAL, Executor
from testbed.app.sweep.results import CellResult, write_results
from testbed.app.usage import sweep_dir
from testbed.scenario.schema import Scenario, load_scenario


def run_sweep(
    scenario_path: Path,
    variations: list[Variation],
    seed_count: int,
    out: Path,
    extra: list[str],
    repeats: int = 1,
    check: Callable[[Scenario], None] = lambda _: None,
    executor: Executor = SERIAL,
) -> list[CellResult]:
    """Run (or resume) the grid; each cell's outcome, failed ones flagged. ``check`` is what
    ``testbed run`` checks beyond the schema (its policies can be built): a ``ScenarioError``.
    ``executor``: where the cells run (``testbed/app/sweep/executor.py``); the results and
    directories are the same whichever it is."""
    base = load_scenario(scenario_path, extra)
    seeds = [base.seed + i for i in range(seed_count)]
    cells = grid(variations, seeds, repeats)
    backends = {}
    for cell in cells:  # every variant must be valid before anything runs
        variant = load_scenario(scenario_path, [*extra, *cell.overrides()])
        check(variant)
        backends[cell] = variant.backend
    sweep_dir(out, "sweep")  # only once every variant is valid: a refused sweep leaves nothing
    (out / "sweep.json").write_text(
        json.dumps(
            {
                "scenario": str(scenario_path),
                "vary": [[v.key, list(v.values)] for v in variations],
                "seeds": seeds,
                "repeats": repeats,
                "set": extra,
            },
            indent=2,
        )
    )
    todo = [c for c in cells if not (out / c.name / "summary.json").exists()]
    console = Console(stderr=True)
    if len(todo) < len(cells):
        console.print(f"resuming: {len(cells) - len(todo)} of {len(cells)} runs already done")
    commands = [
        cell_command(
            scenario_path,
            [*extra, *cell.overrides()],
            out / cell.name,
            cell.name,
            real=backends[cell] != "sim",
            share_host=executor.share_host,
        )
        for cell in todo
    ]
    run_cells(commands, executor, len(cells) - len(todo), console)
    return write_results(out, cells, variations)
