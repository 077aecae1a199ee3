"""The planned eviction schedule of a scenario, computed without running anything.

``plan_evictions`` replays the scenario's chaos section as a discrete-event
simulation: the initial nodes draw their lifetimes, storms are expanded into
concrete events, and evicted nodes are replaced after ``provisioning_delay``
with fresh ordinals. The rules (docs/chaos.md, "Semantics") are the ones the
runtime controller follows, so the same seed gives the same schedule in a plan
and in a run. Storms that choose ``busiest`` or ``most-data`` depend on the
run's state; the plan guesses their victims and marks what follows provisional.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from master.chaos.lifetimes import (
    NODE_CLASSES,
    STORM_VICTIM_STREAM,
    STORM_WINDOW_STREAM,
    LifetimeModel,
    effective_notice,
    format_seconds,
    lifetime_for,
    parse_lifetime,
    rng_for,
)
from master.chaos.select import select_victims
from master.policies.base import NodeClass, NodeView
from testbed.limits import MAX_PLANNED_EVICTIONS
from testbed.scenario import Scenario
from testbed.scenario_chaos import EvictSpec, StormSpec

RUNTIME_DEPENDENT = ("busiest", "most-data")

Reason = Literal["lifetime", "storm"]


@dataclass(frozen=True, slots=True)
class StormEvent:
    """One concrete firing of a scripted storm."""

    at: float
    storm: int
    """Index of the storm in ``chaos.storms``."""
    event: int
    """Index of this firing within its storm."""
    evict: EvictSpec


@dataclass(frozen=True, slots=True)
class PlannedEviction:
    trace_s: float
    """When the node is killed (trace seconds)."""
    wall_s: float
    warn_trace_s: float
    """When its warning goes out (equal to ``trace_s`` without a notice)."""
    warn_wall_s: float
    node_id: str
    node_class: NodeClass
    ordinal: int
    reason: Reason
    launched_s: float
    lifetime_s: float | None
    storm: int | None = None
    replacement_at_s: float | None = None
    """When its replacement is launched, if the class is replaced."""
    provisional: bool = False
    """Depends on run-time state (a busiest/most-data storm came first)."""


def storm_events(storms: list[StormSpec], seed: int) -> list[StormEvent]:
    """Every firing of every storm, by time (ties: storm order, then firing order).

    ``at`` fires once, or ``times`` times ``every`` seconds apart. A window fires
    as a Poisson process of ``rate`` on [from, to): the number of firings is
    Poisson(rate * (to - from)) and their times uniform in the window, drawn from
    a generator keyed by (seed, storm index).
    """
    events: list[StormEvent] = []
    for index, storm in enumerate(storms):
        events.extend(
            StormEvent(at, index, number, storm.evict)
            for number, at in enumerate(_firing_times(storm, seed, index))
        )
    return sorted(events, key=lambda event: (event.at, event.storm, event.event))


def _firing_times(storm: StormSpec, seed: int, index: int) -> list[float]:
    if storm.at is not None:
        every = storm.every or 0.0
        return [storm.at + k * every for k in range(storm.times)]
    start, end, rate = storm.start, storm.to, storm.rate
    assert start is not None and end is not None and rate is not None  # the schema's rule
    expected = rate * (end - start)  # at most MAX_STORM_FIRINGS: the schema's rule
    rng = rng_for(seed, STORM_WINDOW_STREAM, index)
    return sorted(float(t) for t in rng.uniform(start, end, rng.poisson(expected)))


def storm_victim_rng(seed: int, event: StormEvent) -> np.random.Generator:
    """The generator that picks ``event``'s victims (the runtime must use this one too)."""
    return rng_for(seed, STORM_VICTIM_STREAM, event.storm, event.event)


def plan_evictions(
    scenario: Scenario, horizon_s: float, base_dir: str | Path | None = None
) -> list[PlannedEviction]:
    """Every eviction planned up to ``horizon_s`` trace seconds, by kill time.

    ``base_dir`` anchors relative ``empirical`` lifetime files (the scenario's folder).
    """
    return _Simulation(scenario, horizon_s, base_dir).run()


@dataclass
class _Node:
    node_id: str
    node_class: NodeClass
    ordinal: int
    launched: float
    lifetime: float | None
    fate: Reason | None = None
    """Set when the node is warned: it is doomed and no storm may pick it."""
    storm: int | None = None
    warned_at: float = 0.0
    provisional: bool = False


@dataclass(frozen=True, slots=True)
class _Launch:
    node_class: NodeClass


@dataclass(frozen=True, slots=True)
class _Warn:
    node_id: str


@dataclass(frozen=True, slots=True)
class _Kill:
    node_id: str


@dataclass(frozen=True, slots=True)
class _Storm:
    event: StormEvent


_Action = _Launch | _Warn | _Kill | _Storm
# Order of simultaneous actions: warnings, then kills, then launches, then storms.
_PRIORITY = {_Warn: 0, _Kill: 1, _Launch: 2, _Storm: 3}


@dataclass
class _ClassState:
    model: LifetimeModel
    notice: float
    replace: bool
    delay: float
    next_ordinal: int = 0
    uncertain_since: float = math.inf


@dataclass
class _Simulation:
    scenario: Scenario
    horizon: float
    base_dir: str | Path | None
    classes: dict[NodeClass, _ClassState] = field(default_factory=dict)
    alive: dict[str, _Node] = field(default_factory=dict)
    queue: list[tuple[float, int, int, _Action]] = field(default_factory=list)
    plan: list[PlannedEviction] = field(default_factory=list)
    order: Iterator[int] = field(default_factory=itertools.count)

    def run(self) -> list[PlannedEviction]:
        for node_class in NODE_CLASSES:
            self.classes[node_class] = _class_state(self.scenario, node_class, self.base_dir)
            for _ in range(getattr(self.scenario.cluster, node_class).count):
                self._push(0.0, _Launch(node_class))
        for event in storm_events(self.scenario.chaos.storms, self.scenario.seed):
            self._push(event.at, _Storm(event))
        while self.queue and self.queue[0][0] <= self.horizon:
            now, _, _, action = heapq.heappop(self.queue)
            self._handle(now, action)
            if len(self.plan) > MAX_PLANNED_EVICTIONS:
                raise ValueError(
                    f"more than {MAX_PLANNED_EVICTIONS:,} evictions are planned before "
                    f"{format_seconds(now)} (a testbed limit); lengthen the lifetimes or shorten the horizon"
                )
        return sorted(self.plan, key=lambda e: (e.trace_s, e.node_class, e.ordinal))

    def _push(self, at: float, action: _Action) -> None:
        heapq.heappush(self.queue, (at, _PRIORITY[type(action)], next(self.order), action))

    def _handle(self, now: float, action: _Action) -> None:
        match action:
            case _Launch(node_class):
                self._launch(now, node_class)
            case _Warn(node_id):
                self._warn(now, self.alive.get(node_id))
            case _Kill(node_id):
                self._kill(now, self.alive.get(node_id))
            case _Storm(event):
                self._storm(now, event)

    def _launch(self, now: float, node_class: NodeClass) -> None:
        state = self.classes[node_class]
        ordinal = state.next_ordinal
        state.next_ordinal += 1
        lifetime = lifetime_for(state.model, self.scenario.seed, node_class, ordinal)
        node_id = f"{node_class}-{ordinal}"
        provisional = now > state.uncertain_since
        self.alive[node_id] = _Node(node_id, node_class, ordinal, now, lifetime, provisional=provisional)
        if lifetime is not None:
            self._push(max(now, now + lifetime - state.notice), _Warn(node_id))
            self._push(now + lifetime, _Kill(node_id))

    def _warn(self, now: float, node: _Node | None) -> None:
        if node is not None and node.fate is None:
            node.fate, node.warned_at = "lifetime", now

    def _kill(self, now: float, node: _Node | None) -> None:
        """Kill a warned node; a storm victim's later lifetime kill finds it gone."""
        if node is None or node.fate is None:
            return
        state = self.classes[node.node_class]
        del self.alive[node.node_id]
        replacement = now + state.delay if state.replace else None
        if replacement is not None:
            self._push(replacement, _Launch(node.node_class))
        self.plan.append(
            PlannedEviction(
                trace_s=now,
                wall_s=self.scenario.trace(now),
                warn_trace_s=node.warned_at,
                warn_wall_s=self.scenario.trace(node.warned_at),
                node_id=node.node_id,
                node_class=node.node_class,
                ordinal=node.ordinal,
                reason=node.fate,
                launched_s=node.launched,
                lifetime_s=node.lifetime,
                storm=node.storm,
                replacement_at_s=replacement,
                provisional=node.provisional,
            )
        )

    def _storm(self, now: float, event: StormEvent) -> None:
        candidates = [node for node in self.alive.values() if node.fate is None]
        views = [NodeView(n.node_id, n.node_class, 1, 1, launched=n.launched) for n in candidates]
        victims = select_victims(views, event.evict, storm_victim_rng(self.scenario.seed, event))
        if event.evict.select in RUNTIME_DEPENDENT:
            self._mark_uncertain(now, [n for n in candidates if _matches(event.evict, n)])
        for node_id in victims:
            node = self.alive[node_id]
            node.fate, node.storm, node.warned_at = "storm", event.storm, now
            self._push(now + self.classes[node.node_class].notice, _Kill(node_id))

    def _mark_uncertain(self, now: float, candidates: list[_Node]) -> None:
        """The storm's real victims are any of ``candidates``: later launches may reorder."""
        for node in candidates:
            node.provisional = True
            state = self.classes[node.node_class]
            state.uncertain_since = min(state.uncertain_since, now)


def _matches(evict: EvictSpec, node: _Node) -> bool:
    return evict.kind in ("any", node.node_class)


def _class_state(scenario: Scenario, node_class: NodeClass, base_dir: str | Path | None) -> _ClassState:
    spec = getattr(scenario.chaos, node_class)
    model = parse_lifetime(spec.lifetime, base_dir)
    notice = effective_notice(spec.notice, "notice" in spec.model_fields_set, model)
    return _ClassState(model, notice, spec.replace, spec.provisioning_delay)


# ------------------------------------------------------------------ formatting


def format_plan(
    plan: list[PlannedEviction],
    scenario: Scenario | None = None,
    base_dir: str | Path | None = None,
) -> str:
    """The plan as a text table; with ``scenario``, headed by its chaos settings."""
    lines = _header(scenario, base_dir) if scenario is not None else []
    columns = (
        "kill (trace)",
        "kill (wall)",
        "warning",
        "node",
        "reason",
        "lifetime",
        "launched",
        "replaced at",
    )
    rows = [_row(eviction) for eviction in plan]
    widths = [max(len(text) for text in column) for column in zip(columns, *rows, strict=True)]
    for cells in (columns, *rows):
        lines.append("  ".join(text.ljust(width) for text, width in zip(cells, widths, strict=True)).rstrip())
    lines.append(_footer(plan))
    return "\n".join(lines)


def _row(eviction: PlannedEviction) -> tuple[str, ...]:
    reason = eviction.reason if eviction.storm is None else f"storm {eviction.storm}"
    replaced = "-" if eviction.replacement_at_s is None else _clock(eviction.replacement_at_s)
    lifetime = "-" if eviction.lifetime_s is None else format_seconds(eviction.lifetime_s)
    return (
        _clock(eviction.trace_s),
        _clock(eviction.wall_s),
        _clock(eviction.warn_trace_s),
        eviction.node_id + ("*" if eviction.provisional else ""),
        reason,
        lifetime,
        _clock(eviction.launched_s),
        replaced,
    )


def _footer(plan: list[PlannedEviction]) -> str:
    storms = sum(1 for e in plan if e.reason == "storm")
    text = f"{len(plan)} evictions: {len(plan) - storms} by lifetime, {storms} by storms"
    if any(e.provisional for e in plan):
        text += "; * = provisional (follows a busiest/most-data storm, decided at run time)"
    return text


def _header(scenario: Scenario, base_dir: str | Path | None) -> list[str]:
    lines = [f"scenario {scenario.name}: seed {scenario.seed}, time_scale {scenario.time_scale:g}"]
    for node_class in NODE_CLASSES:
        spec = getattr(scenario.chaos, node_class)
        state = _class_state(scenario, node_class, base_dir)
        replace = (
            f"replaced after {format_seconds(spec.provisioning_delay)}" if spec.replace else "not replaced"
        )
        count = getattr(scenario.cluster, node_class).count
        lines.append(
            f"{node_class} ({count}): lifetime {state.model.describe()}; "
            f"notice {format_seconds(state.notice)}; {replace}"
        )
    lines.extend(f"storm {i}: {_describe_storm(storm)}" for i, storm in enumerate(scenario.chaos.storms))
    return lines


def _describe_storm(storm: StormSpec) -> str:
    evict = storm.evict
    amount = evict.count if evict.count is not None else f"{evict.fraction:g}"
    pool = "all nodes" if evict.kind == "any" else f"the {evict.kind} nodes"
    what = f"evict {amount} of {pool}, {evict.select}"
    if storm.at is None:
        rate, start, end = storm.rate or 0.0, storm.start or 0.0, storm.to or 0.0
        window = f"from {format_seconds(start)} to {format_seconds(end)}"
        return f"{what}, Poisson {rate * 60:g}/min {window}"
    if storm.times > 1:
        return (
            f"{what}, at {format_seconds(storm.at)} then every {format_seconds(storm.every or 0)}, "
            f"{storm.times} times"
        )
    return f"{what}, at {format_seconds(storm.at)}"


def _clock(seconds: float) -> str:
    """``h:mm:ss.s``."""
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours}:{minutes:02d}:{secs:04.1f}"
