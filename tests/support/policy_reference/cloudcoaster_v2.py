"""The CloudCoaster autoscaler before its census was kept across snapshots (reference,
verbatim but for this docstring and its imports): every snapshot was counted afresh, a walk
over every server (``_census``), and ``decide``, ``_resize`` and ``wake_at`` walked the
snapshot's nodes again."""

from __future__ import annotations

import math
from dataclasses import dataclass

from master.autoscalers.cloudcoaster import LongLoad
from master.schedulers.eagle import long_node_ids, node_ordinal
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

_EPSILON = 1e-9


@dataclass(frozen=True, slots=True)
class _Census:
    replaced: frozenset[str]
    """The on-demand servers being replaced."""
    counted: list[NodeView]
    """The servers of ``N_total``: not draining, not being replaced."""
    long_servers: int
    """``N_long``: those of them whose long bit is set."""


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
        self._seen: tuple[ClusterSnapshot, _Census] | None = None

    @property
    def budget(self) -> int:
        """``K = floor(r * N * p)``: the most transient servers alive or in flight at once."""
        return math.floor(self.r * self.short_on_demand * self.p + _EPSILON)

    @property
    def replaced(self) -> int:
        """On-demand servers of the short-only partition taken out: ``ceil(p * N)``."""
        return math.ceil(self.p * self.short_on_demand - _EPSILON)

    def replaced_ids(self, snapshot: ClusterSnapshot) -> frozenset[str]:
        return self._census(snapshot).replaced

    def _replaced_ids(self, snapshot: ClusterSnapshot) -> frozenset[str]:
        """The replaced servers: short-only on-demand ones ranked ``N - ceil(p*N) + 1 .. N``.

        Ranked by ordinal among those in the snapshot, so nodes joining late or
        out of order still leave exactly the ``N - ceil(p*N)`` lowest ones.
        """
        short = sorted(
            (n for n in snapshot.nodes if n.node_class == "reserved" and n.partition == "short"),
            key=lambda n: node_ordinal(n.node_id),
        )
        kept = self.short_on_demand - self.replaced
        return frozenset(n.node_id for n in short[kept : self.short_on_demand])

    def long_load(self, snapshot: ClusterSnapshot) -> LongLoad:
        """``l_r`` as observed: servers taking work, and those among them with long tasks."""
        census = self._census(snapshot)
        return LongLoad(census.long_servers, len(census.counted))

    def target(self, snapshot: ClusterSnapshot) -> int:
        """``n*``: the transient servers that bring ``l_r`` to the threshold, within budget."""
        load = self.long_load(snapshot)
        static = sum(n.node_class != "transient" for n in self._counted(snapshot))
        needed = math.ceil(load.long_servers / self.threshold - static - _EPSILON)
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
        """Scale decisions for this snapshot; ``provisioning``: transient launches in flight."""
        replaced = self.replaced_ids(snapshot)
        decisions: list[ScaleDecision] = [
            Drain(n.node_id, "on-demand server replaced by transient budget")
            for n in snapshot.nodes
            if n.node_id in replaced and not n.draining
        ]
        resize = self._resize(snapshot, provisioning)
        undrained = {d.node_id for d in resize if isinstance(d, Undrain)}
        decisions += resize
        decisions += [
            Release(n.node_id, "drained")
            for n in snapshot.nodes
            if n.draining
            and _is_idle(n)
            and n.node_id not in undrained
            and (n.node_class == "transient" or n.node_id in replaced)
        ]
        return decisions

    def wake_at(self, snapshot: ClusterSnapshot, provisioning: int) -> float | None:
        """When ``decide`` will change its answer with no event in between, if ever.

        A removal waits for a server to reach the provisioning delay in age;
        the shell sets a timer for that time and calls ``decide`` again.
        """
        active = [n for n in snapshot.nodes if n.node_class == "transient" and not n.draining]
        if len(active) + provisioning <= self.target(snapshot):
            return None
        ages = [n.launched + self.provisioning_delay_s for n in active]
        return min((t for t in ages if t > snapshot.now), default=None)

    def _counted(self, snapshot: ClusterSnapshot) -> list[NodeView]:
        return self._census(snapshot).counted

    def _census(self, snapshot: ClusterSnapshot) -> _Census:
        """What ``decide``, ``facts`` and ``wake_at`` count, once per snapshot (the shell asks
        them all of the same one): each is O(servers + pending tasks)."""
        if self._seen is None or self._seen[0] is not snapshot:
            replaced = self._replaced_ids(snapshot)
            counted = [n for n in snapshot.nodes if not n.draining and n.node_id not in replaced]
            long_ids = long_node_ids(snapshot)
            self._seen = (snapshot, _Census(replaced, counted, sum(n.node_id in long_ids for n in counted)))
        return self._seen[1]

    def _resize(self, snapshot: ClusterSnapshot, provisioning: int) -> list[ScaleDecision]:
        transients = [n for n in snapshot.nodes if n.node_class == "transient"]
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


def _work(node: NodeView) -> int:
    return len(node.running) + len(node.queued)


def _busiest_first(node: NodeView) -> tuple[int, int, str]:
    return (-_work(node), *node_ordinal(node.node_id))


def _idlest_first(node: NodeView) -> tuple[int, int, str]:
    """The least work first; ties: the highest ordinal (the most recently numbered) first."""
    number, node_id = node_ordinal(node.node_id)
    return (_work(node), -number, node_id)
