"""``autoscaler: cloudcoaster``: the transient manager of CloudCoaster (HotCloud'19).

The short-only partition grows and shrinks with transient servers, driven by
the long-load ratio (section 3.2)::

    l_r = N_long / N_total

``N_long``: servers with long tasks, i.e. whose Eagle "runs long" bit is set
(a long task running or queued there, ``eagle.long_node_ids``). ``N_total``:
every server in the cluster that takes work: not draining, and not one of the
on-demand servers being replaced. Above the threshold ``L_r^T`` the manager
adds transient servers, below it removes them, until ``l_r`` meets the
threshold or the budget stops it. In whole servers that is a target::

    n* = min(K, smallest n >= 0 with N_long <= L_r^T * (N_static + n))

with ``N_static`` the servers of ``N_total`` that are not transient. The
budget (section 3.1) is ``K = floor(r * N * p)`` transient servers: ``N``
on-demand servers in the short-only partition, ``p`` the fraction of them
replaced, ``r`` the on-demand/transient price ratio. The replaced on-demand
servers, ``ceil(p * N)`` of them, are the highest ordinals of the short-only
partition; they are drained at the first decision and released once empty.

Section 3.3: adding is aggressive (every server the target lacks, in one
decision), removing conservative (one server per decision, and never a server
younger than the provisioning delay, which would be paid again if the load came
back). Removal drains: a ``Drain`` first, then a ``Release`` once the server
has nothing running or queued. A draining server is taken back (``Undrain``)
before anything new is launched. Launches in flight (``provisioning``) count
as servers already added, so the provisioning delay never causes relaunches.

``decide`` is a pure function of the snapshot and ``provisioning``: the shell
calls it whenever a long task starts or ends, a transient server joins or
leaves, a draining server empties, or after applying its decisions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter, is_not
from typing import Any

from master.options import PolicyOptions
from master.schedulers.eagle import (
    holds_long,
    node_ordinal,
    pending_by_id,
    short_fraction_of,
    short_partition_size,
)
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
from testbed.durations import parse_duration
from testbed.scenario.schema import Scenario, ScenarioError

_EPSILON = 1e-9
_ID = attrgetter("node_id")


@dataclass(frozen=True, slots=True)
class LongLoad:
    """The long-load ratio's two counts."""

    long_servers: int
    total_servers: int

    @property
    def ratio(self) -> float:
        return self.long_servers / self.total_servers if self.total_servers else 0.0


class _Census:
    """What ``decide``, ``facts`` and ``wake_at`` count, kept across snapshots.

    Each server's part of the counts is a function of its view, and views are immutable:
    a snapshot's views that are not the previous snapshot's objects (one C-speed pass finds
    them) are taken out of the counts and put back as they are now, so a snapshot costs
    O(servers changed + servers whose long bit hangs on their queue), not a walk over every
    server in Python. The long bit of a server with no long task running depends on the
    snapshot's pending tasks, so those servers are looked at again in every snapshot.
    """

    def __init__(self, short_on_demand: int, replaced: int) -> None:
        self.kept = short_on_demand - replaced
        self.short_on_demand = short_on_demand
        self.views: dict[str, NodeView] = {}
        """Every server of the last snapshot, by id."""
        self.nodes: tuple[NodeView, ...] = ()
        """The last snapshot's servers, in its order: a snapshot of as many is compared with it
        position by position (a server at a position whose view is the same object is
        unchanged; any other is recounted, and a server gone shows in ``views``' size)."""
        self.short: set[str] = set()
        """On-demand servers of the short-only partition."""
        self.replaced: frozenset[str] = frozenset()
        self.draining: set[str] = set()
        self.transients: dict[str, NodeView] = {}
        self.taking = 0
        """Servers not draining."""
        self.taking_static = 0
        """Servers not draining and not transient."""
        self.running_long: set[str] = set()
        """Servers not draining with a long task running (their long bit is set)."""
        self.queue_only: dict[str, NodeView] = {}
        """Servers not draining, with no long task running and a queue."""
        self.counted = 0
        self.counted_static = 0
        self.long_servers = 0

    def update(self, snapshot: ClusterSnapshot) -> None:
        nodes, views, short = snapshot.nodes, self.views, self.short
        previous, self.nodes = self.nodes, nodes
        if len(previous) == len(nodes):  # as a rule the same servers in the same order
            changed = list(compress(nodes, map(is_not, nodes, previous)))
        else:
            changed = list(compress(nodes, map(is_not, map(views.get, map(_ID, nodes)), nodes)))
        short_changed = False
        for view in changed:
            node_id = view.node_id
            old = views.get(node_id)
            if old is not None:
                self._forget(old)
            views[node_id] = view
            self._add(view)
            if (node_id in short) != _short_on_demand(view):
                short_changed = True
                short.symmetric_difference_update((node_id,))
        if len(views) != len(nodes):  # servers gone since the last snapshot
            present = set(map(_ID, nodes))
            for node_id in [n for n in views if n not in present]:
                self._forget(views.pop(node_id))
                if node_id in short:
                    short_changed = True
                    short.discard(node_id)
        if short_changed:
            ranked = sorted(short, key=node_ordinal)
            self.replaced = frozenset(ranked[self.kept : self.short_on_demand])
        self._count(snapshot)

    def _count(self, snapshot: ClusterSnapshot) -> None:
        """``N_total`` (and its on-demand part) and ``N_long``: the servers not draining and
        not replaced, and those of them whose long bit is set."""
        replaced = [self.views[n] for n in self.replaced if n not in self.draining]
        self.counted = self.taking - len(replaced)
        self.counted_static = self.taking_static - len(replaced)  # replaced servers are on-demand
        long_servers = len(self.running_long) - sum(v.node_id in self.running_long for v in replaced)
        if self.queue_only:
            pending = pending_by_id(snapshot)
            long_servers += sum(
                holds_long(v, pending) for v in self.queue_only.values() if v.node_id not in self.replaced
            )
        self.long_servers = long_servers

    def _add(self, view: NodeView) -> None:
        node_id = view.node_id
        if view.node_class == "transient":
            self.transients[node_id] = view
        if view.draining:
            self.draining.add(node_id)
            return
        self.taking += 1
        self.taking_static += view.node_class != "transient"
        if any(task.long for task in view.running):
            self.running_long.add(node_id)
        elif view.queued:
            self.queue_only[node_id] = view

    def _forget(self, view: NodeView) -> None:
        node_id = view.node_id
        self.transients.pop(node_id, None)
        if view.draining:
            self.draining.discard(node_id)
            return
        self.taking -= 1
        self.taking_static -= view.node_class != "transient"
        self.running_long.discard(node_id)
        self.queue_only.pop(node_id, None)


def _short_on_demand(node: NodeView) -> bool:
    return node.node_class == "reserved" and node.partition == "short"


def _is_idle(node: NodeView) -> bool:
    return not node.running and not node.queued


class CloudCoasterAutoscaler(Autoscaler):
    """Resizes the short-only partition with transient servers (see the module doc).

    ``threshold``: ``L_r^T`` in (0, 1]; the paper uses 0.95.
    ``r``: on-demand/transient price ratio (> 0); the paper uses 1, 2, 3.
    ``p``: fraction of the short-only partition's on-demand servers replaced, in [0, 1].
    ``provisioning_delay_s``: the delay the shell applies to a launch (the paper:
    120 s of trace time), in the snapshot's clock; here it is also the minimum
    age of a transient server before it may be drained.
    ``short_on_demand``: ``N``, the on-demand servers of the short-only partition
    of the static cluster (``eagle.short_partition_size``).
    """

    needs_current_jobs = False
    """It reads the jobs only for the long flag of the tasks queued on servers."""

    class Options(PolicyOptions):
        """``policy.options.cloudcoaster``: ``provisioning_delay`` in trace time (``120s``)."""

        threshold: float = 0.95
        r: float = 3
        p: float = 0.5
        provisioning_delay: str | float = "120s"

    def __init__(
        self,
        *,
        threshold: float,
        r: float,
        p: float,
        provisioning_delay_s: float,
        short_on_demand: int,
    ) -> None:
        if not 0 < threshold <= 1:
            raise ValueError(f"threshold must be in (0, 1], got {threshold}")
        if r <= 0:
            raise ValueError(f"r must be > 0, got {r}")
        if not 0 <= p <= 1:
            raise ValueError(f"p must be in [0, 1], got {p}")
        if provisioning_delay_s < 0:
            raise ValueError(f"provisioning_delay_s must be >= 0, got {provisioning_delay_s}")
        if short_on_demand < 0:
            raise ValueError(f"short_on_demand must be >= 0, got {short_on_demand}")
        self.threshold = threshold
        self.r = r
        self.p = p
        self.provisioning_delay_s = provisioning_delay_s
        self.short_on_demand = short_on_demand
        self._census_kept = _Census(short_on_demand, self.replaced)
        self._seen: ClusterSnapshot | None = None

    @classmethod
    def from_scenario(cls, options: Mapping[str, Any], scenario: Scenario) -> CloudCoasterAutoscaler:
        """``policy.options.cloudcoaster``: it resizes Eagle's short-only partition, so it needs
        ``scheduler: eagle``; its ``provisioning_delay`` is trace time, given in wall seconds."""
        if scenario.policy.scheduler != "eagle":
            raise ScenarioError(
                [f"policy.autoscaler: cloudcoaster resizes Eagle's short-only partition; "
                 f"it needs scheduler: eagle, found {scenario.policy.scheduler!r}"]
            )  # fmt: skip
        return cls.sized(options, scenario)

    @classmethod
    def sized(cls, options: Mapping[str, Any], scenario: Scenario) -> CloudCoasterAutoscaler:
        """The autoscaler ``options`` describe on the scenario's cluster (its budget is known
        before the run: the scale model sizes the cluster for it)."""
        knobs = cls.Options.model_validate(dict(options))
        eagle = scenario.policy.options.get("eagle", {})
        return cls(
            threshold=knobs.threshold,
            r=knobs.r,
            p=knobs.p,
            provisioning_delay_s=scenario.trace(parse_duration(knobs.provisioning_delay)),
            short_on_demand=short_partition_size(scenario.kind_count("reserved"), short_fraction_of(eagle)),
        )

    @classmethod
    def budget_before_run(cls, options: Mapping[str, Any], scenario: Scenario) -> int:
        """The budget ``options`` give on the scenario's cluster, before the run (the scale model
        sizes ``dilation: auto`` for it: ``testbed.settings.dilation.peak_cores``)."""
        try:
            return cls.sized(options, scenario).budget
        except (ValueError, TypeError) as exc:
            raise ScenarioError([f"policy.options.cloudcoaster: {exc}"]) from None

    @property
    def budget(self) -> int:
        """``K = floor(r * N * p)``: the most transient servers alive or in flight at once."""
        return math.floor(self.r * self.short_on_demand * self.p + _EPSILON)

    @property
    def replaced(self) -> int:
        """On-demand servers of the short-only partition taken out: ``ceil(p * N)``."""
        return math.ceil(self.p * self.short_on_demand - _EPSILON)

    def replaced_ids(self, snapshot: ClusterSnapshot) -> frozenset[str]:
        """The replaced servers: short-only on-demand ones ranked ``N - ceil(p*N) + 1 .. N``.

        Ranked by ordinal among those in the snapshot, so nodes joining late or
        out of order still leave exactly the ``N - ceil(p*N)`` lowest ones.
        """
        return self._census(snapshot).replaced

    def long_load(self, snapshot: ClusterSnapshot) -> LongLoad:
        """``l_r`` as observed: servers taking work, and those among them with long tasks."""
        census = self._census(snapshot)
        return LongLoad(census.long_servers, census.counted)

    def target(self, snapshot: ClusterSnapshot) -> int:
        """``n*``: the transient servers that bring ``l_r`` to the threshold, within budget."""
        census = self._census(snapshot)
        needed = math.ceil(census.long_servers / self.threshold - census.counted_static - _EPSILON)
        return min(self.budget, max(0, needed))

    def facts(self, snapshot: ClusterSnapshot) -> dict[str, int]:
        """Journaled with each decision: the long load's two counts and the target ``n*``."""
        load = self.long_load(snapshot)
        return {
            "long_servers": load.long_servers,
            "total_servers": load.total_servers,
            "target": self.target(snapshot),
        }

    def decide(self, snapshot: ClusterSnapshot, provisioning: int) -> list[ScaleDecision]:
        """Scale decisions for this snapshot; ``provisioning``: transient launches in flight.

        Drains and releases come in the snapshot's order of nodes; they are rare, so the
        nodes are walked only when there is one."""
        census = self._census(snapshot)
        replaced, views = census.replaced, census.views
        drain = {n for n in replaced if not views[n].draining}
        decisions: list[ScaleDecision] = [
            Drain(n.node_id, "on-demand server replaced by transient budget")
            for n in _in_order(snapshot, drain)
        ]
        resize = self._resize(snapshot, provisioning)
        undrained = {d.node_id for d in resize if isinstance(d, Undrain)}
        decisions += resize
        release = {
            n
            for n in census.draining
            if _is_idle(views[n])
            and n not in undrained
            and (views[n].node_class == "transient" or n in replaced)
        }
        decisions += [Release(n.node_id, "drained") for n in _in_order(snapshot, release)]
        return decisions

    def wake_at(self, snapshot: ClusterSnapshot, provisioning: int) -> float | None:
        """When ``decide`` will change its answer with no event in between, if ever.

        A removal waits for a server to reach the provisioning delay in age;
        the shell sets a timer for that time and calls ``decide`` again.
        """
        active = [n for n in self._census(snapshot).transients.values() if not n.draining]
        if len(active) + provisioning <= self.target(snapshot):
            return None
        ages = [n.launched + self.provisioning_delay_s for n in active]
        return min((t for t in ages if t > snapshot.now), default=None)

    def _census(self, snapshot: ClusterSnapshot) -> _Census:
        """The census brought up to ``snapshot`` (once: the shell asks ``decide``, ``facts``
        and ``wake_at`` of the same one)."""
        if self._seen is not snapshot:
            self._census_kept.update(snapshot)
            self._seen = snapshot
        return self._census_kept

    def _resize(self, snapshot: ClusterSnapshot, provisioning: int) -> list[ScaleDecision]:
        transients = list(self._census(snapshot).transients.values())
        active = [n for n in transients if not n.draining]
        target = self.target(snapshot)
        planned = len(active) + provisioning
        if planned < target:
            return self._grow(target - planned, transients)
        if planned > target:
            return self._shrink(snapshot.now, active)
        return []

    @staticmethod
    def _grow(missing: int, transients: list[NodeView]) -> list[ScaleDecision]:
        """Take draining servers back first, then launch the rest.

        This stays within the budget: the target is at most ``K``, and every
        transient server (active, draining or in flight) is either counted in
        ``planned`` or taken back before anything is launched.
        """
        draining = sorted((n for n in transients if n.draining), key=_busiest_first)
        decisions: list[ScaleDecision] = [
            Undrain(n.node_id, "long-load ratio above threshold") for n in draining[:missing]
        ]
        launch = Launch("transient", "long-load ratio above threshold", partition="short")
        return decisions + [launch] * (missing - len(decisions))

    def _shrink(self, now: float, active: list[NodeView]) -> list[ScaleDecision]:
        """Drain one server: the idlest of those older than the provisioning delay."""
        old_enough = [n for n in active if n.launched + self.provisioning_delay_s <= now]
        if not old_enough:
            return []
        idlest = min(old_enough, key=_idlest_first)
        return [Drain(idlest.node_id, "long-load ratio below threshold")]


def _in_order(snapshot: ClusterSnapshot, node_ids: set[str]) -> list[NodeView]:
    """The views of ``node_ids`` in the snapshot's order (none: no walk)."""
    return [n for n in snapshot.nodes if n.node_id in node_ids] if node_ids else []


def _work(node: NodeView) -> int:
    return len(node.running) + len(node.queued)


def _busiest_first(node: NodeView) -> tuple[int, int, str]:
    return (-_work(node), *node_ordinal(node.node_id))


def _idlest_first(node: NodeView) -> tuple[int, int, str]:
    """The least work first; ties: the highest ordinal (the most recently numbered) first."""
    number, node_id = node_ordinal(node.node_id)
    return (_work(node), -number, node_id)
