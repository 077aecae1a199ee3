"""``testbed sweep``: run a grid of scenario variants over several seeds.

Each cell is one ``testbed run`` in a child process, with ``--set`` overrides
for its values and seed, writing ``<sweep dir>/<cell>/`` (its console output
to ``<sweep dir>/logs/<cell>.log``). A cell whose
``summary.json`` exists is finished and skipped, so an interrupted sweep
resumes where it stopped; the cell it stopped in runs again from scratch.
At the end the sweep writes ``sweep.csv``, ``sweep.md`` and ``sweep.png``
(``testbed/app/sweep/results.py``), failed runs flagged in each.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from testbed.app.sweep.grid import Cell, Variation, grid
from testbed.app.sweep.results import CellResult, write_results
from testbed.node.processes import child_env
from testbed.scenario.schema import Scenario, load_scenario


def run_sweep(
    scenario_path: Path,
    variations: list[Variation],
    seed_count: int,
    out: Path,
    extra: list[str],
    repeats: int = 1,
    check: Callable[[Scenario], None] = lambda _: None,
) -> list[CellResult]:
    """Run (or resume) the grid; each cell's outcome, failed ones flagged. ``check`` is what
    ``testbed run`` checks beyond the schema (its policies can be built): a ``ScenarioError``."""
    base = load_scenario(scenario_path, extra)
    seeds = [base.seed + i for i in range(seed_count)]
    cells = grid(variations, seeds, repeats)
    for cell in cells:  # every variant must be valid before anything runs
        check(load_scenario(scenario_path, [*extra, *cell.overrides()]))
    out.mkdir(parents=True, exist_ok=True)
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
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("ETA"),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console, disable=not console.is_terminal) as progress:
        bar = progress.add_task("sweep", total=len(cells), completed=len(cells) - len(todo))
        for cell in todo:
            progress.update(bar, description=cell.name)
            code = _run_cell(scenario_path, cell, out / cell.name, extra)
            if not console.is_terminal:
                done = int(progress.tasks[0].completed) + 1
                console.print(f"[{done}/{len(cells)}] {cell.name}: exit {code}")
            progress.advance(bar)
    return write_results(out, cells, variations)


def _run_cell(scenario_path: Path, cell: Cell, run_dir: Path, extra: list[str]) -> int:
    """Run one unfinished cell from scratch: a directory left by an interrupted run of it
    goes first (``testbed run`` wants a new or empty directory). Its output goes to
    ``logs/<cell>.log`` beside the cells."""
    args = [sys.executable, "-m", "testbed.app.cli", "run", str(scenario_path), "--out", str(run_dir)]
    for assignment in [*extra, *cell.overrides()]:
        args += ["--set", assignment]
    shutil.rmtree(run_dir, ignore_errors=True)
    log_path = run_dir.parent / "logs" / f"{run_dir.name}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "wb") as log:
        return subprocess.run(
            args, stdout=log, stderr=subprocess.STDOUT, env=child_env(), check=False
        ).returncode
