"""The autoscaler in the core: its decisions applied as Launch/Drain/Undrain/Release.

The decisions come from the pure autoscaler (``master.autoscalers.cloudcoaster``);
this part follows docs/cloudcoaster.md section 6:

- ``decide`` runs after every scheduling round (every task start or end, node
  join or loss, arrival), so it sees every event the paper recomputes ``l_r``
  on (a long task queued, started or ended, a transient server added or
  removed, a draining server emptied), and again after its own decisions are
  applied, until it has nothing more to say. It is a pure function of the
  snapshot, so calls between those events repeat the previous answer. One that
  still decides after ``MAX_ROUNDS`` rounds at one instant never settles: that
  is a bug, and ``AutoscalerUnsettled`` ends the run naming what kept coming.
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
from collections import Counter
from itertools import islice
from operator import attrgetter
from typing import Any

from master.autoscalers.static import StaticAutoscaler
from master.core.node_views import VISIBLE
from master.core.nodes import NodeRecord
from master.core.ports import ScalingCore
from testbed.api.policy import (
    Autoscaler,
    ClusterSnapshot,
    Drain,
    Launch,
    NodeView,
    Release,
    ScaleDecision,
    Undrain,
)
from testbed.journal.events import Autoscale

MAX_ROUNDS = 64
MAX_SHOWN = 6
"""Distinct decisions an ``AutoscalerUnsettled`` names, the most repeated first."""
WAKE_SLACK_S = 0.001
SCALING = 30
"""Priority of the autoscaler's timers at the same instant (after arrivals and the ticker)."""
ENDED = ("lost", "gone")
"""The statuses a node never leaves."""
_ID = attrgetter("node_id")
NAMED_FACTS = Autoscale.__optional_keys__ - {"facts"}
"""The facts an ``autoscale`` event has a field of (CloudCoaster's)."""


class AutoscalerUnsettled(RuntimeError):
    """``decide`` still had decisions after ``MAX_ROUNDS`` rounds at one instant: it never
    settles (a bug in the autoscaler, or in how its decisions are applied). The run ends
    with it (``master_error``), naming the decisions that kept coming."""

    def __init__(self, now: float, kept: Counter[str]) -> None:
        common = ", ".join(f"{decision} x{n}" for decision, n in kept.most_common(MAX_SHOWN))
        more = f" and {len(kept) - MAX_SHOWN} more" if len(kept) > MAX_SHOWN else ""
        super().__init__(
            f"the autoscaler still had decisions after {MAX_ROUNDS} rounds at {now:.3f}s: {common}{more}"
        )


def _described(decision: ScaleDecision) -> str:
    """``drain reserved-3`` (a launch: ``launch transient``), and its reason."""
    target = getattr(decision, "node_id", None) or getattr(decision, "node_class", "")
    return f"{type(decision).__name__.lower()} {target} ({decision.reason})"


class Scaling:
    def __init__(self, core: ScalingCore, autoscaler: Autoscaler) -> None:
        self.core = core
        self.autoscaler = autoscaler
        self.enabled = not isinstance(self.autoscaler, StaticAutoscaler)
        self.delay_s = float(self.autoscaler.provisioning_delay_s)
        self.waiting = 0
        """Launches decided and not yet started (in their provisioning delay, or waiting for capacity)."""
        self.joining: set[str] = set()
        """Launched nodes not yet seen up (not yet in a snapshot, and not ended)."""
        self.joined: dict[str, float] = {}
        """When each node launched by a decision was first seen up (until it ends)."""
        self._fixed: dict[str, tuple[NodeView, NodeView]] = {}
        """Per joined node, its last view and that view with ``launched`` the join time."""
        self._transients: list[NodeRecord] = []
        """The transient nodes not ended (``_journal_count``), adopted from ``core.nodes``' end."""
        self._known = 0
        self.last_count: tuple[int, int, int] | None = None
        self.running = False
        self.wake = 0
        """The current wake timer's number: an earlier one that fires is moot."""

    @property
    def provisioning(self) -> int:
        """Launches not yet joined: in their delay, or started and not yet up."""
        nodes = self.core.nodes
        launching = sum(1 for n in self.joining if nodes[n].status == "launching")
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

    def step(self, seen: ClusterSnapshot | None = None) -> None:
        """Decide and apply until the autoscaler has nothing more to say; then set the wake timer.

        ``seen``: the snapshot of the scheduling round just run, if any (see ``snapshot``)."""
        if not self.running:
            return
        kept: Counter[str] = Counter()
        for _ in range(MAX_ROUNDS):
            snapshot = self.snapshot(seen)
            decisions = self.autoscaler.decide(snapshot, self.provisioning)
            if not decisions:
                break
            self._journal(snapshot, decisions)
            for decision in decisions:
                self._apply(decision)
                kept[_described(decision)] += 1
            self.core.kick()
        else:
            raise AutoscalerUnsettled(snapshot.now, kept)
        self._journal_count()
        self._set_wake(snapshot)

    def snapshot(self, seen: ClusterSnapshot | None = None) -> ClusterSnapshot:
        """The core's snapshot without the nodes under an eviction notice, with join times.

        A snapshot shows the nodes up or draining: a launched node is joined when its status
        is first one of those. Only the joined nodes' views are replaced (each replacement
        built once per view) and the tuple is rebuilt in one C-speed pass, not a walk over
        every node in Python after every round.

        ``seen``: the scheduling round's snapshot at this same instant, taken before its
        decisions. For an autoscaler that does not need the current jobs
        (``Autoscaler.needs_current_jobs``), its jobs are reused with the nodes as they are now,
        instead of a second walk over every job (the core's snapshot, a third of a simulated
        day's CPU twice a round). CloudCoaster (under Eagle) reads the jobs only for the long
        flag of the tasks queued on nodes, and a task queued after the round was pending before
        it, with the same flag: the answers are those of a fresh snapshot
        (tests/core/test_scaling_reuse.py checks it in every step of a run). Any other
        autoscaler sees the jobs as they are now, every ready task in them: the round's
        snapshot shows the tasks it started as pending, and only a window of the ready tasks
        under a scheduler that places the head of the queue (FIFO)."""
        if seen is None or self.autoscaler.needs_current_jobs:
            snapshot, _ = self.core.snapshot()
        else:
            snapshot = dataclasses.replace(seen, nodes=self.core.node_views(), free=None)
        records, now = self.core.nodes, snapshot.now
        for node_id in list(self.joining):
            status = records[node_id].status
            if status in VISIBLE:
                self.joined[node_id] = now
                self.joining.discard(node_id)
            elif status != "launching":  # it ended before it came up
                self.joining.discard(node_id)
        for node_id in [n for n in self.joined if records[n].status not in VISIBLE]:
            del self.joined[node_id]  # ended: it never comes back
            self._fixed.pop(node_id, None)
        doomed = [n for n in self.core.chaos.doomed if records[n].status in VISIBLE]
        if not self.joined and not doomed:
            return snapshot
        ids = list(map(_ID, snapshot.nodes))
        fixes = self._fixes(dict(zip(ids, snapshot.nodes, strict=True)))
        nodes = tuple(map(fixes.get, ids, snapshot.nodes)) if fixes else snapshot.nodes
        if doomed:
            nodes = tuple(view for view in nodes if view.node_id not in doomed)
        return dataclasses.replace(snapshot, nodes=nodes)

    def _fixes(self, views: dict[str, NodeView]) -> dict[str, NodeView]:
        """The joined nodes' views whose ``launched`` is not their join time, with it."""
        fixes = {}
        for node_id, joined in self.joined.items():
            view = views[node_id]
            if view.launched == joined:
                continue
            fixed = self._fixed.get(node_id)
            if fixed is None or fixed[0] is not view:
                fixed = self._fixed[node_id] = (view, dataclasses.replace(view, launched=joined))
            fixes[node_id] = fixed[1]
        return fixes

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

    def _launch(self, kind: str) -> None:
        """The delay is over: launch a node of the first class of ``kind`` (a decision names a
        kind) once the class has capacity (docs/chaos.md, "Capacity"); a refusal is final."""
        name = self.core.settings.cluster.first_of(kind)
        if not self.running or name is None:
            self.waiting -= 1
            return
        self.core.chaos.launch_when_available(name, lambda: self._start_node(name), self._refused)

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
        """An ``autoscale`` event per decision, with the autoscaler's facts: a fact the event
        names is that field, any other goes in its ``facts`` (a plugin's facts are its own)."""
        told = self.autoscaler.facts(snapshot)
        facts: dict[str, Any] = {"provisioning": self.provisioning}
        facts.update((name, value) for name, value in told.items() if name in NAMED_FACTS)
        others = {name: value for name, value in told.items() if name not in NAMED_FACTS}
        if others:
            facts["facts"] = others
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
        nodes = self.core.nodes
        if len(nodes) != self._known:  # ``core.nodes`` only grows, in order
            fresh = islice(reversed(nodes.values()), len(nodes) - self._known)
            self._transients += reversed([n for n in fresh if n.node_class == "transient"])
            self._known = len(nodes)
        self._transients = [n for n in self._transients if n.status not in ENDED]
        count = (
            sum(n.status in VISIBLE for n in self._transients),
            sum(n.status == "draining" for n in self._transients),
            self.provisioning,
        )
        if count != self.last_count:
            self.last_count = count
            self.core.journal.event(
                "transient_servers", in_service=count[0], draining=count[1], provisioning=count[2]
            )
