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
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from master.chaos.rules import LAUNCH, ChaosRules, Reason, StormEvent, VirtualClock
from master.chaos.select import EvictableNode
from testbed.api.policy import NodeView
from testbed.chaosmodels.colocation import place as colocation_place
from testbed.chaosmodels.lifetime_model import format_seconds
from testbed.chaosmodels.prices import parse_price
from testbed.chaosmodels.slowdown import slowdown_factor
from testbed.limits import MAX_PLANNED_EVICTIONS
from testbed.scenario.chaos import EvictSpec, StormSpec
from testbed.scenario.schema import Scenario
from testbed.settings.cluster import ClusterSettings, chaos_settings
from testbed.settings.node_classes import class_chaos
from testbed.wire.protocol import NodeClass

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
    node_class: str
    """Its class's name (``cluster.classes``; ``reserved`` or ``transient`` in the shorthand)."""
    ordinal: int
    reason: Reason
    launched_s: float
    lifetime_s: float | None
    storm: int | None = None
    replacement_at_s: float | None = None
    """When its replacement is launched, if the class is replaced (after any wait for capacity)."""
    replacement_refused: bool = False
    """Its replacement was refused: the class had no capacity for longer than ``max_wait``."""
    replacement_wait_s: float = 0.0
    """How long its replacement waited for capacity beyond the provisioning delay."""
    provisional: bool = False
    """Depends on run-time state (a busiest/most-data storm came first)."""
    rebalance_trace_s: float | None = None
    """When it got a rebalance recommendation (trace seconds), if it got one."""
    zone: str | None = None


@dataclass(frozen=True, slots=True)
class PlannedSlowdown:
    """A node slowed by a ``chaos.slowdown`` episode (trace seconds)."""

    trace_s: float
    until_s: float
    """When the episode ends (the node may be killed before)."""
    node_id: str
    episode: int
    factor: float
    """The episode's factor (on top of the node's own)."""


def plan_evictions(
    scenario: Scenario, horizon_s: float, base_dir: str | Path | None = None
) -> list[PlannedEviction]:
    """Every eviction planned up to ``horizon_s`` trace seconds, by kill time.

    ``base_dir`` anchors relative ``empirical`` lifetime files (the scenario's folder).
    """
    world = _plan(scenario, horizon_s, base_dir)
    return sorted(world.plan, key=lambda e: (e.trace_s, e.node_class, e.ordinal))


def plan_slowdowns(
    scenario: Scenario, horizon_s: float, base_dir: str | Path | None = None
) -> list[PlannedSlowdown]:
    """The nodes each ``chaos.slowdown`` episode beginning up to ``horizon_s`` slows, by start
    time (then episode, then pick order), as the run's chaos controller picks them."""
    if scenario.chaos.slowdown is None or not scenario.chaos.slowdown.episodes:
        return []
    return _plan(scenario, horizon_s, base_dir).slowdowns


def _plan(scenario: Scenario, horizon_s: float, base_dir: str | Path | None) -> _PlanWorld:
    """The chaos rules run on a virtual clock up to ``horizon_s``, in a world of bookkeeping."""
    clock = VirtualClock()
    world = _PlanWorld(scenario)
    world.rules = ChaosRules(ClusterSettings.of(scenario), chaos_settings(scenario, base_dir), clock, world)
    for name, named in scenario.node_classes.items():
        for _ in range(named.spec.count):
            clock.at(0.0, LAUNCH, lambda name=name: world.launch(name, initial=True))
    world.rules.start()
    clock.run(horizon_s)
    return world


@dataclass
class _Node:
    node_id: str
    node_class: str
    """Its class's name."""
    kind: NodeClass
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
    slowdowns: list[PlannedSlowdown] = field(default_factory=list)
    ordinals: dict[str, int] = field(init=False)
    """The next ordinal of each class, by name."""
    uncertain_since: dict[str, float] = field(init=False)
    replacing: dict[str, deque[int]] = field(init=False)
    """Indexes in ``plan`` of the evictions whose replacement is not launched yet, in launch
    order (one class's replacements keep their order: same delay, same capacity waits)."""

    def __post_init__(self) -> None:
        names = list(self.scenario.node_classes)
        self.ordinals = dict.fromkeys(names, 0)
        self.uncertain_since = dict.fromkeys(names, math.inf)
        self.replacing = {name: deque() for name in names}

    def candidates(self) -> Sequence[EvictableNode]:
        return [
            NodeView(n.node_id, n.kind, 1, 1, launched=n.launched, zone=self._zone(n))
            for n in self.alive_nodes.values()
        ]

    def stored_bytes(self) -> dict[str, int]:
        return {}

    def _zone(self, node: _Node) -> str | None:
        return self.scenario.node_classes[node.node_class].spec.zone_of(node.ordinal)

    def alive(self, node_id: str) -> bool:
        return node_id in self.alive_nodes

    def node_class(self, node_id: str) -> str:
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
                zone=self._zone(node),
            )
        )
        if len(self.plan) > MAX_PLANNED_EVICTIONS:
            raise ValueError(
                f"more than {MAX_PLANNED_EVICTIONS:,} evictions are planned before "
                f"{format_seconds(now)} (a testbed limit); lengthen the lifetimes or shorten the horizon"
            )
        if rules.replace:
            self.replacing[node.node_class].append(len(self.plan) - 1)
        self.rules.killed_now(node.node_class)

    def capacity_changed(self, node_class: str, until: float | None) -> None:
        """The plan lists the windows themselves (``capacity_windows``)."""

    def launch_waiting(self, node_class: str, until: float) -> None:
        """The replacement's launch time is filled in when it launches."""

    def launch_refused(self, node_class: str, requested: float) -> None:
        self._replaced(node_class, None)

    def _replaced(self, node_class: str, at: float | None) -> None:
        """The first pending replacement of the class launched at ``at`` (None: refused)."""
        if not self.replacing[node_class]:
            return  # an initial node
        index = self.replacing[node_class].popleft()
        eviction = self.plan[index]
        if at is not None and at == eviction.replacement_at_s:
            return  # launched when the kill said: the eviction says so already
        nominal = eviction.trace_s + self.rules.classes[node_class].delay
        self.plan[index] = replace(
            eviction,
            replacement_at_s=at,
            replacement_refused=at is None,
            replacement_wait_s=0.0 if at is None else at - nominal,
        )

    def launch(self, node_class: str, initial: bool = False) -> None:
        now = self.rules.clock.now()
        if not initial:
            self._replaced(node_class, now)
        ordinal = self.ordinals[node_class]
        self.ordinals[node_class] += 1
        node = _Node(
            f"{node_class}-{ordinal}",
            node_class,
            self.scenario.node_classes[node_class].kind,
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
            if _matches(event.evict, candidate.node_class):  # the candidate's kind
                node = self.alive_nodes[candidate.node_id]
                node.provisional = True
                self.uncertain_since[node.node_class] = min(self.uncertain_since[node.node_class], now)

    def slowed(self, node_id: str, factor: float, episode: int, began: bool) -> None:
        if not began:
            return  # the record says when the episode ends
        assert self.scenario.chaos.slowdown is not None  # an episode is one of its
        spec = self.scenario.chaos.slowdown.episodes[episode]
        now = self.rules.clock.now()
        self.slowdowns.append(PlannedSlowdown(now, now + spec.duration, node_id, episode, spec.factor))


def _matches(evict: EvictSpec, node_class: str) -> bool:
    return evict.kind in ("any", node_class)


# ------------------------------------------------------------------ formatting


def capacity_windows(
    scenario: Scenario, horizon_s: float, base_dir: str | Path | None = None
) -> dict[str, list[tuple[float, float]]]:
    """Each class's (by name) unavailable capacity windows starting before ``horizon_s``
    (classes with a capacity model only)."""
    windows = {}
    for node_class in scenario.node_classes:
        capacity = class_chaos(scenario, node_class, base_dir).capacity
        if capacity is not None:
            windows[node_class] = capacity.windows_until(horizon_s)
    return windows


def format_plan(
    plan: list[PlannedEviction],
    scenario: Scenario | None = None,
    base_dir: str | Path | None = None,
    horizon_s: float | None = None,
) -> str:
    """The plan as a text table; with ``scenario``, headed by its chaos settings (and, with
    ``horizon_s``, the capacity windows up to it)."""
    lines = _header(scenario, base_dir) if scenario is not None else []
    if scenario is not None and horizon_s is not None:
        lines.extend(_capacity_lines(capacity_windows(scenario, horizon_s, base_dir), horizon_s))
        lines.extend(_episode_lines(plan_slowdowns(scenario, horizon_s, base_dir), scenario))
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
    if any(e.zone is not None for e in plan):
        columns = (*columns[:4], "zone", *columns[4:])
        rows = [(*row[:4], e.zone or "-", *row[4:]) for row, e in zip(rows, plan, strict=True)]
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
    if eviction.replacement_refused:
        replaced = "refused"
    elif eviction.replacement_wait_s > 0:
        replaced += " (waited)"
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
    zones = Counter(e.zone for e in plan if e.zone is not None)
    if zones:
        text += "; per zone: " + ", ".join(f"{zone} {n}" for zone, n in sorted(zones.items()))
    waited = [e.replacement_wait_s for e in plan if e.replacement_wait_s > 0]
    if waited:
        text += f"; {len(waited)} replacements waited for capacity ({format_seconds(sum(waited))} in all)"
    refused = sum(1 for e in plan if e.replacement_refused)
    if refused:
        text += f"; {refused} replacements refused (no capacity)"
    rebalanced = sum(1 for e in plan if e.rebalance_trace_s is not None)
    if rebalanced:
        text += f"; {rebalanced} preceded by a rebalance recommendation"
    if any(e.provisional for e in plan):
        text += "; * = provisional (follows a busiest/most-data storm, decided at run time)"
    return text


def _header(scenario: Scenario, base_dir: str | Path | None) -> list[str]:
    lines = [f"scenario {scenario.name}: seed {scenario.seed}, time_scale {scenario.time_scale:g}"]
    for node_class, named in scenario.node_classes.items():
        spec = named.chaos
        state = class_chaos(scenario, node_class, base_dir)
        replace = (
            f"replaced after {format_seconds(spec.provisioning_delay)}" if spec.replace else "not replaced"
        )
        nodes = named.spec
        zones = "".join(f", {zone} {n}" for zone, n in nodes.zones.items())
        kind = "" if named.kind == node_class else f"{named.kind}, "
        lines.append(
            f"{node_class} ({kind}{nodes.count}{zones}): lifetime {state.model.describe()}; "
            f"notice {format_seconds(state.notice)}; {replace}"
        )
        lines.extend(f"  zone {zone}: lifetime {m.describe()}" for zone, m in state.zone_models.items())
        if state.capacity is not None:
            lines.append(f"  {state.capacity.model.describe()}")
        if nodes.price is not None:
            price = parse_price(
                nodes.price, scenario.seed, node_class, base_dir, scenario.class_index(node_class)
            )
            lines.append(f"  price {price.describe()}")
    lines.extend(f"storm {i}: {_describe_storm(storm)}" for i, storm in enumerate(scenario.chaos.storms))
    lines.extend(_slowdown_lines(scenario))
    return lines


MAX_NODES_SHOWN = 20


def _slowdown_lines(scenario: Scenario) -> list[str]:
    """The initial nodes' ``chaos.slowdown`` factors (as each node draws its own at launch, a
    replacement or an added node draws its own then), grouped by factor, slowest first."""
    if scenario.chaos.slowdown is None:
        return []
    by_factor: dict[float, list[str]] = {}
    for node_class, named in scenario.node_classes.items():
        for ordinal in range(named.spec.count):
            node_id = f"{node_class}-{ordinal}"
            factor = slowdown_factor(scenario.chaos.slowdown, scenario.seed, node_id, named.kind)
            by_factor.setdefault(factor, []).append(node_id)
    lines = ["slowdown (initial nodes; a later node draws its factor at launch):"]
    if scenario.chaos.slowdown.colocation is not None:
        lines.extend(_colocation_lines(scenario))
    for factor, nodes in sorted(by_factor.items(), reverse=True):
        more = f" and {len(nodes) - MAX_NODES_SHOWN} more" if len(nodes) > MAX_NODES_SHOWN else ""
        lines.append(f"  factor {factor:g}: {len(nodes)} node(s): {', '.join(nodes[:MAX_NODES_SHOWN])}{more}")
    return lines


def _colocation_lines(scenario: Scenario) -> list[str]:
    """Per class, how its initial nodes share hosts under ``colocation: ec2-2008``."""
    lines = []
    for node_class, named in scenario.node_classes.items():
        count = named.spec.count
        if count == 0:
            continue
        places = [colocation_place(scenario.seed, node_class, ordinal) for ordinal in range(count)]
        hosts = Counter(Counter(p.host for p in places).values())
        shares = {p.host: p.vms for p in places}
        mix = " ".join(f"{vms}:{n}" for vms, n in sorted(Counter(shares.values()).items()))
        ours = " ".join(f"{k}:{n}" for k, n in sorted(hosts.items()))
        lines.append(
            f"  colocation ec2-2008, {node_class}: {count} node(s) on {len(shares)} host(s); "
            f"hosts by VMs on them (LATE's Table 3) {mix}; by nodes of ours on them {ours}"
        )
    return lines


def _episode_lines(slowdowns: list[PlannedSlowdown], scenario: Scenario) -> list[str]:
    """Each episode's nodes (a node killed during it is slowed until then); those an episode
    picks by run-time state (``busiest``, ``most-data``) are the plan's guess."""
    by_episode: dict[int, list[PlannedSlowdown]] = {}
    for slowdown in slowdowns:
        by_episode.setdefault(slowdown.episode, []).append(slowdown)
    lines = []
    for episode, slowed in by_episode.items():
        first = slowed[0]
        nodes = [s.node_id for s in slowed]
        more = f" and {len(nodes) - MAX_NODES_SHOWN} more" if len(nodes) > MAX_NODES_SHOWN else ""
        assert scenario.chaos.slowdown is not None  # it has this episode
        select = scenario.chaos.slowdown.episodes[episode].nodes.select
        guess = f" (a guess: {select} is picked at run time)" if select in RUNTIME_DEPENDENT else ""
        lines.append(
            f"slowdown episode {episode}: {_clock(first.trace_s)}-{_clock(first.until_s)}, factor "
            f"{first.factor:g} on {len(nodes)} node(s): {', '.join(nodes[:MAX_NODES_SHOWN])}{more}{guess}"
        )
    return lines


MAX_WINDOWS_SHOWN = 10


def _capacity_lines(windows: dict[str, list[tuple[float, float]]], horizon_s: float) -> list[str]:
    lines = []
    for node_class, spans in windows.items():
        out = sum(min(end, horizon_s) - start for start, end in spans)
        shown = ", ".join(f"{_clock(s)}-{_clock(e)}" for s, e in spans[:MAX_WINDOWS_SHOWN])
        more = f" and {len(spans) - MAX_WINDOWS_SHOWN} more" if len(spans) > MAX_WINDOWS_SHOWN else ""
        lines.append(
            f"{node_class} capacity out {len(spans)} times, {format_seconds(out)} in all"
            + (f": {shown}{more}" if spans else "")
        )
    return lines


def _describe_storm(storm: StormSpec) -> str:
    evict = storm.evict
    amount = (
        evict.count if evict.count is not None else "all" if evict.fraction == 1 else f"{evict.fraction:g}"
    )
    pool = "all nodes" if evict.kind == "any" else f"the {evict.kind} nodes"
    if evict.zone is not None:
        pool += f" of zone {evict.zone}"
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
    """``h:mm:ss.s``, rounded to the tenth before it is split (1199.97 s is ``0:20:00.0``,
    not ``0:19:60.0``)."""
    minutes, tenths = divmod(round(seconds * 10), 600)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{tenths / 10:04.1f}"
