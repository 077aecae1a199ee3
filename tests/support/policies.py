"""Small scheduling situations for the policy tests: nodes, jobs, tasks, snapshots, reservations."""

from __future__ import annotations

from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    Decision,
    JobView,
    LogDecision,
    NodeClass,
    NodeView,
    PendingTask,
    Reserve,
    RunningTask,
)
from testbed.workloads.task_model import PenaltyCurve

SAWTOOTH = PenaltyCurve(((0.1, 1.6), (0.25, 1.2), (0.5, 1.9), (0.75, 1.3), (0.99, 1.9), (1.0, 1.0)))


def node(
    node_id: str = "n1",
    *,
    slots: int = 4,
    memory: int = 10_000,
    running: tuple[RunningTask, ...] = (),
    reserved_for: str | None = None,
    node_class: NodeClass = "reserved",
    draining: bool = False,
) -> NodeView:
    return NodeView(node_id, node_class, slots, memory, running, draining, reserved_for=reserved_for)


def busy(job_id: str, memory: int, end: float, task_id: str | None = None) -> RunningTask:
    return RunningTask(task_id or f"{job_id}/busy{memory}", job_id, memory, 0.0, end)


def tasks(job_id: str, count: int, memory: int, duration: float = 10.0, **kw) -> tuple:
    return tuple(PendingTask(f"{job_id}/t{i}", job_id, 0, i, memory, duration, **kw) for i in range(count))


def job(
    job_id: str, pending: tuple, *, submitted: float = 0.0, running: int = 0, weight: float = 1.0
) -> JobView:
    return JobView(job_id, submitted, pending, running=running, weight=weight)


def snap(
    nodes: list[NodeView], jobs: list[JobView], now: float = 0.0, increment: int = 100
) -> ClusterSnapshot:
    return ClusterSnapshot(now, tuple(nodes), tuple(jobs), increment)


def assigned(decisions: list[Decision]) -> list[tuple[str, str, int]]:
    return [(d.task_id, d.node_id, d.memory_mb) for d in decisions if isinstance(d, Assign)]


def reservations(decisions: list[Decision]) -> list[tuple[str, str | None]]:
    return [(d.node_id, d.job_id) for d in decisions if isinstance(d, Reserve)]


def labels(decisions: list[Decision]) -> list[tuple[str, str]]:
    return [(d.task_id, d.decision) for d in decisions if isinstance(d, LogDecision)]
