"""The chaos controller at run time: lifetimes, notices, evictions, replacements, storms.

The decisions come from the pure modules (``lifetimes``, ``plan``, ``select``);
this shell sets the timers and carries them out through the master and its
node provider, following the semantics in docs/chaos.md so that a run does
what ``testbed chaos plan`` printed. An eviction is real: the provider kills
the node with SIGKILL and destroys its disk; the master learns of it the way
it would of any crash (the broker's Last Will, or missed heartbeats).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import numpy as np

from master.chaos.lifetimes import LifetimeModel, effective_notice, lifetime_for, parse_lifetime
from master.chaos.plan import StormEvent, storm_events, storm_victim_rng
from master.chaos.select import select_victims
from master.policies.base import NodeView
from master.providers.base import ForeignNodeError
from testbed.protocol import EvictionNotice
from testbed.scenario import ClassChaosSpec, EvictSpec

if TYPE_CHECKING:
    from master.master import Master, NodeRecord

log = logging.getLogger("chaos")
Reason = Literal["lifetime", "storm", "manual"]


@dataclass(frozen=True)
class ClassPolicy:
    model: LifetimeModel
    notice_s: float
    """Wall seconds."""
    replace: bool
    provisioning_delay_s: float
    """Wall seconds."""


class ChaosController:
    def __init__(self, master: Master) -> None:
        self.master = master
        scenario = master.scenario
        self.seed = scenario.seed
        self.classes = {
            "reserved": self._policy(scenario.chaos.reserved),
            "transient": self._policy(scenario.chaos.transient),
        }
        self.doomed: set[str] = set()
        self.evicted: set[str] = set()
        """Nodes whose kill has begun: the provider's kill takes a moment, and a second
        request in that moment (a lifetime expiring just after a storm's kill) is moot."""
        self.lifetimes: dict[str, float] = {}
        self._timers: list[asyncio.TimerHandle] = []
        self._manual = np.random.default_rng([scenario.seed, 0xC4A05])

    def _policy(self, spec: ClassChaosSpec) -> ClassPolicy:
        model = parse_lifetime(spec.lifetime)
        notice = effective_notice(spec.notice, "notice" in spec.model_fields_set, model)
        trace = self.master.scenario.trace
        return ClassPolicy(model, trace(notice), spec.replace, trace(spec.provisioning_delay))

    # ------------------------------------------------------------------ timers

    def start(self) -> None:
        """At run start: storms are timed from the run's time 0, initial nodes' lifetimes from now.

        A resumed run starts later than time 0: storms already past are not replayed.
        """
        loop = asyncio.get_running_loop()
        for node in list(self.master.nodes.values()):
            self.node_launched(node)
        elapsed = self.master.journal.now()
        for event in storm_events(self.master.scenario.chaos.storms, self.seed):
            delay = self.master.scenario.trace(event.at) - elapsed
            if delay >= -1e-3:
                self._later(loop, delay, self._storm, event)

    def stop(self) -> None:
        for timer in self._timers:
            timer.cancel()

    def _later(self, loop: asyncio.AbstractEventLoop, delay: float, callback, *args) -> None:
        self._timers.append(loop.call_later(max(0.0, delay), callback, *args))

    def node_launched(self, node: NodeRecord) -> None:
        policy = self.classes[node.node_class]
        trace_lifetime = lifetime_for(policy.model, self.seed, node.node_class, node.ordinal)
        if trace_lifetime is None:
            return
        lifetime = self.master.scenario.trace(trace_lifetime)
        self.lifetimes[node.node_id] = trace_lifetime
        loop = asyncio.get_running_loop()
        self._later(loop, lifetime - policy.notice_s, self._warn, node.node_id, lifetime)
        self._later(loop, lifetime, self._expire, node.node_id)

    # ------------------------------------------------------------------ actions

    def _warn(self, node_id: str, seconds_left: float) -> None:
        node = self.master.nodes.get(node_id)
        if node is None or not node.alive or node_id in self.doomed:
            return
        policy = self.classes[node.node_class]
        if policy.notice_s <= 0:
            return
        self.doomed.add(node_id)
        self.master.drain(node, "eviction_notice")
        self.master.send(node_id, EvictionNotice(node_id=node_id, seconds=min(seconds_left, policy.notice_s)))
        self.master.journal.event("eviction_notice", node=node_id, seconds=policy.notice_s)

    def _expire(self, node_id: str) -> None:
        asyncio.get_running_loop().create_task(self.evict(node_id, "lifetime"))

    def _storm(self, event: StormEvent) -> None:
        victims = self.choose(event.evict, storm_victim_rng(self.seed, event))
        self.master.journal.event("storm", storm=event.storm, firing=event.event, victims=victims)
        for node_id in victims:
            self._warn_and_kill(node_id, "storm")

    def _warn_and_kill(self, node_id: str, reason: Reason) -> None:
        node = self.master.nodes[node_id]
        notice = self.classes[node.node_class].notice_s
        self._warn(node_id, notice)
        self.doomed.add(node_id)
        loop = asyncio.get_running_loop()
        self._later(loop, notice, lambda: loop.create_task(self.evict(node_id, reason)))

    def choose(self, evict: EvictSpec, rng: np.random.Generator) -> list[str]:
        """Victims among nodes that are up and not already doomed."""
        candidates = [
            NodeView(
                n.node_id,
                n.node_class,
                n.slots,
                n.memory_mb,
                launched=n.launched_t,  # type: ignore[arg-type]
                running=self.master.running_views(n),
            )
            for n in self.master.nodes.values()
            if n.status in ("up", "draining") and n.node_id not in self.doomed
        ]
        return select_victims(candidates, evict, rng, self.master.stored_bytes())

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
        self.master.record_eviction(node, reason, self.lifetimes.get(node_id), tasks_running, bytes_lost)
        await self.master.provider.evict(node_id)
        policy = self.classes[node.node_class]
        if policy.replace:
            loop = asyncio.get_running_loop()
            self._later(loop, policy.provisioning_delay_s, self._replace, node.node_class)
        return True

    def replace_lost(self, node: NodeRecord) -> None:
        """A node lost to something else than our eviction (a crash, silence) is replaced as an
        evicted one would be; a reserved node always (the run depends on its reserved capacity)."""
        policy = self.classes[node.node_class]
        if node.node_class == "reserved" or policy.replace:
            self.master.journal.event("node_replacing", node=node.node_id, **{"class": node.node_class})
            loop = asyncio.get_running_loop()
            self._later(loop, policy.provisioning_delay_s, self._replace, node.node_class)

    def _replace(self, node_class: str) -> None:
        async def launch() -> None:
            node = await self.master.launch_node(node_class)
            self.node_launched(node)

        asyncio.get_running_loop().create_task(launch())

    async def evict_now(self, evict: EvictSpec, named: list[str] | None = None) -> list[str]:
        """A live storm (CLI, HTTP API, Python API): evict at once, reason ``manual``."""
        if named:
            foreign = [n for n in named if n not in self.master.nodes or not self.master.provider.owns(n)]
            if foreign:
                raise ForeignNodeError(
                    f"refusing to evict {', '.join(foreign)}: not live nodes of run {self.master.run_id}"
                )
            victims = named
        else:
            victims = self.choose(evict, self._manual)
        done = await asyncio.gather(*(self.evict(v, "manual") for v in victims))
        return [v for v, ok in zip(victims, done, strict=True) if ok]
