"""The chaos rules, once: lifetimes, notices, storms, kills and replacements on a clock.

``ChaosRules`` decides what happens to which node and when; a ``World`` carries
it out and a ``Clock`` says when. ``testbed chaos plan`` runs the rules in a
world of bookkeeping on a ``VirtualClock`` (``master.chaos.plan``); a run runs
the same rules in the real world (drain, eviction notice, SIGKILL, relaunch) on
the master core's timers (``master.core.chaos``), which a real shell fires at their wall
times and a simulator at their virtual ones. Both clocks
order simultaneous actions the same way, as SimPy breaks ties by (time,
priority, id): rebalance recommendations, warnings, kills, capacity changes, launches, then
storms, each kind in the order it was scheduled. All times here are trace seconds since the run's
time 0. docs/chaos.md, "Semantics", says the rules in prose.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Literal, Protocol

import numpy as np

from master.chaos.select import EvictableNode, select_victims
from master.event_heap import EventHeap
from testbed.chaosmodels.capacity import CapacitySchedule
from testbed.chaosmodels.lifetimes import (
    EPISODE_STREAM,
    STORM_VICTIM_STREAM,
    STORM_WINDOW_STREAM,
    lifetime_for,
    rebalance_lead,
    rng_for,
)
from testbed.scenario.chaos import EvictSpec, SlowdownEpisode, StormSpec
from testbed.settings.cluster import ChaosSettings, ClusterSettings
from testbed.settings.node_classes import ClassChaos
from testbed.wire.protocol import NodeClass

Reason = Literal["lifetime", "storm", "manual"]
REBALANCE, WARN, KILL, CAPACITY, LAUNCH, STORM, SLOW = range(7)
"""Priorities of simultaneous actions (lower first)."""


# ------------------------------------------------------------------ storms


@dataclass(frozen=True, slots=True)
class StormEvent:
    """One concrete firing of a scripted storm."""

    at: float
    storm: int
    """Index of the storm in ``chaos.storms``."""
    event: int
    """Index of this firing within its storm."""
    evict: EvictSpec


def storm_events(storms: Sequence[StormSpec], seed: int) -> list[StormEvent]:
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


# ------------------------------------------------------------------ clocks and worlds


class Clock(Protocol):
    def now(self) -> float:
        """Trace seconds since the run's time 0."""

    def at(self, when: float, priority: int, action: Callable[[], None]) -> None:
        """Run ``action`` at trace time ``when`` (at once if it is past), after every action
        due at the same time with a lower priority, or the same one scheduled earlier."""


class VirtualClock:
    """A discrete-event clock: the one event heap (``master.event_heap``) read as a ``Clock``;
    ``run`` pops its actions in (time, priority, order) order."""

    def __init__(self, time: float = 0.0) -> None:
        self.heap = EventHeap(now=time)

    def now(self) -> float:
        return self.heap.now

    def at(self, when: float, priority: int, action: Callable[[], None]) -> None:
        self.heap.at(when, priority, action)

    def run(self, horizon: float) -> None:
        """Every action due up to ``horizon``, in order."""
        self.heap.run(horizon)


class World(Protocol):
    """Where the rules act: the plan's bookkeeping, or the run's nodes."""

    def candidates(self) -> Sequence[EvictableNode]:
        """The nodes a storm may pick (alive; the rules leave out those already doomed)."""

    def stored_bytes(self) -> Mapping[str, int]:
        """Bytes of live intermediate outputs held on each node (for ``most-data``)."""

    def alive(self, node_id: str) -> bool: ...

    def node_class(self, node_id: str) -> str: ...

    def rebalance(self, node_id: str) -> None:
        """The node is at elevated risk of eviction (a rebalance recommendation): no deadline."""

    def warn(self, node_id: str, seconds_left: float) -> None:
        """The node gets its eviction notice: it will be killed in ``seconds_left``."""

    def kill(self, node_id: str, reason: Reason, storm: int | None) -> None:
        """Kill the node; the world calls ``ChaosRules.killed`` once it is dead."""

    def launch(self, node_class: str) -> None:
        """Launch a replacement; the world calls ``ChaosRules.launched`` with its node."""

    def capacity_changed(self, node_class: str, until: float | None) -> None:
        """The class's capacity ran out until trace time ``until``, or (None) came back."""

    def launch_waiting(self, node_class: str, until: float) -> None:
        """A launch of the class waits for capacity, until trace time ``until``."""

    def launch_refused(self, node_class: str, requested: float) -> None:
        """A launch of the class (requested at trace time ``requested``) is refused: no capacity."""

    def storm_fired(self, event: StormEvent, candidates: Sequence[EvictableNode], victims: list[str]) -> None:
        """A storm picked its victims (among ``candidates``)."""

    def slowed(self, node_id: str, factor: float, episode: int, began: bool) -> None:
        """Episode ``episode`` of ``chaos.slowdown.episodes`` began (or ended) on the node, which
        is now ``factor`` times slower than its own factor (the product of its episodes under way)."""


@dataclass
class ChaosRules:
    cluster: ClusterSettings
    """The node classes' zones (``RunSettings.cluster``)."""
    chaos: ChaosSettings
    """The seed, each class's lifetimes, notice, replacement and capacity, the storms and the
    slowdowns, read once (``testbed.settings.cluster``, ``RunSettings.chaos``)."""
    clock: Clock
    world: World
    doomed: set[str] = field(default_factory=set)
    """Nodes warned or picked by a storm: no storm picks them (again)."""
    killed: set[str] = field(default_factory=set)
    lifetimes: dict[str, float] = field(default_factory=dict)
    """Each node's lifetime (trace seconds), if it has one."""
    started: dict[str, float] = field(default_factory=dict)
    """When each node's lifetime started (trace seconds): its launch as the rules saw it."""
    episodes: dict[str, dict[int, float]] = field(default_factory=dict)
    """Each node's slowdown episodes under way: episode index -> its factor."""

    @property
    def classes(self) -> Mapping[str, ClassChaos]:
        """Each node class's chaos (``ChaosSettings.classes``)."""
        return self.chaos.classes

    def start(self, since: float = 0.0) -> None:
        """The storms, timed from time 0; those before ``since`` (where a resumed run continues,
        in trace time) do not fire. The capacity windows' edges from ``since`` on."""
        for event in storm_events(self.chaos.storms, self.chaos.seed):
            if event.at >= since:
                self.clock.at(event.at, STORM, lambda event=event: self._storm(event))
        for node_class, rules in self.classes.items():
            if rules.capacity is not None:
                self._next_capacity_edge(node_class, rules.capacity, since)
        slowdown = self.chaos.slowdown
        for index, episode in enumerate(slowdown.episodes if slowdown is not None else []):
            if episode.at >= since:
                self.clock.at(episode.at, SLOW, partial(self._episode, index, episode, episode.duration))
            elif since < episode.at + episode.duration:  # under way when the run stopped: its rest
                rest = episode.at + episode.duration - since
                self.clock.at(since, SLOW, partial(self._episode, index, episode, rest))

    def launched(self, node_id: str, node_class: str, ordinal: int) -> None:
        """A node joined the run now: its lifetime, drawn by ordinal from its zone's model
        (else its class's), starts."""
        rules = self.classes[node_class]
        self.started[node_id] = self.clock.now()
        model = rules.model_for(self.cluster[node_class].zone_of(ordinal))
        stream = self.cluster.index(node_class)
        lifetime = lifetime_for(model, self.chaos.seed, stream, ordinal)
        if lifetime is None:
            return
        self.lifetimes[node_id] = lifetime
        now = self.clock.now()
        lead = rebalance_lead(model, self.chaos.seed, stream, ordinal)
        if lead is not None:
            self.clock.at(now + lifetime - rules.notice - lead, REBALANCE, lambda: self._rebalance(node_id))
        self.clock.at(now + lifetime - rules.notice, WARN, lambda: self._warn(node_id, now + lifetime))
        self.clock.at(now + lifetime, KILL, lambda: self._kill(node_id, "lifetime", None))

    def killed_now(self, node_class: str) -> None:
        """A node of the class died: its replacement launches after the provisioning delay."""
        if self.classes[node_class].replace:
            self._replace(node_class)

    def replace_lost(self, node_class: str) -> bool:
        """A node lost to something else than a chaos kill (a crash, silence) is replaced as a
        killed one would be; a reserved node always (the run depends on its reserved
        capacity). Whether a replacement comes. ``node_class``: the lost node's class (by name),
        decided by its kind."""
        if self.cluster[node_class].kind != "reserved" and not self.classes[node_class].replace:
            return False
        self._replace(node_class)
        return True

    def _replace(self, node_class: str) -> None:
        requested = self.clock.now() + self.classes[node_class].delay
        self.clock.at(requested, LAUNCH, lambda: self._launch(node_class, requested, requested))

    def launch_verdict(self, node_class: str, requested: float, due: float = -math.inf) -> float | None:
        """When a launch of the class requested at trace time ``requested`` may go ahead, at
        the later of now and ``due`` (when it was scheduled to run: a real clock may fire a
        hair early): then if capacity is there, the end of its outage if the launch may wait
        that long (``max_wait`` since ``requested``), None if it is refused."""
        now = max(self.clock.now(), due)
        capacity = self.classes[node_class].capacity
        outage = None if capacity is None else capacity.outage_at(now)
        if outage is None:
            return now
        assert capacity is not None
        max_wait = capacity.model.max_wait
        return outage[1] if max_wait is None or outage[1] - requested <= max_wait else None

    def launch_when_available(
        self, node_class: str, launch: Callable[[], None], refused: Callable[[], None]
    ) -> None:
        """A launch of the class requested now by someone else (an autoscaler), subject to the
        class's capacity as a replacement is: ``launch`` once it may go ahead, or ``refused``."""
        now = self.clock.now()
        self._launch(node_class, now, now, launch, refused)

    def _launch(
        self,
        node_class: str,
        requested: float,
        due: float,
        launch: Callable[[], None] | None = None,
        refused: Callable[[], None] | None = None,
    ) -> None:
        """A launch (a replacement's unless ``launch`` is given), subject to the class's capacity."""
        when = self.launch_verdict(node_class, requested, due)
        if when is None:
            self.world.launch_refused(node_class, requested)
            if refused is not None:
                refused()
        elif when > max(self.clock.now(), due):
            self.world.launch_waiting(node_class, when)
            self.clock.at(when, LAUNCH, lambda: self._launch(node_class, requested, when, launch, refused))
        elif launch is not None:
            launch()
        else:
            self.world.launch(node_class)

    def _next_capacity_edge(self, node_class: str, capacity: CapacitySchedule, after: float) -> None:
        edge = capacity.next_change(after)
        if math.isfinite(edge):
            self.clock.at(edge, CAPACITY, lambda: self._capacity_edge(node_class, capacity, edge))

    def _capacity_edge(self, node_class: str, capacity: CapacitySchedule, edge: float) -> None:
        outage = capacity.outage_at(edge)
        self.world.capacity_changed(node_class, None if outage is None else outage[1])
        self._next_capacity_edge(node_class, capacity, edge)

    def unavailable(self) -> frozenset[NodeClass]:
        """The kinds of the classes whose capacity is out now (what a policy sees in its snapshot)."""
        now = self.clock.now()
        return frozenset(
            self.cluster[c].kind
            for c, r in self.classes.items()
            if r.capacity is not None and r.capacity.outage_at(now) is not None
        )

    def stop_replacing(self, node_class: str) -> None:
        self.classes[node_class].replace = False

    def choose(self, evict: EvictSpec, rng: np.random.Generator) -> tuple[list[EvictableNode], list[str]]:
        """The candidates (alive, not doomed) and the victims ``evict`` picks among them."""
        candidates = [n for n in self.world.candidates() if n.node_id not in self.doomed]
        return candidates, select_victims(candidates, evict, rng, self.world.stored_bytes())

    # ------------------------------------------------------------------ actions

    def _rebalance(self, node_id: str) -> None:
        if self.world.alive(node_id) and node_id not in self.doomed:
            self.world.rebalance(node_id)

    def _warn(self, node_id: str, kill_at: float) -> None:
        if not self.world.alive(node_id) or node_id in self.doomed:
            return
        self.doomed.add(node_id)
        if self.classes[self.world.node_class(node_id)].notice > 0:
            self.world.warn(node_id, kill_at - self.clock.now())

    def _kill(self, node_id: str, reason: Reason, storm: int | None) -> None:
        if node_id in self.killed or not self.world.alive(node_id):
            return
        self.killed.add(node_id)
        self.doomed.add(node_id)
        self.world.kill(node_id, reason, storm)

    def _storm(self, event: StormEvent) -> None:
        candidates, victims = self.choose(event.evict, storm_victim_rng(self.chaos.seed, event))
        self.world.storm_fired(event, candidates, victims)
        now = self.clock.now()
        for node_id in victims:
            kill_at = now + self.classes[self.world.node_class(node_id)].notice
            self._warn(node_id, kill_at)
            self.doomed.add(node_id)
            self.clock.at(kill_at, KILL, lambda node_id=node_id: self._kill(node_id, "storm", event.storm))

    def _episode(self, index: int, episode: SlowdownEpisode, length: float) -> None:
        """An episode begins: its nodes, picked among the live ones not doomed by its own
        generator (seed, ``EPISODE_STREAM``, index), are slowed for ``length`` (its duration, or
        what is left of it when a resumed run continues inside it: its nodes died with the
        stopped run, so the rest of it slows as many of the nodes live now)."""
        _, nodes = self.choose(episode.nodes, rng_for(self.chaos.seed, EPISODE_STREAM, index))
        for node_id in nodes:
            self.episodes.setdefault(node_id, {})[index] = episode.factor
            self.world.slowed(node_id, self.episode_factor(node_id), index, True)
        end = self.clock.now() + length
        self.clock.at(end, SLOW, lambda: self._episode_end(index, nodes))

    def _episode_end(self, index: int, nodes: list[str]) -> None:
        for node_id in nodes:
            self.episodes[node_id].pop(index)
            if self.world.alive(node_id):
                self.world.slowed(node_id, self.episode_factor(node_id), index, False)

    def episode_factor(self, node_id: str) -> float:
        """How many times slower than its own factor the node's episodes under way make it."""
        return float(math.prod(self.episodes.get(node_id, {}).values()))
