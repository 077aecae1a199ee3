"""``testbed sweep``: run a grid of scenario variants over several seeds.

Each cell is one ``testbed run`` in a child process, with ``--set`` overrides
for its values and seed, writing ``<sweep dir>/<cell>/``. A cell whose
``summary.json`` exists is finished and skipped, so an interrupted sweep
resumes where it stopped; the cell it stopped in runs again from scratch.
At the end the sweep writes ``sweep.csv`` (one row per run), ``sweep.md``
(mean JCT with its standard deviation over seeds, per cell) and
``sweep.png``: mean JCT against the last varied field, one line per
value of the first, with error bars.
"""

from __future__ import annotations

import csv
import itertools
import json
import re
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from testbed.processes import child_env
from testbed.scenario import ScenarioError, load_scenario


@dataclass(frozen=True)
class Variation:
    key: str
    values: tuple[str, ...]

    @classmethod
    def parse(cls, text: str) -> Variation:
        key, sep, values = text.partition("=")
        parts = tuple(v.strip() for v in values.split(",") if v.strip())
        if not sep or not key.strip() or not parts:
            raise ScenarioError([f"--vary {text!r}: expected KEY.PATH=V1,V2,..."])
        return cls(key.strip(), parts)


@dataclass(frozen=True)
class Cell:
    values: tuple[tuple[str, str], ...]
    seed: int

    @property
    def name(self) -> str:
        label = "_".join(f"{key.rsplit('.', 1)[-1]}-{value}" for key, value in self.values)
        return re.sub(r"[^A-Za-z0-9_.-]", "-", f"{label}_seed-{self.seed}" if label else f"seed-{self.seed}")

    def overrides(self) -> list[str]:
        return [f"{key}={value}" for key, value in self.values] + [f"seed={self.seed}"]


def grid(variations: list[Variation], seeds: list[int]) -> list[Cell]:
    combos = itertools.product(*[[(v.key, value) for value in v.values] for v in variations])
    return [Cell(tuple(combo), seed) for combo in combos for seed in seeds]


def run_sweep(
    scenario_path: Path, variations: list[Variation], seed_count: int, out: Path, extra: list[str]
) -> Path:
    """Run (or resume) the grid; returns the sweep directory."""
    base = load_scenario(scenario_path, extra)
    seeds = [base.seed + i for i in range(seed_count)]
    cells = grid(variations, seeds)
    for cell in cells:  # every variant must be valid before anything runs
        load_scenario(scenario_path, [*extra, *cell.overrides()])
    out.mkdir(parents=True, exist_ok=True)
    (out / "sweep.json").write_text(
        json.dumps(
            {
                "scenario": str(scenario_path),
                "vary": [[v.key, list(v.values)] for v in variations],
                "seeds": seeds,
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
    write_results(out, cells, variations)
    return out


def _run_cell(scenario_path: Path, cell: Cell, run_dir: Path, extra: list[str]) -> int:
    """Run one unfinished cell from scratch: a directory left by an interrupted run of it
    goes first (a run appends to its journal and tables, which would mix the two runs)."""
    args = [sys.executable, "-m", "testbed.cli", "run", str(scenario_path), "--out", str(run_dir)]
    for assignment in [*extra, *cell.overrides()]:
        args += ["--set", assignment]
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    with open(run_dir / "run.log", "wb") as log:
        return subprocess.run(
            args, stdout=log, stderr=subprocess.STDOUT, env=child_env(), check=False
        ).returncode


def write_results(out: Path, cells: list[Cell], variations: list[Variation]) -> None:
    rows = []
    for cell in cells:
        summary_path = out / cell.name / "summary.json"
        if summary_path.exists():
            summary = json.loads(summary_path.read_text())
            rows.append({**dict(cell.values), "seed": cell.seed, "run": cell.name, **_numbers(summary)})
    if not rows:
        return
    keys = [v.key for v in variations]
    columns = list(dict.fromkeys(k for row in rows for k in row))
    with open(out / "sweep.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        writer.writerows(rows)
    groups = _groups(rows, keys)
    (out / "sweep.md").write_text(_markdown(groups, keys))
    _figure(groups, variations, out / "sweep.png")


def _numbers(summary: dict[str, Any]) -> dict[str, float]:
    return {k: v for k, v in summary.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def _groups(rows: list[dict[str, Any]], keys: list[str]) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(str(row[k]) for k in keys), []).append(row)
    return groups


def _stats(rows: list[dict[str, Any]], metric: str) -> tuple[float | None, float]:
    values = [float(r[metric]) for r in rows if r.get(metric) is not None]
    if not values:
        return None, 0.0
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def _markdown(groups: dict[tuple[str, ...], list[dict[str, Any]]], keys: list[str]) -> str:
    metrics = ("mean_jct_s", "p95_jct_s", "makespan_s", "relaunched_ratio", "evictions")
    head = [*keys, "seeds", *[f"{m} (mean ± sd)" for m in metrics]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group, rows in groups.items():
        cells = []
        for metric in metrics:
            mean, sd = _stats(rows, metric)
            cells.append("-" if mean is None else f"{mean:.3g} ± {sd:.2g}")
        lines.append("| " + " | ".join([*group, str(len(rows)), *cells]) + " |")
    return "\n".join(lines) + "\n"


def _figure(
    groups: dict[tuple[str, ...], list[dict[str, Any]]], variations: list[Variation], path: Path
) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    x_var = variations[-1] if variations else None
    line_var = variations[0] if len(variations) > 1 else None
    fig, ax = plt.subplots(figsize=(7, 4.5))
    line_values = line_var.values if line_var else ("all",)
    x_values = x_var.values if x_var else ("all",)
    for line_value in line_values:
        means, errors, xs = [], [], []
        for i, x_value in enumerate(x_values):
            rows = [
                r
                for g, rs in groups.items()
                for r in rs
                if (not line_var or g[0] == line_value) and (not x_var or g[-1] == x_value)
            ]
            mean, sd = _stats(rows, "mean_jct_s")
            if mean is not None:
                xs.append(i)
                means.append(mean)
                errors.append(sd)
        ax.errorbar(xs, means, yerr=errors, marker="o", capsize=4, label=str(line_value))
    ax.set_xticks(range(len(x_values)), [str(v) for v in x_values])
    ax.set_xlabel(x_var.key if x_var else "")
    ax.set_ylabel("mean JCT (s, wall), mean ± sd over seeds")
    if line_var:
        ax.legend(title=line_var.key)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
