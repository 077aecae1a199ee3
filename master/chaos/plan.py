"""The planned eviction schedule of a scenario, computed without running anything.

``plan_evictions`` runs the scenario's chaos rules (``master.chaos.rules``, the
very rules a run's controller follows) on a virtual clock, in a world of
bookkeeping: the initial nodes draw their lifetimes, storms fire, and evicted
nodes are replaced after ``provisioning_delay`` with fresh ordinals. So the
same seed gives the same schedule in a plan and in a run. Storms that choose
``busiest`` or ``most-data`` depend on the run's state; the plan guesses their
victims and marks what follows provisional.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from master.chaos.rules import LAUNCH, ChaosRules, Reason, StormEvent, VirtualClock, class_rules
from master.chaos.select import EvictableNode
from master.policies.base import NodeView
from testbed.lifetimes import NODE_CLASSES, format_seconds
from testbed.limits import MAX_PLANNED_EVICTIONS
from testbed.protocol import NodeClass
from testbed.scenario import Scenario
from testbed.scenario_chaos import EvictSpec, StormSpec

RUNTIME_DEPENDENT = ("busiest", "most-data")


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
    rebalance_trace_s: float | None = None
    """When it got a rebalance recommendation (trace seconds), if it got one."""


def plan_evictions(
    scenario: Scenario, horizon_s: float, base_dir: str | Path | None = None
) -> list[PlannedEviction]:
    """Every eviction planned up to ``horizon_s`` trace seconds, by kill time.

    ``base_dir`` anchors relative ``empirical`` lifetime files (the scenario's folder).
    """
    clock = VirtualClock()
    world = _PlanWorld(scenario)
    world.rules = ChaosRules(scenario, clock, world, base_dir)
    for node_class in NODE_CLASSES:
        for _ in range(getattr(scenario.cluster, node_class).count):
            clock.at(0.0, LAUNCH, lambda node_class=node_class: world.launch(node_class))
    world.rules.start()
    clock.run(horizon_s)
    return sorted(world.plan, key=lambda e: (e.trace_s, e.node_class, e.ordinal))


@dataclass
class _Node:
    node_id: str
    node_class: NodeClass
    ordinal: int
    launched: float
    warned_at: float | None = None
    rebalanced_at: float | None = None
    provisional: bool = False


@dataclass
class _PlanWorld:
    """The chaos rules' world in a plan: nodes are records, a kill is a line of the plan."""

    scenario: Scenario
    rules: ChaosRules = field(init=False)
    alive_nodes: dict[str, _Node] = field(default_factory=dict)
    plan: list[PlannedEviction] = field(default_factory=list)
    ordinals: dict[NodeClass, int] = field(default_factory=lambda: dict.fromkeys(NODE_CLASSES, 0))
    uncertain_since: dict[NodeClass, float] = field(
        default_factory=lambda: dict.fromkeys(NODE_CLASSES, math.inf)
    )

    def candidates(self) -> Sequence[EvictableNode]:
        return [
            NodeView(n.node_id, n.node_class, 1, 1, launched=n.launched) for n in self.alive_nodes.values()
        ]

    def stored_bytes(self) -> dict[str, int]:
        return {}

    def alive(self, node_id: str) -> bool:
        return node_id in self.alive_nodes

    def node_class(self, node_id: str) -> NodeClass:
        return self.alive_nodes[node_id].node_class

    def rebalance(self, node_id: str) -> None:
        self.alive_nodes[node_id].rebalanced_at = self.rules.clock.now()

    def warn(self, node_id: str, seconds_left: float) -> None:
        self.alive_nodes[node_id].warned_at = self.rules.clock.now()

    def kill(self, node_id: str, reason: Reason, storm: int | None) -> None:
        now = self.rules.clock.now()
        node = self.alive_nodes.pop(node_id)
        rules = self.rules.classes[node.node_class]
        warned = node.warned_at if node.warned_at is not None else now
        self.plan.append(
            PlannedEviction(
                trace_s=now,
                wall_s=self.scenario.trace(now),
                warn_trace_s=warned,
                warn_wall_s=self.scenario.trace(warned),
                node_id=node.node_id,
                node_class=node.node_class,
                ordinal=node.ordinal,
                reason=reason,  # type: ignore[arg-type]
                launched_s=node.launched,
                lifetime_s=self.rules.lifetimes.get(node_id),
                storm=storm,
                replacement_at_s=now + rules.delay if rules.replace else None,
                provisional=node.provisional,
                rebalance_trace_s=node.rebalanced_at,
            )
        )
        if len(self.plan) > MAX_PLANNED_EVICTIONS:
            raise ValueError(
                f"more than {MAX_PLANNED_EVICTIONS:,} evictions are planned before "
                f"{format_seconds(now)} (a testbed limit); lengthen the lifetimes or shorten the horizon"
            )
        self.rules.killed_now(node.node_class)

    def launch(self, node_class: NodeClass) -> None:
        now = self.rules.clock.now()
        ordinal = self.ordinals[node_class]
        self.ordinals[node_class] += 1
        node = _Node(
            f"{node_class}-{ordinal}",
            node_class,
            ordinal,
            now,
            provisional=now > self.uncertain_since[node_class],
        )
        self.alive_nodes[node.node_id] = node
        self.rules.launched(node.node_id, node_class, ordinal)

    def storm_fired(self, event: StormEvent, candidates: Sequence[EvictableNode], victims: list[str]) -> None:
        """A storm that picks by run-time state (``busiest``, ``most-data``) may have picked
        any of its candidates: they, and what launches later, are provisional."""
        if event.evict.select not in RUNTIME_DEPENDENT:
            return
        now = self.rules.clock.now()
        for candidate in candidates:
            if _matches(event.evict, candidate.node_class):
                self.alive_nodes[candidate.node_id].provisional = True
                self.uncertain_since[candidate.node_class] = min(
                    self.uncertain_since[candidate.node_class], now
                )


def _matches(evict: EvictSpec, node_class: str) -> bool:
    return evict.kind in ("any", node_class)


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
    if any(e.rebalance_trace_s is not None for e in plan):
        columns = (*columns[:2], "rebalance", *columns[2:])
        rows = [(*row[:2], _rebalance(e), *row[2:]) for row, e in zip(rows, plan, strict=True)]
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


def _rebalance(eviction: PlannedEviction) -> str:
    return "-" if eviction.rebalance_trace_s is None else _clock(eviction.rebalance_trace_s)


def _footer(plan: list[PlannedEviction]) -> str:
    storms = sum(1 for e in plan if e.reason == "storm")
    text = f"{len(plan)} evictions: {len(plan) - storms} by lifetime, {storms} by storms"
    rebalanced = sum(1 for e in plan if e.rebalance_trace_s is not None)
    if rebalanced:
        text += f"; {rebalanced} preceded by a rebalance recommendation"
    if any(e.provisional for e in plan):
        text += "; * = provisional (follows a busiest/most-data storm, decided at run time)"
    return text


def _header(scenario: Scenario, base_dir: str | Path | None) -> list[str]:
    lines = [f"scenario {scenario.name}: seed {scenario.seed}, time_scale {scenario.time_scale:g}"]
    for node_class in NODE_CLASSES:
        spec = getattr(scenario.chaos, node_class)
        state = class_rules(scenario, node_class, base_dir)
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
