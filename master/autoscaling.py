"""The autoscaler at run time: applies Launch/Drain/Undrain/Release to real nodes.

The decisions come from the pure autoscaler (``master.policies.cloudcoaster``);
this shell follows docs/cloudcoaster.md section 6:

- ``decide`` runs after every scheduling pass (every task start or end, node
  join or loss, arrival), so it sees every event the paper recomputes ``l_r``
  on (a long task queued, started or ended, a transient server added or
  removed, a draining server emptied), and again after its own decisions are
  applied, until it has nothing more to say. It is a pure function of the
  snapshot, so calls between those events repeat the previous answer.
- ``wake_at`` sets a timer for a removal that only time makes possible.
- ``Launch``: a transient node starts after the provisioning delay (trace
  time / time_scale); until it is up it counts as ``provisioning``.
- ``Drain``/``Undrain``: the master's draining flag (no new tasks; the node
  still runs its queue). ``Release``: the provider stops the node gracefully.
- ``NodeView.launched`` of a transient server is the time it joined (came
  up), so the minimum age before a removal counts from when it could first
  take work, not from its process launch (the agent's start-up would eat it).
- Nodes under an eviction notice are left out of the autoscaler's snapshot:
  they are on their way out, so it may replace them, and it must not take them
  back. The chaos controller does not replace revoked transient servers under
  an autoscaler: the autoscaler relaunches them when its target needs them.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any

from master.policies.base import Autoscaler, ClusterSnapshot, Drain, Launch, Release, ScaleDecision, Undrain
from master.policies.static import StaticAutoscaler
from master.ports import ScalingPort

log = logging.getLogger("autoscaling")
MAX_ROUNDS = 64
_WAKE_SLACK_S = 0.001


class AutoscalingShell:
    def __init__(self, master: ScalingPort, autoscaler: Autoscaler) -> None:
        self.master = master
        self.autoscaler = autoscaler
        self.enabled = not isinstance(autoscaler, StaticAutoscaler)
        self.delay_s = float(autoscaler.provisioning_delay_s)
        self.waiting = 0
        """Launches decided and not yet started (in their provisioning delay)."""
        self._joining: set[str] = set()
        self._joined: dict[str, float] = {}
        self._work: set[asyncio.Task[None]] = set()
        self._timers: list[asyncio.TimerHandle] = []
        self._wake: asyncio.TimerHandle | None = None
        self._last_count: tuple[int, int, int] | None = None
        self._running = False

    @property
    def provisioning(self) -> int:
        """Launches not yet joined: in their delay, or started and not yet up."""
        launching = sum(1 for n in self._joining if self.master.nodes[n].status == "launching")
        return self.waiting + launching

    def start(self) -> None:
        """At run start (the initial nodes are up): from now on every scheduling pass decides."""
        if not self.enabled:
            return
        self._running = True
        self.master.chaos.stop_replacing("transient")
        self.master.kick()

    async def stop(self) -> None:
        """Cancel the timers and wait for launches and releases under way (no process left behind)."""
        self._running = False
        for timer in self._timers:
            timer.cancel()
        if self._wake is not None:
            self._wake.cancel()
        await asyncio.gather(*self._work, return_exceptions=True)

    # ------------------------------------------------------------------ decisions

    def step(self) -> None:
        """Decide and apply until the autoscaler has nothing more to say; then set the wake timer."""
        if not self._running:
            return
        for _ in range(MAX_ROUNDS):
            snapshot = self.snapshot()
            decisions = self.autoscaler.decide(snapshot, self.provisioning)
            if not decisions:
                break
            self._journal(snapshot, decisions)
            for decision in decisions:
                self._apply(decision)
            self.master.kick()
        else:
            log.warning("the autoscaler still had decisions after %d rounds", MAX_ROUNDS)
        self._journal_count()
        self._set_wake(snapshot)

    def snapshot(self) -> ClusterSnapshot:
        """The master's snapshot without the nodes under an eviction notice, with join times."""
        snapshot, _ = self.master.snapshot()
        for view in snapshot.nodes:
            if view.node_id in self._joining:
                self._joined.setdefault(view.node_id, snapshot.now)
        doomed = self.master.chaos.doomed
        joined = self._joined
        nodes = tuple(
            view  # most views: no copy (a copy per node per step was most of a 4,000-node round)
            if joined.get(view.node_id, view.launched) == view.launched
            else dataclasses.replace(view, launched=joined[view.node_id])
            for view in snapshot.nodes
            if view.node_id not in doomed
        )
        return dataclasses.replace(snapshot, nodes=nodes)

    def _apply(self, decision: ScaleDecision) -> None:
        if isinstance(decision, Launch):
            self.waiting += 1
            loop = asyncio.get_running_loop()
            self._timers.append(loop.call_later(self.delay_s, self._launch, decision.node_class))
            return
        node = self.master.nodes.get(decision.node_id)
        if node is None:
            return
        if isinstance(decision, Drain):
            self.master.drain(node, decision.reason)
        elif isinstance(decision, Undrain):
            self.master.undrain(node, decision.reason)
        elif isinstance(decision, Release):
            self.master.release_node(node, decision.reason)  # the provider stops it (``ReleaseNode``)

    def _launch(self, node_class: str, waited: float = 0.0) -> None:
        """Launch, once the class has capacity (docs/chaos.md, "Capacity"); a refusal is final.
        ``waited``: wall seconds this launch has waited for capacity so far."""
        wait = self.master.chaos.launch_wait(node_class, waited) if self._running else None
        if wait is None:
            self.waiting -= 1
        elif wait > 0:
            loop = asyncio.get_running_loop()
            self._timers.append(loop.call_later(wait, self._launch, node_class, waited + wait))
        else:
            self._spawn(self._start_node(node_class))

    async def _start_node(self, node_class: str) -> None:
        try:
            node = await self.master.launch_node(node_class)
        finally:
            self.waiting -= 1
        self._joining.add(node.node_id)
        self.master.chaos.node_launched(node)
        self.master.kick()

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._work.add(task)
        task.add_done_callback(self._work.discard)

    def _set_wake(self, snapshot: ClusterSnapshot) -> None:
        if self._wake is not None:
            self._wake.cancel()
            self._wake = None
        at = self.autoscaler.wake_at(snapshot, self.provisioning)
        if at is not None:
            delay = max(0.0, at - snapshot.now) + _WAKE_SLACK_S
            self._wake = asyncio.get_running_loop().call_later(delay, self.master.kick)

    # ------------------------------------------------------------------ journal

    def _journal(self, snapshot: ClusterSnapshot, decisions: list[ScaleDecision]) -> None:
        facts: dict[str, Any] = {"provisioning": self.provisioning, **self.autoscaler.facts(snapshot)}
        for decision in decisions:
            self.master.journal.event(
                "autoscale",
                action=type(decision).__name__.lower(),
                node=getattr(decision, "node_id", None),
                reason=decision.reason,
                **facts,
            )

    def _journal_count(self) -> None:
        """A ``transient_servers`` event whenever the number in service, draining or provisioning changes."""
        transients = [n for n in self.master.nodes.values() if n.node_class == "transient"]
        count = (
            sum(n.status in ("up", "draining") for n in transients),
            sum(n.status == "draining" for n in transients),
            self.provisioning,
        )
        if count != self._last_count:
            self._last_count = count
            self.master.journal.event(
                "transient_servers", in_service=count[0], draining=count[1], provisioning=count[2]
            )
