"""The speculation interface: which running task gets a second attempt, and where.

A speculator is pure, like every policy: it reads a ``SpeculationSnapshot`` (each running
attempt's progress score and rate, each task group's finished durations, each node's free
room and eviction notice) and returns ``Speculate`` decisions. The master checks them: a
task has at most two attempts at once, never two on one node, and a copy needs a free slot
and the task's memory there. Times are wall seconds; a policy's thresholds given in trace
time are converted once, when it is built (``master.policy_setup``).

Progress scores follow Hadoop's definition: a map task's is the fraction of its input read;
a reduce (or iterate) task's runs through copy, sort and reduce phases, a third each, each
by the fraction of its data done.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from testbed.api.policy import NodeClass


@dataclass(frozen=True, slots=True)
class AttemptView:
    """One running attempt of a task."""

    task_id: str
    job_id: str
    stage: int
    index: int
    attempt: int
    node_id: str
    started: float
    memory_mb: int = 0
    """Its memory (a copy gets as much)."""
    score: float = 0.0
    """Its progress score in [0, 1], as its node last reported it (0 before any report)."""
    rate: float = 0.0
    """Its progress rate: score per second since it started (0 before any report)."""
    speculative: bool = False
    """A copy launched by speculation (the task's other attempt runs elsewhere)."""
    copies: int = 1
    """How many attempts of its task run now (1 or 2)."""

    def time_left(self) -> float:
        """LATE's estimate of its time to finish, (1 - score) / rate; infinite at rate 0."""
        return (1.0 - self.score) / self.rate if self.rate > 0 else float("inf")


@dataclass(frozen=True, slots=True)
class TaskGroup:
    """A job's stage: Hadoop's task category, Spark's task set."""

    job_id: str
    stage: int
    tasks: int
    pending: int
    """Its tasks not started yet (Hadoop and Spark speculate only once none waits)."""
    finished_s: tuple[float, ...] = ()
    """The durations of its tasks' successful attempts, in wall seconds."""


@dataclass(frozen=True, slots=True)
class SpeculationNode:
    node_id: str
    node_class: NodeClass
    slots: int
    free_slots: int
    free_memory_mb: int
    draining: bool = False
    kill_at: float | None = None
    """When its eviction notice says it will be killed (None: no notice)."""
    finished_tasks: int = 0
    """How many attempts succeeded on it (LATE's node speed counts them: a node known slow
    stays slow while it runs nothing)."""
    finished_rate: float = 0.0
    """The mean progress rate of those attempts: 1 / duration each (0 while none)."""


@dataclass(frozen=True, slots=True)
class SpeculationSnapshot:
    now: float
    attempts: tuple[AttemptView, ...]
    groups: tuple[TaskGroup, ...]
    nodes: tuple[SpeculationNode, ...]

    @property
    def total_slots(self) -> int:
        return sum(node.slots for node in self.nodes if not node.draining)

    def group(self, job_id: str, stage: int) -> TaskGroup | None:
        for group in self.groups:
            if (group.job_id, group.stage) == (job_id, stage):
                return group
        return None


@dataclass(frozen=True, slots=True)
class Speculate:
    """Launch a second attempt of a running task on ``node_id`` now."""

    task_id: str
    node_id: str
    reason: str = ""


class Speculator(Protocol):
    """Which running tasks get a copy. ``name`` labels the run (summary, report)."""

    name: str = ""

    def speculate(self, snapshot: SpeculationSnapshot) -> list[Speculate]: ...
