"""The autoscaler in the core: its decisions applied as Launch/Drain/Undrain/Release.

The decisions come from the pure autoscaler (``master.policies.cloudcoaster``);
this part follows docs/cloudcoaster.md section 6:

- ``decide`` runs after every scheduling round (every task start or end, node
  join or loss, arrival), so it sees every event the paper recomputes ``l_r``
  on (a long task queued, started or ended, a transient server added or
  removed, a draining server emptied), and again after its own decisions are
  applied, until it has nothing more to say. It is a pure function of the
  snapshot, so calls between those events repeat the previous answer.
- ``wake_at`` sets a timer for a removal that only time makes possible.
- ``Launch``: a transient node starts after the provisioning delay (run
  seconds), once its class has capacity (the chaos rules' verdict, as for a
  replacement); until it is up it counts as ``provisioning``.
- ``Drain``/``Undrain``: the node's draining flag (no new tasks; the node
  still runs its queue). ``Release``: the node is stopped gracefully.
- ``NodeView.launched`` of a transient server is the time it joined (came
  up), so the minimum age before a removal counts from when it could first
  take work, not from its process launch (the agent's start-up would eat it).
- Nodes under an eviction notice are left out of the autoscaler's snapshot:
  they are on their way out, so it may replace them, and it must not take them
  back. The chaos rules do not replace revoked transient servers under an
  autoscaler: the autoscaler relaunches them when its target needs them.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from master.core.ports import ScalingCore
from master.policies.base import Autoscaler, ClusterSnapshot, Drain, Launch, Release, ScaleDecision, Undrain
from master.policies.static import StaticAutoscaler

log = logging.getLogger("autoscaling")
MAX_ROUNDS = 64
WAKE_SLACK_S = 0.001
SCALING = 30
"""Priority of the autoscaler's timers at the same instant (after arrivals and the ticker)."""


class Scaling:
    def __init__(self, core: ScalingCore, autoscaler: Autoscaler | None) -> None:
        self.core = core
        self.autoscaler = autoscaler if autoscaler is not None else StaticAutoscaler()
        self.enabled = not isinstance(self.autoscaler, StaticAutoscaler)
        self.delay_s = float(self.autoscaler.provisioning_delay_s)
        self.waiting = 0
        """Launches decided and not yet started (in their provisioning delay, or waiting for capacity)."""
        self.joining: set[str] = set()
        self.joined: dict[str, float] = {}
        self.last_count: tuple[int, int, int] | None = None
        self.running = False
        self.wake = 0
        """The current wake timer's number: an earlier one that fires is moot."""

    @property
    def provisioning(self) -> int:
        """Launches not yet joined: in their delay, or started and not yet up."""
        launching = sum(1 for n in self.joining if self.core.nodes[n].status == "launching")
        return self.waiting + launching

    def start(self) -> None:
        """At time 0 (the initial nodes are up): from now on every scheduling round decides."""
        if not self.enabled or self.running:
            return
        self.running = True
        self.core.chaos.stop_replacing("transient")
        self.core.kick()

    def stop(self) -> None:
        self.running = False

    # ------------------------------------------------------------------ decisions

    def step(self) -> None:
        """Decide and apply until the autoscaler has nothing more to say; then set the wake timer."""
        if not self.running:
            return
        for _ in range(MAX_ROUNDS):
            snapshot = self.snapshot()
            decisions = self.autoscaler.decide(snapshot, self.provisioning)
            if not decisions:
                break
            self._journal(snapshot, decisions)
            for decision in decisions:
                self._apply(decision)
            self.core.kick()
        else:
            log.warning("the autoscaler still had decisions after %d rounds", MAX_ROUNDS)
        self._journal_count()
        self._set_wake(snapshot)

    def snapshot(self) -> ClusterSnapshot:
        """The core's snapshot without the nodes under an eviction notice, with join times."""
        snapshot, _ = self.core.snapshot()
        for view in snapshot.nodes:
            if view.node_id in self.joining:
                self.joined.setdefault(view.node_id, snapshot.now)
        doomed, joined = self.core.chaos.doomed, self.joined
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
            self.core.timers.after(self.delay_s, SCALING, lambda: self._launch(decision.node_class))
            return
        node = self.core.nodes.get(decision.node_id)
        if node is None:
            return
        if isinstance(decision, Drain):
            self.core.drain(node, decision.reason)
        elif isinstance(decision, Undrain):
            self.core.undrain(node, decision.reason)
        elif isinstance(decision, Release):
            self.core.release_node(node, decision.reason)

    def _launch(self, node_class: str) -> None:
        """The delay is over: launch once the class has capacity (docs/chaos.md, "Capacity");
        a refusal is final."""
        if not self.running:
            self.waiting -= 1
            return
        self.core.chaos.launch_when_available(
            node_class,  # type: ignore[arg-type]
            lambda: self._start_node(node_class),
            self._refused,
        )

    def _refused(self) -> None:
        self.waiting -= 1

    def _start_node(self, node_class: str) -> None:
        node = self.core.launch_node(node_class)
        self.waiting -= 1
        self.joining.add(node.node_id)
        self.core.chaos.node_launched(node)
        self.core.kick()

    def _set_wake(self, snapshot: ClusterSnapshot) -> None:
        self.wake += 1
        at = self.autoscaler.wake_at(snapshot, self.provisioning)
        if at is not None:
            wake = self.wake
            when = snapshot.now + max(0.0, at - snapshot.now) + WAKE_SLACK_S
            self.core.timers.at(when, SCALING, lambda: self._woken(wake))

    def _woken(self, wake: int) -> None:
        if wake == self.wake:
            self.core.kick()

    # ------------------------------------------------------------------ journal

    def _journal(self, snapshot: ClusterSnapshot, decisions: list[ScaleDecision]) -> None:
        facts: dict[str, Any] = {"provisioning": self.provisioning, **self.autoscaler.facts(snapshot)}
        for decision in decisions:
            self.core.journal.event(
                "autoscale",
                action=type(decision).__name__.lower(),
                node=getattr(decision, "node_id", None),
                reason=decision.reason,
                **facts,
            )

    def _journal_count(self) -> None:
        """A ``transient_servers`` event whenever the number in service, draining or provisioning changes."""
        transients = [n for n in self.core.nodes.values() if n.node_class == "transient"]
        count = (
            sum(n.status in ("up", "draining") for n in transients),
            sum(n.status == "draining" for n in transients),
            self.provisioning,
        )
        if count != self.last_count:
            self.last_count = count
            self.core.journal.event(
                "transient_servers", in_service=count[0], draining=count[1], provisioning=count[2]
            )
