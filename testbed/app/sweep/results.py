"""What a sweep writes at its end: ``sweep.csv``, ``sweep.md``, ``sweep.png`` and the
overlay CDFs ``sweep-jct-cdf`` and ``sweep-queue-cdf`` (PNG and SVG, one paper column wide).

``sweep.csv`` has one row per run: the varied values, seed, repeat, run, its
``status`` (``ok``; ``failed`` when a job of it failed; ``crashed`` when it left
no summary) and every number of its ``summary.json``. ``sweep.md`` has one row
per cell: each metric's mean over its ``ok`` runs with a 95% bootstrap interval
(``testbed/app/stats.py``; below 5 runs a t interval, and no interval for a
ratio, with a warning under the table), its mean JCT over the baseline's (the first cell) with an
interval, the spread of mean JCT within a seed (host noise: repeats of one seed)
and between seeds (the eviction schedule), and which runs failed (excluded from
the numbers: a run's mean JCT counts only its succeeded jobs). Under it, the A/A
row: the baseline's runs split in two halves, one over the other, the noise
floor any other ratio must clear. ``sweep.png``: mean JCT against the last varied
field, one line per value of the first, with 95% intervals; a cell with failed
runs is marked with a red cross.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from testbed.app.overlay import plot_cdfs
from testbed.app.stats import Estimate, estimate, few_samples_warning, halves, noise_split, ratio
from testbed.app.sweep.grid import Cell, Variation
from testbed.journal.tables import CPU_FIELDS, clock_named, emulated_row, read_table

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
    summary = clock_named(json.loads(path.read_text()))  # an older cell's too
    return CellResult(cell.name, "failed" if summary.get("failed") else "ok", summary)


def write_results(out: Path, cells: list[Cell], variations: list[Variation]) -> list[CellResult]:
    results = [cell_result(out, cell) for cell in cells]
    rows = [
        {
            **dict(cell.values),
            "seed": cell.seed,
            "repeat": cell.repeat,
            "run": cell.name,
            "status": r.status,
            **_numbers(r.summary),
        }
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
    _overlays(out, groups)
    return results


def _numbers(summary: dict[str, Any]) -> dict[str, float]:
    """The summary's numbers but its rounds' CPU seconds (``solver_time_*_cpu_s``): a
    measurement of the machine, not a result of the cell, so no column of the sweep (a
    simulated sweep's table is the same on every executor and every rerun)."""
    return {
        k: v
        for k, v in summary.items()
        if isinstance(v, int | float) and not isinstance(v, bool) and k not in CPU_FIELDS.values()
    }


def _groups(rows: list[dict[str, Any]], keys: list[str]) -> dict[tuple[str, ...], list[dict[str, Any]]]:
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(str(row[k]) for k in keys), []).append(row)
    return groups


def _values(rows: list[dict[str, Any]], metric: str) -> list[float]:
    """The metric of each ``ok`` run, in the order they ran."""
    return [float(r[metric]) for r in rows if r["status"] == "ok" and r.get(metric) is not None]


def _failed_runs(rows: list[dict[str, Any]]) -> str:
    failed = [f"{r['run']} ({r['status']})" for r in rows if r["status"] != "ok"]
    return f"**{len(failed)} of {len(rows)}**: " + ", ".join(failed) if failed else "0"


def _text(value: Estimate | float | None) -> str:
    if value is None:
        return "-"
    return value.text() if isinstance(value, Estimate) else f"{value:.2g}"


def _ratio_text(value: Estimate | None) -> str:
    return "n/a" if value is None else value.text()


def _markdown(groups: dict[tuple[str, ...], list[dict[str, Any]]], keys: list[str]) -> str:
    head = [
        *keys,
        "runs",
        *[f"{m} [95% CI]" for m in METRICS],
        "mean_jct_s ratio to baseline [95% CI]",
        "sd within a seed (host)",
        "sd between seeds (schedule)",
        "failed runs (excluded)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    baseline = _values(next(iter(groups.values())), "mean_jct_s")
    estimates: list[Estimate | None] = []
    for group, rows in groups.items():
        host, schedule = noise_split(_by_seed(rows))
        means = [estimate(_values(rows, metric)) for metric in METRICS]
        to_baseline = ratio(baseline, _values(rows, "mean_jct_s"))
        estimates += [*means, to_baseline]
        cells = [
            *map(_text, means),
            _ratio_text(to_baseline),
            _text(host),
            _text(schedule),
            _failed_runs(rows),
        ]
        lines.append("| " + " | ".join([*group, str(len(rows)), *cells]) + " |")
    lines += ["", *_aa_table(next(iter(groups.items())))]
    if warning := few_samples_warning(estimates, "runs"):
        lines += ["", f"**{warning}** (`--seeds`, `--repeats`)"]
    failed = sum(1 for rows in groups.values() for r in rows if r["status"] != "ok")
    if failed:
        lines += ["", f"**{failed} run(s) failed**: their numbers are left out; see `logs/<run>.log`."]
    return "\n".join(lines) + "\n"


def _by_seed(rows: list[dict[str, Any]]) -> dict[object, list[float]]:
    by_seed: dict[object, list[float]] = {}
    for row in rows:
        if row["status"] == "ok" and row.get("mean_jct_s") is not None:
            by_seed.setdefault(row["seed"], []).append(float(row["mean_jct_s"]))
    return by_seed


def _aa_table(baseline: tuple[tuple[str, ...], list[dict[str, Any]]]) -> list[str]:
    """The A/A row: the baseline cell against itself, its runs split in alternate halves."""
    group, rows = baseline
    label = "/".join(group) or "all runs"
    ok = [r for r in rows if r["status"] == "ok"]
    first, second = halves(ok)
    head = ["A/A (noise floor)", "runs", *[f"{m} ratio [95% CI]" for m in METRICS]]
    cells = [
        _ratio_text(ratio(_values(first, metric), _values(second, metric))) if first and second else "n/a"
        for metric in METRICS
    ]
    return [
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
        "| " + " | ".join([f"{label}: even runs / odd runs", f"{len(second)} / {len(first)}", *cells]) + " |",
    ]


def _overlays(out: Path, groups: dict[tuple[str, ...], list[dict[str, Any]]]) -> None:
    """The CDFs of every cell's jobs' JCT and queueing delay, from its ok runs' jobs.csv."""
    jct: dict[str, list[list[float]]] = {}
    queue: dict[str, list[list[float]]] = {}
    for group, rows in groups.items():
        label = "/".join(group) or "all runs"
        for row in rows:
            if row["status"] == "ok":
                dilation = float(row.get("dilation") or 1.0)  # jobs.csv has wall seconds
                jobs = [emulated_row(j, dilation) for j in read_table(out / row["run"] / "jobs.csv", "jobs")]
                jct.setdefault(label, []).append(
                    [float(j["jct_s"]) for j in jobs if j["status"] == "succeeded" and j["jct_s"]]
                )
                queue.setdefault(label, []).append([float(j["queue_s"]) for j in jobs if j.get("queue_s")])
    plot_cdfs(jct, "job completion time (s, emulated)", out / "sweep-jct-cdf")
    plot_cdfs(queue, "queueing delay (s, emulated)", out / "sweep-queue-cdf")


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
            value = estimate(_values(rows, "mean_jct_s"))
            if value is not None:
                xs.append(i)
                means.append(value.value)
                errors.append(_error_bar(value))
            if any(r["status"] != "ok" for r in rows):
                flagged.append((i, None if value is None else value.value))
        yerr = list(zip(*errors, strict=True)) if errors else None
        ax.errorbar(xs, means, yerr=yerr, marker="o", capsize=4, label=str(line_value))
    _mark_failed(ax, flagged)
    ax.set_xticks(range(len(x_values)), [str(v) for v in x_values])
    ax.set_xlabel(x_var.key if x_var else "")
    ax.set_ylabel("mean JCT (s, emulated), mean and 95% CI over runs")
    if line_var or flagged:
        ax.legend(title=line_var.key if line_var else None)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _error_bar(value: Estimate) -> tuple[float, float]:
    if value.low is None or value.high is None:
        return 0.0, 0.0
    return value.value - value.low, value.high - value.value


def _mark_failed(ax: Any, flagged: list[tuple[int, float | None]]) -> None:
    """A red cross on each cell with failed runs: at its mean, or on the x axis when no run
    of it succeeded."""
    if not flagged:
        return
    bottom = ax.get_ylim()[0] if ax.has_data() else 0.0
    xs = [x for x, _ in flagged]
    ys = [bottom if y is None else y for _, y in flagged]
    ax.scatter(xs, ys, marker="x", s=120, color="red", zorder=5, label="failed runs (left out)")
