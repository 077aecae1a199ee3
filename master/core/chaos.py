"""The chaos world in the core: the chaos rules carried out on the run's nodes.

The rules (``master.chaos.rules``: lifetimes, notices, storms, kills, replacements,
capacity) are those ``testbed chaos plan`` runs on a virtual clock; here they run on
the core's timers (``master.core.timers.TraceClock``, trace seconds), ties broken the
same way, and this class is their world: a notice drains the node and tells its agent,
a kill is recorded and becomes a ``KillNode`` (the master then learns of it the way it
would of any crash: the Last Will, or missed heartbeats), a replacement is a launch.
A live eviction (the API's, an operator's) is an ``EvictRequest`` event, answered with
an ``Evicted`` command. Everything random is drawn from generators seeded by the
scenario. docs/chaos.md says the semantics.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np

from master.chaos.rules import ChaosRules, Reason, StormEvent
from master.chaos.select import EvictableNode
from master.core.commands import Evicted, SlowNode
from master.core.events import EvictRequest
from master.core.nodes import NodeRecord
from master.core.ports import ChaosCore
from master.core.timers import TraceClock
from testbed.api.policy import NodeView
from testbed.chaosmodels.slowdown import slowdown_factor
from testbed.wire.protocol import EvictionNotice

MANUAL_STREAM = 0xC4A05
"""The generator of live evictions' random picks is seeded by (scenario seed, this)."""


class ChaosWorld:
    def __init__(self, core: ChaosCore) -> None:
        self.core = core
        settings = core.settings
        # trace seconds per run second: time_scale compresses, the dilation stretches (as
        # ``TimeBase.trace`` does for arrivals and notices)
        self.clock = TraceClock(core.timers, core.time.trace_per_wall)
        self.rules = ChaosRules(settings.cluster, settings.chaos, self.clock, self)
        self.noticed: dict[str, tuple[float, float, float]] = {}
        """Each warned node's notice: when it went out, the wall seconds it promised, and the
        lead the model intended (the class's notice, or the whole lifetime if shorter)."""
        self.evicted: set[str] = set()
        """Nodes killed: a second request (a manual eviction just after a storm's kill) is moot."""
        self.manual = np.random.default_rng([settings.seed, MANUAL_STREAM])
        self.state: Literal["starting", "running", "ended"] = "starting"
        """Live evictions are taken only while ``running``: from the run's time 0 (``start``)
        to its end (``stop``), so every eviction is on the run's clock."""

    @property
    def doomed(self) -> set[str]:
        """Nodes under an eviction notice or being evicted."""
        return self.rules.doomed

    def start(self, since: float) -> None:
        """At time 0 (``since``: the run time a resumed run continues from): the nodes'
        lifetimes start now, storms and capacity edges are timed from time 0 (those before
        ``since`` are not replayed). Once: a second time 0 changes nothing."""
        if self.state != "starting":
            return
        for node in list(self.core.nodes.values()):
            self.node_launched(node)
        self.rules.start(since=since * self.clock.time_scale)
        self.state = "running"

    def stop(self) -> None:
        self.state = "ended"

    def node_launched(self, node: NodeRecord) -> None:
        self.rules.launched(node.node_id, node.class_name, node.ordinal)
        lifetime = self.rules.lifetimes.get(node.node_id)
        if lifetime is not None:
            self.core.journal.event(
                "lifetime_drawn", node=node.node_id, lifetime_s=lifetime, **{"class": node.class_name}
            )
        chaos = self.core.settings.chaos
        if chaos.slowdown is not None:
            factor = slowdown_factor(chaos.slowdown, chaos.seed, node.node_id, node.node_class)
            self.core.journal.event(
                "slowdown_drawn", node=node.node_id, factor=factor, **{"class": node.class_name}
            )

    def replace_lost(self, node: NodeRecord) -> None:
        """A node lost to something else than our eviction (a crash, silence) is replaced as an
        evicted one would be; a reserved node always (the run depends on its reserved capacity)."""
        if self.rules.replace_lost(node.class_name):
            self.core.journal.event("node_replacing", node=node.node_id, **{"class": node.class_name})

    def unavailable(self) -> frozenset[str]:
        return self.rules.unavailable()  # type: ignore[return-value]

    def stop_replacing(self, kind: str) -> None:
        """Evicted nodes of the classes of ``kind`` are not replaced (an autoscaler launches them)."""
        for name in self.core.settings.cluster.of_kind(kind):
            self.rules.stop_replacing(name)

    def launch_when_available(
        self, node_class: str, launch: Callable[[], None], refused: Callable[[], None]
    ) -> None:
        """An autoscaler's launch of the class named ``node_class``, subject to its capacity as
        a replacement is."""
        self.rules.launch_when_available(node_class, launch, refused)

    # ------------------------------------------------------------------ live evictions

    def request(self, event: EvictRequest) -> Evicted:
        """A live storm (CLI, HTTP API, Python API): evict at once, reason ``manual``; refused
        before the run's time 0, once it is ending, and for nodes the shell does not own."""
        core = self.core
        if self.state == "ended":
            return Evicted((), "not_running", f"run {core.run_id} is ending: no more evictions")
        if self.state == "starting":
            nodes = core.nodes.values()
            up = sum(1 for n in nodes if n.status in ("up", "draining"))
            return Evicted(
                (),
                "not_running",
                f"run {core.run_id} has not started: its cluster is coming up ({up} of "
                f"{len(nodes)} nodes up); evictions are taken from its time 0, once every node is up; "
                "try again in a few seconds",
            )
        if event.nodes is not None:
            foreign = [n for n in event.nodes if n not in core.nodes or n in event.foreign]
            if foreign:
                return Evicted(
                    (),
                    "foreign",
                    f"refusing to evict {', '.join(foreign)}: not live nodes of run {core.run_id}",
                )
            victims = list(event.nodes)
        else:
            _, victims = self.rules.choose(event.spec, self.manual)
        return Evicted(tuple(v for v in victims if self.evict(v, "manual")))

    def evict(self, node_id: str, reason: Reason) -> bool:
        """Kill the node (``KillNode``: SIGKILL, disk destroyed), journal it, and have it replaced."""
        node = self.core.nodes.get(node_id)
        if node is None or not node.alive or node_id in self.evicted:
            return False
        self.evicted.add(node_id)
        tasks_running = len(node.running)
        bytes_lost = self.core.stored_bytes().get(node_id, 0)
        self.doomed.add(node_id)
        lifetime = self.rules.lifetimes.get(node_id)
        self.core.record_eviction(node, reason, lifetime, tasks_running, bytes_lost)
        self._record_timing(node, reason, lifetime)
        self.core.kill(node_id)
        self.rules.killed_now(node.class_name)
        return True

    def _record_timing(self, node: NodeRecord, reason: Reason, lifetime: float | None) -> None:
        """For ``testbed chaos check``: the lifetime drawn and lived (trace seconds, from the
        rules' launch to this kill), the lead its notice promised and the one it had (wall)."""
        started = self.rules.started.get(node.node_id)
        noticed_at, promised, intended = self.noticed.get(node.node_id, (None, None, None))
        now = self.core.journal.now()
        self.core.journal.event(
            "eviction_timing",
            node=node.node_id,
            reason=reason,
            drawn_s=lifetime,
            actual_s=None if started is None else self.clock.now() - started,
            promised_s=promised,
            intended_s=intended,
            lead_s=None if noticed_at is None else now - noticed_at,
            **{"class": node.class_name},
        )

    # ------------------------------------------------------------------ the rules' world

    def candidates(self) -> Sequence[EvictableNode]:
        cluster = self.core.settings.cluster
        return [
            NodeView(
                n.node_id,
                n.node_class,  # type: ignore[arg-type]
                n.slots,
                n.memory_mb,
                launched=n.launched_t,
                running=self.core.running_views(n),
                zone=cluster[n.class_name].zone_of(n.ordinal),
            )
            for n in self.core.nodes.values()
            if n.status in ("up", "draining")
        ]

    def stored_bytes(self) -> dict[str, int]:
        return self.core.stored_bytes()

    def alive(self, node_id: str) -> bool:
        node = self.core.nodes.get(node_id)
        return node is not None and node.alive and node_id not in self.evicted

    def node_class(self, node_id: str) -> str:
        """The node's class's name."""
        return self.core.nodes[node_id].class_name

    def rebalance(self, node_id: str) -> None:
        """A rebalance recommendation: journaled and shown to policies (``NodeView.rebalance``);
        the node keeps working, as on AWS, until a notice or a kill."""
        self.core.nodes[node_id].rebalance_at = self.core.journal.now()
        self.core.journal.event("rebalance_recommendation", node=node_id)

    def warn(self, node_id: str, seconds_left: float) -> None:
        core = self.core
        node = core.nodes[node_id]
        notice = self.rules.classes[self.node_class(node_id)].notice
        core.drain(node, "eviction_notice")
        seconds = core.time.trace(seconds_left)
        kill_at = self.clock.now() + seconds_left
        intended = min(notice, kill_at - self.rules.started.get(node_id, -math.inf))
        self.noticed[node_id] = (core.journal.now(), seconds, core.time.trace(intended))
        core.send(node_id, EvictionNotice(node_id=node_id, seconds=seconds))
        core.journal.event("eviction_notice", node=node_id, seconds=core.time.trace(notice))

    def kill_at(self, node_id: str) -> float | None:
        """When the node's eviction notice says it dies (run seconds); None: no notice."""
        notice = self.noticed.get(node_id)
        return notice[0] + notice[1] if notice is not None else None

    def kill(self, node_id: str, reason: Reason, storm: int | None) -> None:
        self.evict(node_id, reason)

    def launch(self, node_class: str) -> None:
        self.node_launched(self.core.launch_node(node_class))

    def capacity_changed(self, node_class: str, until: float | None) -> None:
        if until is None:
            self.core.journal.event("capacity_available", **{"class": node_class})
        else:
            self.core.journal.event(
                "capacity_unavailable", until_s=self._run_s(until), **{"class": node_class}
            )

    def launch_waiting(self, node_class: str, until: float) -> None:
        self.core.journal.event("launch_waiting", until_s=self._run_s(until), **{"class": node_class})

    def launch_refused(self, node_class: str, requested: float) -> None:
        self.core.journal.event("launch_refused", requested_s=self._run_s(requested), **{"class": node_class})

    def _run_s(self, trace_s: float) -> float:
        """Run seconds (the journal's clock) of a trace time."""
        return trace_s / self.clock.time_scale

    def storm_fired(self, event: StormEvent, candidates: Sequence[EvictableNode], victims: list[str]) -> None:
        self.core.journal.event("storm", storm=event.storm, firing=event.event, victims=victims)

    def slowed(self, node_id: str, factor: float, episode: int, began: bool) -> None:
        self.core.journal.event("slowdown_episode", node=node_id, episode=episode, factor=factor, began=began)
        self.core.put(SlowNode(node_id, factor))
