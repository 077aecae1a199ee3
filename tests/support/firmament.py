"""Small Firmament situations for the policy tests: nodes, snapshots, the placements a round
decided, an eviction risk from a lifetime model."""

from __future__ import annotations

from master.schedulers.firmament.costs import EvictionRisk
from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    Decision,
    JobView,
    NodeClass,
    NodeView,
    RunningTask,
)
from testbed.chaosmodels.lifetimes import parse_lifetime


def node(
    node_id: str,
    node_class: NodeClass = "reserved",
    *,
    slots: int = 2,
    memory: int = 1000,
    running: int = 0,
    zone: str | None = None,
    launched: float = 0.0,
    **kw: bool,
) -> NodeView:
    busy = tuple(RunningTask(f"{node_id}/busy{i}", "old", 100, 0.0, 1e9) for i in range(running))
    return NodeView(node_id, node_class, slots, memory, busy, launched=launched, zone=zone, **kw)


def snap(nodes: list[NodeView], jobs: list[JobView], now: float = 0.0) -> ClusterSnapshot:
    return ClusterSnapshot(now, tuple(nodes), tuple(jobs))


def placed(decisions: list[Decision]) -> dict[str, str]:
    return {d.task_id: d.node_id for d in decisions if isinstance(d, Assign)}


def risk(lifetime: object) -> EvictionRisk:
    return EvictionRisk(
        {("transient", None): parse_lifetime(lifetime), ("reserved", None): parse_lifetime("none")}
    )
