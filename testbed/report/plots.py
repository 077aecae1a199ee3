"""The report's plots, as PNG bytes.

matplotlib's object-oriented API on the Agg canvas: no pyplot, so no global
figure registry, no GUI backend and nothing to close. Each function returns
None when the run has no data for its plot.
"""

from __future__ import annotations

import io
import re

from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from testbed.report.metrics import (
    FAILED_ATTEMPTS,
    MemoryUsage,
    StepSeries,
    utilisation_series,
)
from testbed.report.rundir import Eviction, RunData, TaskAttempt

CLASS_COLOURS = {"reserved": "#1f77b4", "transient": "#ff7f0e"}
TIME_LABEL = "wall time since run start (s)"
_DPI = 110


def _png(figure: Figure) -> bytes:
    FigureCanvasAgg(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=_DPI, bbox_inches="tight")
    return buffer.getvalue()


def _class_colour(node_class: str) -> str:
    return CLASS_COLOURS.get(node_class, "#7f7f7f")


def cdf(series: dict[str, list[float]], xlabel: str, title: str) -> bytes | None:
    """Empirical CDFs, one line per label (e.g. all jobs and each workload)."""
    series = {label: sorted(values) for label, values in series.items() if values}
    if not series:
        return None
    figure = Figure(figsize=(7, 4))
    axes = figure.add_subplot()
    for label, values in series.items():
        fractions = [(i + 1) / len(values) for i in range(len(values))]
        axes.step(
            [values[0], *values],
            [0.0, *fractions],
            where="post",
            label=f"{label} (n={len(values)})",
            linewidth=2 if label == "all" else 1.3,
        )
    axes.set(xlabel=xlabel, ylabel="fraction of jobs", title=title, ylim=(0, 1.02))
    axes.set_xlim(0, max(v[-1] for v in series.values()) * 1.05 or 1.0)
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", fontsize="small")
    return _png(figure)


def nodes_timeline(alive: dict[str, StepSeries], evictions: list[Eviction]) -> bytes | None:
    """Nodes alive per class over time; evictions as red crosses on their class's line."""
    if not alive:
        return None
    figure = Figure(figsize=(9, 3.6))
    axes = figure.add_subplot()
    for node_class, series in alive.items():
        axes.step(
            series.times,
            series.values,
            where="post",
            label=node_class,
            color=_class_colour(node_class),
            linewidth=1.8,
        )
    for eviction in evictions:
        series = alive.get(eviction.node_class)
        level = _level_before(series, eviction.t_s) if series else 0.0
        axes.plot([eviction.t_s], [level], marker="X", color="#d62728", markersize=9, linestyle="none")
        axes.axvline(eviction.t_s, color="#d62728", alpha=0.25, linewidth=1)
    handles, _ = axes.get_legend_handles_labels()
    if evictions:
        handles.append(_eviction_handle(len(evictions)))
    axes.set(xlabel=TIME_LABEL, ylabel="nodes alive", title="Nodes alive per class")
    axes.set_ylim(bottom=0)
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.grid(alpha=0.3)
    axes.legend(handles=handles, loc="lower left", fontsize="small")
    return _png(figure)


def _level_before(series: StepSeries, t: float) -> float:
    """The count just before ``t``: an evicted node is still counted at its eviction mark."""
    level = 0.0
    for start, value in zip(series.times, series.values, strict=True):
        if start >= t:
            break
        level = value
    return level


def _eviction_handle(count: int) -> Line2D:
    return Line2D(
        [],
        [],
        marker="X",
        color="#d62728",
        linestyle="none",
        markersize=9,
        label=f"eviction ({count})",
    )


def gantt(run: RunData) -> bytes | None:
    """Task attempts per node, coloured by job; failed/killed/lost attempts hatched."""
    if not run.tasks:
        return None
    rows = _node_rows(run)
    jobs = list(dict.fromkeys(t.job_id for t in sorted(run.tasks, key=lambda t: t.start_s)))
    palette = _job_palette(jobs)
    figure = Figure(figsize=(10, min(2.0 + 0.42 * len(rows), 24)))
    axes = figure.add_subplot()
    axes.add_collection(_node_lifetimes(run, rows))
    failed = [t for t in run.tasks if t.status in FAILED_ATTEMPTS]
    succeeded = [t for t in run.tasks if t.status not in FAILED_ATTEMPTS]
    axes.add_collection(_attempt_bars(succeeded, rows, palette, run.end_s, failed=False))
    axes.add_collection(_attempt_bars(failed, rows, palette, run.end_s, failed=True))
    evicted = [e for e in run.evictions if e.node_id in rows]
    axes.plot(
        [e.t_s for e in evicted],
        [rows[e.node_id] for e in evicted],
        marker="X",
        color="#d62728",
        markersize=11,
        linestyle="none",
        zorder=5,
    )
    axes.autoscale_view()
    axes.set_yticks(list(rows.values()), _row_labels(run, rows))
    axes.set_ylim(len(rows) - 0.3, -0.7)
    axes.set(xlabel=TIME_LABEL, title="Task attempts per node")
    axes.grid(axis="x", alpha=0.3)
    axes.legend(
        handles=_gantt_legend(jobs, palette, bool(evicted)),
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize="small",
    )
    return _png(figure)


def _bar(start: float, stop: float, row: int, half_height: float) -> list[tuple[float, float]]:
    bottom, top = row - half_height, row + half_height
    return [(start, bottom), (start, top), (stop, top), (stop, bottom)]


def _node_rows(run: RunData) -> dict[str, int]:
    """Nodes top to bottom: reserved first, then by launch; nodes seen only in tasks last."""
    order = [
        n.node_id
        for n in sorted(
            run.nodes, key=lambda n: (n.node_class != "reserved", n.launched_s, _natural(n.node_id))
        )
    ]
    order += sorted({t.node_id for t in run.tasks} - set(order), key=_natural)
    return {node: row for row, node in enumerate(order)}


def _natural(name: str) -> list:
    """Sort key that puts t2 before t10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


def _row_labels(run: RunData, rows: dict[str, int]) -> list[str]:
    classes = {t.node_id: t.node_class for t in run.tasks}
    classes.update({n.node_id: n.node_class for n in run.nodes})
    return [f"{node} ({classes.get(node, '?')[:1]})" for node in rows]


def _job_palette(jobs: list[str]) -> dict[str, tuple]:
    tab20 = colormaps["tab20"].colors
    colours = tab20[::2] + tab20[1::2]  # ten distinct hues first, then their light variants
    return {job: colours[i % len(colours)] for i, job in enumerate(jobs)}


def _node_lifetimes(run: RunData, rows: dict[str, int]) -> PolyCollection:
    """One pale band per node from launch to end: a bar outside it would be a bookkeeping bug."""
    end = run.end_s
    bands = [
        _bar(n.launched_s, n.ended_s if n.ended_s is not None else end, rows[n.node_id], 0.45)
        for n in run.nodes
    ]
    return PolyCollection(
        bands,
        facecolors="#eeeeee",
        linewidths=0.6,
        zorder=1,
        edgecolors=[_class_colour(n.node_class) for n in run.nodes],
    )


def _attempt_bars(
    attempts: list[TaskAttempt],
    rows: dict[str, int],
    palette: dict[str, tuple],
    end: float,
    failed: bool,
) -> PolyCollection:
    """All attempts in one collection: thousands of separate patches would take minutes."""
    bars = [
        _bar(
            a.start_s,
            max(a.end_s if a.end_s is not None else end, a.start_s + 1e-3),
            rows[a.node_id],
            0.32,
        )
        for a in attempts
    ]
    return PolyCollection(
        bars,
        facecolors=[palette[a.job_id] for a in attempts],
        zorder=3,
        edgecolors="#d62728" if failed else "#333333",
        linewidths=1.4 if failed else 0.4,
        hatch="////" if failed else None,
    )


def _gantt_legend(jobs: list[str], palette: dict[str, tuple], evictions: bool) -> list:
    shown = jobs[:20]
    handles: list = [Patch(facecolor=palette[job], edgecolor="#333333", label=job) for job in shown]
    if len(jobs) > len(shown):
        handles.append(
            Patch(
                facecolor="white",
                edgecolor="white",
                label=f"... {len(jobs) - len(shown)} more jobs",
            )
        )
    handles.append(
        Patch(facecolor="white", edgecolor="#d62728", hatch="////", label="failed / killed / lost")
    )
    if evictions:
        handles.append(
            Line2D(
                [],
                [],
                marker="X",
                color="#d62728",
                linestyle="none",
                markersize=9,
                label="eviction",
            )
        )
    return handles


def memory(usage: MemoryUsage) -> bytes | None:
    """Allocated task memory against node memory, and their ratio."""
    if usage.mean_utilisation is None:
        return None
    figure = Figure(figsize=(9, 5))
    top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=[3, 2])
    top.step(
        usage.capacity_mb.times,
        usage.capacity_mb.values,
        where="post",
        label="node memory alive",
        color="#7f7f7f",
    )
    top.step(
        usage.allocated_mb.times,
        usage.allocated_mb.values,
        where="post",
        label="allocated to tasks",
        color="#2ca02c",
    )
    top.set(ylabel="MB", title="Memory allocated to tasks")
    top.set_ylim(bottom=0)
    top.legend(loc="upper right", fontsize="small")
    top.grid(alpha=0.3)
    ratio = utilisation_series(usage)
    bottom.step(ratio.times, [100 * v for v in ratio.values], where="post", color="#2ca02c")
    bottom.axhline(
        100 * usage.mean_utilisation,
        color="#555555",
        linestyle="--",
        linewidth=1,
        label=f"mean {100 * usage.mean_utilisation:.1f}%",
    )
    bottom.set(xlabel=TIME_LABEL, ylabel="utilisation (%)", ylim=(0, 105))
    bottom.legend(loc="upper right", fontsize="small")
    bottom.grid(alpha=0.3)
    return _png(figure)
