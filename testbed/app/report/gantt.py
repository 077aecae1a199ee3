"""The report's Gantt chart of task attempts: one lane per slot, or node groups for large runs.

Up to ``MAX_LANES`` lanes, every node gets one lane per slot (its class's
``slots``, more if the record shows more attempts at once) and each attempt is
drawn in the lowest lane free at its start, so concurrent attempts on a node
never hide each other. Beyond that (hundreds of nodes) nodes are aggregated:
consecutive nodes of a class form a group row showing how many of the group's
slots were busy over time (mean per time bin), with failed attempts in red,
evictions counted and slowed nodes and their episodes marked.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.collections import PolyCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from testbed.app.report.metrics import FAILED_ATTEMPTS
from testbed.app.report.records import Node, TaskAttempt
from testbed.app.report.rundir import RunData
from testbed.chaosmodels.slowdown import SlowSpan, episode_spans, own_factors

CLASS_COLOURS = {"reserved": "#1f77b4", "transient": "#ff7f0e"}
TIME_LABEL = "emulated time since run start (s)"
EVICTION_RED = "#d62728"
SLOW_BROWN = "#8c564b"
SLOW_FILL = (1.0, 1.0, 1.0, 0.45)
MAX_SLOW_LABELS = 60
"""Episode spans labelled with their factor, at most (every span is drawn)."""
MAX_LANES = 120
"""Above this many slot lanes the chart aggregates nodes into groups."""
MAX_GROUPS = 40
BINS = 300
"""Time bins of the aggregated chart: each shows the mean busy slots over its width."""
NODE_GAP = 0.6


def class_colour(node_class: str) -> str:
    return CLASS_COLOURS.get(node_class, "#7f7f7f")


def natural(name: str) -> list:
    """Sort key that puts t2 before t10."""
    return [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in re.split(r"(\d+)", name)]


def node_order(run: RunData) -> list[str]:
    """Nodes top to bottom: reserved-kind classes' first, then by launch; nodes seen only in
    tasks last."""
    kinds = {name: kind for name, (kind, _) in run.node_classes.items()}

    def key(n: Node) -> tuple[bool, float, list]:
        return kinds.get(n.node_class, n.node_class) != "reserved", n.launched_s, natural(n.node_id)

    order = [n.node_id for n in sorted(run.nodes, key=key)]
    return order + sorted({t.node_id for t in run.tasks} - set(order), key=natural)


def node_classes(run: RunData) -> dict[str, str]:
    classes = {t.node_id: t.node_class for t in run.tasks}
    classes.update({n.node_id: n.node_class for n in run.nodes})
    return classes


def slot_lanes(attempts: list[TaskAttempt], end: float) -> list[int]:
    """The lane of each attempt on one node: the lowest lane free at its start (interval
    partitioning, so the lanes used equal the most attempts running at once)."""
    order = sorted(range(len(attempts)), key=lambda i: (attempts[i].start_s, _stop(attempts[i], end)))
    lane_free_at: list[float] = []
    lanes = [0] * len(attempts)
    for i in order:
        start = attempts[i].start_s
        lane = next((k for k, free in enumerate(lane_free_at) if free <= start), len(lane_free_at))
        if lane == len(lane_free_at):
            lane_free_at.append(0.0)
        lane_free_at[lane] = _stop(attempts[i], end)
        lanes[i] = lane
    return lanes


def _stop(attempt: TaskAttempt, end: float) -> float:
    return max(attempt.end_s if attempt.end_s is not None else end, attempt.start_s + 1e-3)


@dataclass
class LaneLayout:
    """Where each node's lanes are: ``base[node]`` is the y of lane 0, ``lanes[node]`` their count."""

    base: dict[str, float]
    lanes: dict[str, int]
    lane_of: dict[int, int]
    """Lane of each attempt, by its index in ``run.tasks``."""

    @property
    def total_lanes(self) -> int:
        return sum(self.lanes.values())

    def y(self, node: str, lane: int) -> float:
        return self.base[node] + lane


def lane_layout(run: RunData) -> LaneLayout:
    by_node: dict[str, list[int]] = {}
    for i, attempt in enumerate(run.tasks):
        by_node.setdefault(attempt.node_id, []).append(i)
    classes = node_classes(run)
    base: dict[str, float] = {}
    lanes: dict[str, int] = {}
    lane_of: dict[int, int] = {}
    y = 0.0
    for node in node_order(run):
        indices = by_node.get(node, [])
        for i, lane in zip(indices, slot_lanes([run.tasks[i] for i in indices], run.end_s), strict=True):
            lane_of[i] = lane
        spec = run.class_spec(classes.get(node, ""))
        lanes[node] = max([spec.slots if spec else 1, *(lane_of[i] + 1 for i in indices)])
        base[node] = y
        y += lanes[node] + NODE_GAP
    return LaneLayout(base, lanes, lane_of)


def gantt(run: RunData) -> Figure | None:
    """Task attempts per node and slot, coloured by job; failed/killed/lost attempts hatched.
    Runs with more than ``MAX_LANES`` lanes get the aggregated chart instead."""
    if not run.tasks:
        return None
    layout = lane_layout(run)
    if layout.total_lanes > MAX_LANES:
        return aggregated_gantt(run, layout.lanes)
    jobs = list(dict.fromkeys(t.job_id for t in sorted(run.tasks, key=lambda t: t.start_s)))
    palette = _job_palette(jobs)
    height = layout.total_lanes + NODE_GAP * len(layout.lanes)
    figure = Figure(figsize=(10, min(2.0 + 0.22 * height, 26)))
    axes = figure.add_subplot()
    axes.add_collection(_node_bands(run, layout))
    spans = _slow_spans(run, layout, axes)
    for failed in (False, True):
        chosen = [i for i, t in enumerate(run.tasks) if (t.status in FAILED_ATTEMPTS) == failed]
        axes.add_collection(_attempt_bars(run, chosen, layout, palette, failed))
    evicted = [e for e in run.evictions if e.node_id in layout.base]
    axes.plot(
        [e.t_s for e in evicted],
        [layout.y(e.node_id, 0) + (layout.lanes[e.node_id] - 1) / 2 for e in evicted],
        marker="X", color=EVICTION_RED, markersize=11, linestyle="none", zorder=5,
    )  # fmt: skip
    classes = node_classes(run)
    own = own_factors(run.events)
    axes.autoscale_view()
    axes.set_yticks(
        [layout.base[n] + (layout.lanes[n] - 1) / 2 for n in layout.base],
        [
            f"{n} ({classes.get(n, '?')[:1]}, {layout.lanes[n]} slots{_slowed(own.get(n))})"
            for n in layout.base
        ],
    )
    axes.set_ylim(height - NODE_GAP + 0.1, -0.6)
    axes.set(xlabel=TIME_LABEL, title="Task attempts per node, one lane per slot")
    axes.grid(axis="x", alpha=0.3)
    axes.legend(
        handles=_legend(jobs, palette, bool(evicted), bool(spans)),
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize="small",
    )
    return figure


def _bar(start: float, stop: float, y: float, half_height: float) -> list[tuple[float, float]]:
    bottom, top = y - half_height, y + half_height
    return [(start, bottom), (start, top), (stop, top), (stop, bottom)]


def _job_palette(jobs: list[str]) -> dict[str, tuple]:
    tab20 = colormaps["tab20"].colors
    colours = tab20[::2] + tab20[1::2]  # ten distinct hues first, then their light variants
    return {job: colours[i % len(colours)] for i, job in enumerate(jobs)}


def _node_bands(run: RunData, layout: LaneLayout) -> PolyCollection:
    """One pale band per node (all its lanes) from launch to end: a bar outside it would be
    a bookkeeping bug."""
    nodes = [n for n in run.nodes if n.node_id in layout.base]
    bands = []
    for n in nodes:
        top, bottom = layout.base[n.node_id] - 0.5, layout.base[n.node_id] + layout.lanes[n.node_id] - 0.5
        stop = n.ended_s if n.ended_s is not None else run.end_s
        bands.append([(n.launched_s, top), (n.launched_s, bottom), (stop, bottom), (stop, top)])
    return PolyCollection(
        bands,
        facecolors="#eeeeee",
        linewidths=0.6,
        zorder=1,
        edgecolors=[class_colour(n.node_class) for n in nodes],
    )


def _attempt_bars(
    run: RunData, chosen: list[int], layout: LaneLayout, palette: dict[str, tuple], failed: bool
) -> PolyCollection:
    """All attempts in one collection: thousands of separate patches would take minutes."""
    attempts = [run.tasks[i] for i in chosen]
    bars = [
        _bar(a.start_s, _stop(a, run.end_s), layout.y(a.node_id, layout.lane_of[i]), 0.38)
        for i, a in zip(chosen, attempts, strict=True)
    ]
    return PolyCollection(
        bars,
        facecolors=[palette[a.job_id] for a in attempts],
        zorder=3,
        edgecolors=EVICTION_RED if failed else "#333333",
        linewidths=1.4 if failed else 0.4,
        hatch="////" if failed else None,
    )


def _slowed(factor: float | None) -> str:
    """A node's own ``chaos.slowdown`` factor in its lane's label (``, 3x slower``)."""
    return "" if factor is None else f", {factor:g}x slower"


def _slow_spans(run: RunData, layout: LaneLayout, axes: Any) -> list[SlowSpan]:
    """Each slowdown episode's span on its node's lanes, dotted, labelled with its factor."""
    spans = spans_on(run, layout.base)
    boxes = [
        _bar(s.start_s, s.stop_s, layout.y(s.node_id, 0) + (layout.lanes[s.node_id] - 1) / 2,
             layout.lanes[s.node_id] / 2)
        for s in spans
    ]  # fmt: skip
    _draw_spans(axes, spans, boxes, [layout.base[s.node_id] - 0.5 for s in spans])
    return spans


def spans_on(run: RunData, nodes: Iterable[str]) -> list[SlowSpan]:
    """The slowdown episodes' spans on ``nodes`` (``episode_spans``), each to its node's end."""
    drawn = set(nodes)
    ends = {n.node_id: n.ended_s if n.ended_s is not None else run.end_s for n in run.nodes}
    spans = episode_spans(run.events, {**dict.fromkeys(drawn, run.end_s), **ends})
    return [s for s in spans if s.node_id in drawn]


def _draw_spans(
    axes: Any, spans: list[SlowSpan], boxes: list, label_ys: list[float], align: str = "bottom"
) -> None:
    """The spans' dotted boxes over the attempts (which they dim: those ran slowed), the first
    ``MAX_SLOW_LABELS`` labelled with their factor at ``label_ys`` (``align``: the y's side)."""
    axes.add_collection(
        PolyCollection(
            boxes, facecolors=SLOW_FILL, edgecolors=SLOW_BROWN, hatch="..", linewidths=0.8, zorder=4
        )
    )
    for span, y in zip(spans[:MAX_SLOW_LABELS], label_ys, strict=False):
        axes.text(
            span.start_s, y, f"{span.factor:g}x slower",
            color=SLOW_BROWN, fontsize="x-small", va=align, zorder=6,
        )  # fmt: skip


def _legend(jobs: list[str], palette: dict[str, tuple], evictions: bool, slowed: bool = False) -> list:
    shown = jobs[:20]
    handles: list = [Patch(facecolor=palette[job], edgecolor="#333333", label=job) for job in shown]
    if len(jobs) > len(shown):
        handles.append(
            Patch(facecolor="white", edgecolor="white", label=f"... {len(jobs) - len(shown)} more jobs")
        )
    handles.append(
        Patch(facecolor="white", edgecolor=EVICTION_RED, hatch="////", label="failed / killed / lost")
    )
    if evictions:
        handles.append(eviction_handle("eviction"))
    if slowed:
        handles.append(
            Patch(facecolor=SLOW_FILL, edgecolor=SLOW_BROWN, hatch="..", label="slowdown episode")
        )
    return handles


def eviction_handle(label: str) -> Line2D:
    return Line2D([], [], marker="X", color=EVICTION_RED, linestyle="none", markersize=9, label=label)


# --------------------------------------------------------------------- aggregated


@dataclass(frozen=True)
class NodeGroup:
    label: str
    node_class: str
    nodes: tuple[str, ...]
    slots: int


def node_groups(run: RunData, lanes: dict[str, int], max_groups: int = MAX_GROUPS) -> list[NodeGroup]:
    """Consecutive nodes of one class (in ``node_order``), at most about ``max_groups`` rows;
    a group's slots are its nodes' lanes (``lane_layout``)."""
    classes = node_classes(run)
    order = node_order(run)
    own = own_factors(run.events)
    size = max(1, math.ceil(len(order) / max_groups))
    groups: list[NodeGroup] = []
    for node_class in dict.fromkeys(classes.get(n, "?") for n in order):
        members = [n for n in order if classes.get(n, "?") == node_class]
        for start in range(0, len(members), size):
            chunk = tuple(members[start : start + size])
            label = (
                f"{chunk[0]} .. {chunk[-1]} ({len(chunk)} {node_class[:1]})" if len(chunk) > 1 else chunk[0]
            )
            slots = sum(lanes[n] for n in chunk)
            groups.append(NodeGroup(label + _slowed_in(chunk, own), node_class, chunk, slots))
    return groups


def _slowed_in(nodes: tuple[str, ...], own: dict[str, float]) -> str:
    """A group's own slowdowns in its row's label: ``, 3 slowed 1.5x-3x`` (``_slowed`` for one node)."""
    factors = [own[n] for n in nodes if n in own]
    if len(nodes) == 1 or not factors:
        return _slowed(factors[0] if factors else None)
    low, high = min(factors), max(factors)
    return f", {len(factors)} slowed {low:g}x" + ("" if low == high else f"-{high:g}x")


def busy_slots(attempts: list[TaskAttempt], edges: np.ndarray, end: float) -> np.ndarray:
    """Mean number of ``attempts`` running in each bin between consecutive ``edges`` (each
    attempt's overlap with the bin, summed, over the bin's width)."""
    if not attempts:
        return np.zeros(len(edges) - 1)
    starts = np.array([a.start_s for a in attempts])
    stops = np.array([_stop(a, end) for a in attempts])
    covered = np.clip(edges[:, None] - starts[None, :], 0.0, (stops - starts)[None, :]).sum(axis=1)
    return np.diff(covered) / np.diff(edges)


def aggregated_gantt(run: RunData, lanes: dict[str, int]) -> Figure:
    groups = node_groups(run, lanes)
    group_of = {node: g for g, group in enumerate(groups) for node in group.nodes}
    figure = Figure(figsize=(10, min(2.5 + 0.3 * len(groups), 26)))
    axes = figure.add_subplot()
    edges = np.linspace(0.0, max(run.end_s, 1e-3), BINS + 1)
    members: list[list[TaskAttempt]] = [[] for _ in groups]
    for attempt in run.tasks:
        members[group_of[attempt.node_id]].append(attempt)
    for g, group in enumerate(groups):
        for failed, colour in ((False, class_colour(group.node_class)), (True, EVICTION_RED)):
            chosen = [t for t in members[g] if (t.status in FAILED_ATTEMPTS) == failed]
            if chosen:
                busy = busy_slots(chosen, edges, run.end_s)
                tops = g + 0.45 - 0.9 * np.append(busy, busy[-1]) / group.slots
                axes.fill_between(
                    edges, g + 0.45, tops, step="post", color=colour, alpha=0.8 if failed else 0.6
                )
    spans = spans_on(run, group_of)  # a strip along the top of its node's row, labelled under it
    boxes = [_bar(s.start_s, s.stop_s, group_of[s.node_id] - 0.36, 0.06) for s in spans]
    _draw_spans(axes, spans, boxes, [group_of[s.node_id] - 0.28 for s in spans], "top")
    evictions = Counter((group_of[e.node_id], e.t_s) for e in run.evictions if e.node_id in group_of)
    for (g, t), count in evictions.items():
        axes.plot([t], [g], marker="X", color=EVICTION_RED, markersize=8, linestyle="none", zorder=5)
        if count > 1:
            axes.annotate(f"{count}", (t, g), xytext=(5, -2), textcoords="offset points", color=EVICTION_RED)
    axes.set_yticks(range(len(groups)), [group.label for group in groups], fontsize="small")
    axes.set_ylim(len(groups) - 0.5, -0.5)
    axes.set_xlim(0, max(run.end_s, 1e-3))
    nodes = sum(len(group.nodes) for group in groups)
    axes.set(
        xlabel=TIME_LABEL,
        title=f"Busy slots per group of nodes, mean per bin ({nodes} nodes in {len(groups)} groups)",
    )
    axes.grid(axis="x", alpha=0.3)
    handles = [
        Patch(facecolor=class_colour(c), alpha=0.6, label=f"{c}: busy slots / group's slots")
        for c in dict.fromkeys(group.node_class for group in groups)
    ]
    handles.append(Patch(facecolor=EVICTION_RED, label="failed / killed / lost attempts"))
    if evictions:
        handles.append(eviction_handle("evictions (count when several at once)"))
    if spans:
        handles.append(
            Patch(facecolor=SLOW_FILL, edgecolor=SLOW_BROWN, hatch="..", label="a node's slowdown episode")
        )
    axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize="small")
    return figure
