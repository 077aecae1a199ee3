"""What a sweep writes at its end: ``sweep.csv``, ``sweep.md`` and ``sweep.png``.

``sweep.csv`` has one row per run: the varied values, seed, run, its ``status``
(``ok``; ``failed`` when a job of it failed; ``crashed`` when it left no
summary) and every number of its ``summary.json``. ``sweep.md`` has one row per
cell: mean ± standard deviation over its ``ok`` runs of mean JCT, p95 JCT,
makespan, relaunched ratio and evictions, and which runs failed (excluded from
the numbers: a run's mean JCT counts only its succeeded jobs). ``sweep.png``:
mean JCT against the last varied field, one line per value of the first, with
error bars; a cell with failed runs is marked with a red cross.
"""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from testbed.sweep import Cell, Variation

Status = Literal["ok", "failed", "crashed"]
METRICS = ("mean_jct_s", "p95_jct_s", "makespan_s", "relaunched_ratio", "evictions")


@dataclass(frozen=True)
class CellResult:
    name: str
    status: Status
    summary: dict[str, Any]


def cell_result(out: Path, cell: Cell) -> CellResult:
    path = out / cell.name / "summary.json"
    if not path.exists():
        return CellResult(cell.name, "crashed", {})
    summary = json.loads(path.read_text())
    return CellResult(cell.name, "failed" if summary.get("failed") else "ok", summary)


def write_results(out: Path, cells: list[Cell], variations: list[Variation]) -> list[CellResult]:
    results = [cell_result(out, cell) for cell in cells]
    rows = [
        {**dict(cell.values), "seed": cell.seed, "run": cell.name, "status": r.status, **_numbers(r.summary)}
        for cell, r in zip(cells, results, strict=True)
    ]
    if not rows:
        return results
    keys = [v.key for v in variations]
    columns = list(dict.fromkeys(k for row in rows for k in row))
    with open(out / "sweep.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, columns)
        writer.writeheader()
        writer.writerows(rows)
    groups = _groups(rows, keys)
    (out / "sweep.md").write_text(_markdown(groups, keys))
    _figure(groups, variations, out / "sweep.png")
    return results


def _numbers(summary: dict[str, Any]) -> dict[str, float]:
    return {k: v for k, v in summary.items() if isinstance(v, int | float) and not isinstance(v, bool)}


def _groups(rows: list[dict[str, Any]], keys: list[str]) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(str(row[k]) for k in keys), []).append(row)
    return groups


def _ok(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["status"] == "ok"]


def _stats(rows: list[dict[str, Any]], metric: str) -> tuple[float | None, float]:
    values = [float(r[metric]) for r in _ok(rows) if r.get(metric) is not None]
    if not values:
        return None, 0.0
    return statistics.fmean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def _failed_runs(rows: list[dict[str, Any]]) -> str:
    failed = [f"{r['run']} ({r['status']})" for r in rows if r["status"] != "ok"]
    return f"**{len(failed)} of {len(rows)}**: " + ", ".join(failed) if failed else "0"


def _markdown(groups: dict[tuple[str, ...], list[dict[str, Any]]], keys: list[str]) -> str:
    head = [*keys, "runs", *[f"{m} (mean ± sd)" for m in METRICS], "failed runs (excluded)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group, rows in groups.items():
        cells = []
        for metric in METRICS:
            mean, sd = _stats(rows, metric)
            cells.append("-" if mean is None else f"{mean:.3g} ± {sd:.2g}")
        lines.append("| " + " | ".join([*group, str(len(rows)), *cells, _failed_runs(rows)]) + " |")
    failed = sum(1 for rows in groups.values() for r in rows if r["status"] != "ok")
    if failed:
        lines += ["", f"**{failed} run(s) failed**: their numbers are left out; see `logs/<run>.log`."]
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
    flagged: list[tuple[int, float | None]] = []
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
            if any(r["status"] != "ok" for r in rows):
                flagged.append((i, mean))
        ax.errorbar(xs, means, yerr=errors, marker="o", capsize=4, label=str(line_value))
    _mark_failed(ax, flagged)
    ax.set_xticks(range(len(x_values)), [str(v) for v in x_values])
    ax.set_xlabel(x_var.key if x_var else "")
    ax.set_ylabel("mean JCT (s, emulated), mean ± sd over seeds")
    if line_var or flagged:
        ax.legend(title=line_var.key if line_var else None)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _mark_failed(ax: Any, flagged: list[tuple[int, float | None]]) -> None:
    """A red cross on each cell with failed runs: at its mean, or on the x axis when no run
    of it succeeded."""
    if not flagged:
        return
    bottom = ax.get_ylim()[0] if ax.has_data() else 0.0
    xs = [x for x, _ in flagged]
    ys = [bottom if y is None else y for _, y in flagged]
    ax.scatter(xs, ys, marker="x", s=120, color="red", zorder=5, label="failed runs (left out)")
