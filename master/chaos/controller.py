"""The chaos controller at run time: the chaos rules on the run's clock, carried out for real.

The rules (``master.chaos.rules``) are those ``testbed chaos plan`` runs on a
virtual clock; here a ``RealClock`` fires them at their wall times and the
controller is their world: a notice drains the node and tells its agent, a
kill is real (the provider kills the node with SIGKILL and destroys its disk;
the master learns of it the way it would of any crash: the broker's Last Will,
or missed heartbeats), a replacement is a real launch. docs/chaos.md says the
semantics.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import math
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Literal

import numpy as np

from master.chaos.rules import ChaosRules, Reason, StormEvent
from master.chaos.select import EvictableNode
from master.core.nodes import NodeRecord
from master.policies.base import NodeView
from master.ports import ChaosPort
from master.providers.base import ForeignNodeError
from testbed.protocol import EvictionNotice, NodeClass
from testbed.scenario_chaos import EvictSpec

log = logging.getLogger("chaos")


TIMER_SLACK_S = 0.001
"""An event loop runs a timer up to its clock's resolution early: a launch retried at the end
of a capacity outage that comes within this many wall seconds of it goes ahead."""


class NotRunning(Exception):
    """A live eviction outside the run (before its time 0, or as it ends); the message says when."""


class RealClock:
    """Trace time on the event loop: an action runs at its wall time (trace / time_scale after
    the run's time 0), simultaneous ones in the order of ``Clock.at``, as on the virtual clock."""

    def __init__(self, wall_now: Callable[[], float], time_scale: float) -> None:
        self.wall_now = wall_now
        self.time_scale = time_scale
        self._due: list[tuple[float, int, int, Callable[[], None]]] = []
        self._order = itertools.count()
        self._timers: list[asyncio.TimerHandle] = []

    def now(self) -> float:
        return self.wall_now() * self.time_scale

    def at(self, when: float, priority: int, action: Callable[[], None]) -> None:
        heapq.heappush(self._due, (when, priority, next(self._order), action))
        delay = max(0.0, (when - self.now()) / self.time_scale)
        self._timers.append(asyncio.get_running_loop().call_later(delay, self._fire))

    def _fire(self) -> None:
        """One timer, one action: the first due, whichever timer of a tie fires first."""
        _, _, _, action = heapq.heappop(self._due)
        action()

    def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()


class ChaosController:
    def __init__(self, master: ChaosPort) -> None:
        self.master = master
        scenario = master.scenario
        self.clock = RealClock(master.journal.now, scenario.time_scale)
        self.rules = ChaosRules(scenario, self.clock, self)
        self.noticed: dict[str, tuple[float, float, float]] = {}
        """Each warned node's notice: when it went out, the wall seconds it promised, and the
        lead the model intended (the class's notice, or the whole lifetime if shorter)."""
        self.evicted: set[str] = set()
        """Nodes whose kill has begun: the provider's kill takes a moment, and a second
        request in that moment (a manual eviction just after a storm's kill) is moot."""
        self._work: set[asyncio.Task[None]] = set()
        self._manual = np.random.default_rng([scenario.seed, 0xC4A05])
        self.state: Literal["starting", "running", "ended"] = "starting"
        """Live evictions are taken only while ``running``: between ``start`` (the run's time 0,
        once its initial cluster is up) and ``stop``, so every eviction is on the run's clock."""

    @property
    def doomed(self) -> set[str]:
        """Nodes under an eviction notice or being evicted."""
        return self.rules.doomed

    def start(self) -> None:
        """At run start: storms are timed from the run's time 0, initial nodes' lifetimes from now.

        A resumed run starts later than time 0: storms already past are not replayed.
        """
        for node in list(self.master.nodes.values()):
            self.node_launched(node)
        self.rules.start(since=self.master.resumed_from * self.clock.time_scale)
        self.state = "running"

    def stop(self) -> None:
        self.clock.stop()
        self.state = "ended"

    def node_launched(self, node: NodeRecord) -> None:
        self.rules.launched(node.node_id, node.node_class, node.ordinal)  # type: ignore[arg-type]
        lifetime = self.rules.lifetimes.get(node.node_id)
        if lifetime is not None:
            self.master.journal.event(
                "lifetime_drawn", node=node.node_id, lifetime_s=lifetime, **{"class": node.node_class}
            )

    def replace_lost(self, node: NodeRecord) -> None:
        """A node lost to something else than our eviction (a crash, silence) is replaced as an
        evicted one would be; a reserved node always (the run depends on its reserved capacity)."""
        if self.rules.replace_lost(node.node_class):  # type: ignore[arg-type]
            self.master.journal.event("node_replacing", node=node.node_id, **{"class": node.node_class})

    def stop_replacing(self, node_class: str) -> None:
        """Evicted nodes of the class are not replaced (an autoscaler launches what it needs)."""
        self.rules.stop_replacing(node_class)  # type: ignore[arg-type]

    def launch_wait(self, node_class: str, waited: float) -> float | None:
        """An autoscaler's launch that has waited ``waited`` wall seconds for capacity, subject
        to it as a replacement is: wall seconds it must still wait (0: go ahead), or None,
        refused; a wait or a refusal is journaled."""
        requested_trace = self.clock.now() - waited * self.clock.time_scale
        due = self.clock.now() + TIMER_SLACK_S * self.clock.time_scale  # a retry may fire a hair early
        when = self.rules.launch_verdict(node_class, requested_trace, due)  # type: ignore[arg-type]
        if when is None:
            self.launch_refused(node_class, requested_trace)  # type: ignore[arg-type]
            return None
        if when <= due:
            return 0.0
        self.launch_waiting(node_class, when)  # type: ignore[arg-type]
        return (when - self.clock.now()) / self.clock.time_scale

    def unavailable(self) -> frozenset[str]:
        return self.rules.unavailable()  # type: ignore[return-value]

    # ------------------------------------------------------------------ the rules' world

    def candidates(self) -> Sequence[EvictableNode]:
        return [
            NodeView(
                n.node_id,
                n.node_class,  # type: ignore[arg-type]
                n.slots,
                n.memory_mb,
                launched=n.launched_t,
                running=self.master.running_views(n),
                zone=getattr(self.master.scenario.cluster, n.node_class).zone_of(n.ordinal),
            )
            for n in self.master.nodes.values()
            if n.status in ("up", "draining")
        ]

    def stored_bytes(self) -> dict[str, int]:
        return self.master.stored_bytes()

    def alive(self, node_id: str) -> bool:
        node = self.master.nodes.get(node_id)
        return node is not None and node.alive and node_id not in self.evicted

    def node_class(self, node_id: str) -> NodeClass:
        return self.master.nodes[node_id].node_class  # type: ignore[return-value]

    def rebalance(self, node_id: str) -> None:
        """A rebalance recommendation: journaled and shown to policies (``NodeView.rebalance``);
        the node keeps working, as on AWS, until a notice or a kill."""
        self.master.nodes[node_id].rebalance_at = self.master.journal.now()
        self.master.journal.event("rebalance_recommendation", node=node_id)

    def warn(self, node_id: str, seconds_left: float) -> None:
        node = self.master.nodes[node_id]
        notice_s = self.master.scenario.trace(self.rules.classes[self.node_class(node_id)].notice)
        self.master.drain(node, "eviction_notice")
        seconds = self.master.scenario.trace(seconds_left)
        kill_at = self.clock.now() + seconds_left
        notice = self.rules.classes[self.node_class(node_id)].notice
        intended = min(notice, kill_at - self.rules.started.get(node_id, -math.inf))
        self.noticed[node_id] = (self.master.journal.now(), seconds, self.master.scenario.trace(intended))
        self.master.send(node_id, EvictionNotice(node_id=node_id, seconds=seconds))
        self.master.journal.event("eviction_notice", node=node_id, seconds=notice_s)

    def kill(self, node_id: str, reason: Reason, storm: int | None) -> None:
        self._spawn(self.evict(node_id, reason))

    def launch(self, node_class: NodeClass) -> None:
        async def launch() -> None:
            node = await self.master.launch_node(node_class)
            self.node_launched(node)

        self._spawn(launch())

    def capacity_changed(self, node_class: NodeClass, until: float | None) -> None:
        if until is None:
            self.master.journal.event("capacity_available", **{"class": node_class})
        else:
            self.master.journal.event(
                "capacity_unavailable", until_s=self._run_s(until), **{"class": node_class}
            )

    def launch_waiting(self, node_class: NodeClass, until: float) -> None:
        self.master.journal.event("launch_waiting", until_s=self._run_s(until), **{"class": node_class})

    def launch_refused(self, node_class: NodeClass, requested: float) -> None:
        self.master.journal.event(
            "launch_refused", requested_s=self._run_s(requested), **{"class": node_class}
        )

    def _run_s(self, trace_s: float) -> float:
        """Run seconds (the journal's clock) of a trace time."""
        return trace_s / self.clock.time_scale

    def storm_fired(self, event: StormEvent, candidates: Sequence[EvictableNode], victims: list[str]) -> None:
        self.master.journal.event("storm", storm=event.storm, firing=event.event, victims=victims)

    def _spawn(self, coroutine: Coroutine[Any, Any, Any]) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._work.add(task)
        task.add_done_callback(self._work.discard)

    # ------------------------------------------------------------------ evictions

    async def evict(self, node_id: str, reason: Reason) -> bool:
        """SIGKILL the node and destroy its disk, journal it, and schedule its replacement."""
        node = self.master.nodes.get(node_id)
        if (
            node is None
            or not node.alive
            or node_id in self.evicted
            or not self.master.provider.owns(node_id)
        ):
            return False
        self.evicted.add(node_id)
        tasks_running = len(node.running)
        bytes_lost = self.master.stored_bytes().get(node_id, 0)
        self.doomed.add(node_id)
        lifetime = self.rules.lifetimes.get(node_id)
        self.master.record_eviction(node, reason, lifetime, tasks_running, bytes_lost)
        self._record_timing(node, reason, lifetime)
        await self.master.provider.evict(node_id)
        self.rules.killed_now(node.node_class)  # type: ignore[arg-type]
        return True

    def _record_timing(self, node: NodeRecord, reason: Reason, lifetime: float | None) -> None:
        """For ``testbed chaos check``: the lifetime drawn and lived (trace seconds, from the
        rules' launch to this kill), the lead its notice promised and the one it had (wall)."""
        started = self.rules.started.get(node.node_id)
        noticed_at, promised, intended = self.noticed.get(node.node_id, (None, None, None))
        now = self.master.journal.now()
        self.master.journal.event(
            "eviction_timing",
            node=node.node_id,
            reason=reason,
            drawn_s=lifetime,
            actual_s=None if started is None else self.clock.now() - started,
            promised_s=promised,
            intended_s=intended,
            lead_s=None if noticed_at is None else now - noticed_at,
            **{"class": node.node_class},
        )

    async def evict_now(self, evict: EvictSpec, named: list[str] | None = None) -> list[str]:
        """A live storm (CLI, HTTP API, Python API): evict at once, reason ``manual``.
        ``NotRunning`` before the run's time 0 and once it is ending."""
        self._refuse_unless_running()
        if named:
            foreign = [n for n in named if n not in self.master.nodes or not self.master.provider.owns(n)]
            if foreign:
                raise ForeignNodeError(
                    f"refusing to evict {', '.join(foreign)}: not live nodes of run {self.master.run_id}"
                )
            victims = named
        else:
            _, victims = self.rules.choose(evict, self._manual)
        done = await asyncio.gather(*(self.evict(v, "manual") for v in victims))
        return [v for v, ok in zip(victims, done, strict=True) if ok]

    def _refuse_unless_running(self) -> None:
        if self.state == "ended":
            raise NotRunning(f"run {self.master.run_id} is ending: no more evictions")
        if self.state == "starting":
            nodes = self.master.nodes.values()
            up = sum(1 for n in nodes if n.status in ("up", "draining"))
            raise NotRunning(
                f"run {self.master.run_id} has not started: its cluster is coming up ({up} of "
                f"{len(nodes)} nodes up); evictions are taken from its time 0, once every node is up; "
                "try again in a few seconds"
            )
