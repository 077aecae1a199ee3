"""The report's plots, as PNG and SVG bytes.

matplotlib's object-oriented API on the Agg canvas: no pyplot, so no global
figure registry, no GUI backend and nothing to close. Each function returns
None when the run has no data for its plot.
"""

from __future__ import annotations

import io
from collections import Counter, defaultdict
from dataclasses import dataclass

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from testbed.app.report import gantt as gantt_chart
from testbed.app.report.gantt import EVICTION_RED, TIME_LABEL, class_colour, eviction_handle
from testbed.app.report.metrics import MemoryUsage, StepSeries, utilisation_series
from testbed.app.report.records import Eviction
from testbed.app.report.rundir import RunData

_DPI = 110


@dataclass(frozen=True)
class Plot:
    png: bytes
    svg: bytes


def render(figure: Figure) -> Plot:
    """The figure as PNG (embedded in report.html) and SVG (a file beside it)."""
    FigureCanvasAgg(figure)
    files = []
    for kind, options in (("png", {"dpi": _DPI}), ("svg", {"metadata": {"Date": None}})):
        buffer = io.BytesIO()
        figure.savefig(buffer, format=kind, bbox_inches="tight", **options)
        files.append(buffer.getvalue())
    return Plot(*files)


def gantt(run: RunData) -> Plot | None:
    figure = gantt_chart.gantt(run)
    return None if figure is None else render(figure)


def cdf(series: dict[str, list[float]], xlabel: str, title: str) -> Plot | None:
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
    return render(figure)


def nodes_timeline(alive: dict[str, StepSeries], evictions: list[Eviction]) -> Plot | None:
    """Nodes alive per class over time; evictions as red crosses on their class's line, one
    per node even when several go at once (``eviction_marks``)."""
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
            color=class_colour(node_class),
            linewidth=1.8,
        )
    marks = eviction_marks(alive, evictions)
    axes.plot(
        [t for t, _ in marks], [y for _, y in marks], marker="X", color=EVICTION_RED, markersize=9, ls="none"
    )
    for t in sorted({t for t, _ in marks}):
        axes.axvline(t, color=EVICTION_RED, alpha=0.25, linewidth=1)
    at_once = Counter((e.node_class, e.t_s) for e in evictions)
    for (_, t), count in at_once.items():
        if count > 1:  # the crosses of many nodes touch: say how many
            top = max(y for mark_t, y in marks if mark_t == t)
            axes.annotate(
                f"{count} at once", (t, top), xytext=(6, 4), textcoords="offset points", color=EVICTION_RED
            )
    handles, _ = axes.get_legend_handles_labels()
    if evictions:
        handles.append(eviction_handle(f"eviction ({len(evictions)})"))
    axes.set(xlabel=TIME_LABEL, ylabel="nodes alive", title="Nodes alive per class")
    axes.set_ylim(bottom=0)
    axes.yaxis.get_major_locator().set_params(integer=True)
    axes.grid(alpha=0.3)
    axes.legend(handles=handles, loc="lower left", fontsize="small")
    return render(figure)


def eviction_marks(alive: dict[str, StepSeries], evictions: list[Eviction]) -> list[tuple[float, float]]:
    """(time, count) of each eviction's cross: the class's count just before the node went,
    and for k nodes of a class evicted at one instant the counts n, n-1, ..., n-k+1, so
    every node has its own cross (as if they had gone one after the other)."""
    seen: dict[tuple[str, float], int] = defaultdict(int)
    marks = []
    for eviction in evictions:
        series = alive.get(eviction.node_class)
        level = _level_before(series, eviction.t_s) if series else 0.0
        key = (eviction.node_class, eviction.t_s)
        marks.append((eviction.t_s, level - seen[key]))
        seen[key] += 1
    return marks


def _level_before(series: StepSeries, t: float) -> float:
    """The count just before ``t``: an evicted node is still counted at its eviction mark."""
    level = 0.0
    for start, value in zip(series.times, series.values, strict=True):
        if start >= t:
            break
        level = value
    return level


def memory(usage: MemoryUsage) -> Plot | None:
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
    return render(figure)
