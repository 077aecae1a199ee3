"""A task's state in the master and the job-wide index of it, kept on every transition.

``TaskRecord`` is one task's state; ``JobProgress`` is its job's counts, pending tasks per
stage and tasks held by each node, told of every change of a record's ``status``,
``available`` or ``node`` (``TaskRecord.__setattr__``), so that a scheduling round asks in
O(1) and a lost node finds its tasks without a walk. ``Copy`` is a speculative second
attempt. State only, no I/O; ``master.core.jobs.JobRuntime`` owns them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from master.core.lifecycle import TASK
from testbed.api.strategy import TaskKey, TaskStatus
from testbed.plan import JobPlan

_ON_NODE = ("running", "pushing")
"""The statuses of a task whose node holds it."""


@dataclass(slots=True)
class TaskRecord:
    """One task's state (slotted: a simulated run holds a million of them)."""

    stage: int
    index: int
    progress: JobProgress | None = field(default=None, repr=False, compare=False)
    """Told of every change of ``status``, ``available`` and ``node`` (set by the owning job).
    The first field set after the key: the tracked fields' first values find it (None), not
    an unset slot (an ``AttributeError`` raised and caught for each: a third of a record's
    construction, a million records in sim-10k)."""
    status: TaskStatus = "pending"
    attempt: int = -1
    node: str | None = None
    location: str | None = None
    """The producer's URL while it holds the output."""
    replicas: tuple[str, ...] = ()
    """Other agents holding a copy (a checkpoint, pushed partitions)."""
    block: str | None = None
    available: bool = False
    partition_bytes: tuple[int, ...] = ()
    launches: int = 0
    completions: int = 0
    failures: int = 0
    error_relaunches: int = 0
    """Launches that retried an attempt failed by the task itself (an error, out of memory, a
    full disk), as opposed to relaunches after an eviction or lost data."""
    retrying_error: bool = False
    restarting: bool = False
    """Its next launch restarts what a master crash cut short (``--resume``): no relaunch."""
    memory_mb: int = 0
    started: float | None = None
    elastic: bool = False
    predicted_s: float | None = None
    disk_mb_s: float = 0.0
    """Disk bandwidth the scheduler charged the running attempt to its node (elastic tasks)."""
    pushes: bool = False
    """The running attempt's output is pushed: it counts once committed (the strategy's ``TaskLaunch``)."""
    excluded_nodes: frozenset[str] = frozenset()
    """Nodes where an attempt hit a resource fault (full disk, out of memory): not again there
    (replaced, never changed in place: the empty one is shared by every record)."""
    allowed_classes: frozenset[str] | None = None
    """The node classes the running attempt's task may run on, as its last placement saw them
    (a migration is checked against them); None before its first placement."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _TRACKED:
            if name == "status" and (status := getattr(self, "status", None)) is not None:
                TASK.check(status, value)  # not the first status, set by __init__
            progress = self.progress
            if progress is not None:
                progress.changing(self, name, value)
        object.__setattr__(self, name, value)

    @property
    def locations(self) -> tuple[str, ...]:
        """Every agent holding the output, the producer first."""
        return (self.location, *self.replicas) if self.location else self.replicas


_TRACKED = frozenset({"status", "available", "node"})


@dataclass(slots=True)
class Copy:
    """A speculative second attempt of a running task, on another node (``master.core.copies``)."""

    attempt: int
    node: str
    started: float


class JobProgress:
    """A job's task counts, pending tasks per stage and tasks held by each node, kept up to
    date on every transition.

    Whatever sets a record's ``status``, ``available`` or ``node`` (the job's own methods,
    a resumed run) updates these, so the scheduling round asks in O(1) how many
    tasks run or are done and visits only pending tasks, and a lost node finds the tasks
    it held, not by a walk over every task of the job.
    """

    def __init__(self, plan: JobPlan) -> None:
        sizes = [stage.tasks for stage in plan.stages]
        self.final = [stage.final for stage in plan.stages]
        self.counts: dict[str, int] = {"pending": 0, "running": 0, "pushing": 0, "done": 0}
        self.final_total = sum(size for size, final in zip(sizes, self.final, strict=True) if final)
        self.final_done = 0
        self.available = [0] * len(sizes)
        """Per stage, how many of its tasks' outputs are available."""
        self.pending: list[set[int]] = [set() for _ in sizes]
        self.on_node: dict[str, set[TaskKey]] = {}
        """Per node, the tasks it holds (running or pushing their output there)."""
        self._low = [0] * len(sizes)
        """Per stage, a lower bound of its pending indices."""

    def add(self, record: TaskRecord) -> None:
        self._enter(record, record.status)
        self.available[record.stage] += record.available
        record.progress = self

    def changing(self, record: TaskRecord, name: str, value: Any) -> None:
        old = getattr(record, name)
        if old == value:
            return
        if name != "available":
            self._move(record, name, value)
        if name == "node":
            return
        if name == "available":
            self.available[record.stage] += 1 if value else -1
            return
        self.counts[old] -= 1
        if old == "pending":
            self.pending[record.stage].discard(record.index)
        elif old == "done" and self.final[record.stage]:
            self.final_done -= 1
        self._enter(record, value)

    def _move(self, record: TaskRecord, name: str, value: Any) -> None:
        """Keep ``on_node`` as the record's node and status change."""
        held = record.node if record.status in _ON_NODE else None
        node, status = (value, record.status) if name == "node" else (record.node, value)
        holds = node if status in _ON_NODE else None
        if held == holds:
            return
        key = (record.stage, record.index)
        if held is not None:
            there = self.on_node[held]
            there.discard(key)
            if not there:
                del self.on_node[held]
        if holds is not None:
            self.on_node.setdefault(holds, set()).add(key)

    def _enter(self, record: TaskRecord, status: TaskStatus) -> None:
        self.counts[status] += 1
        if status == "pending":
            self.pending[record.stage].add(record.index)
            self._low[record.stage] = min(self._low[record.stage], record.index)
        elif status == "done" and self.final[record.stage]:
            self.final_done += 1

    def pending_in_order(self, stage: int, size: int) -> Iterator[int]:
        """The stage's pending indices in increasing order: a scan from the lowest pending
        index while they are dense, a sort when they are sparse."""
        pending = self.pending[stage]
        low = self._low[stage]
        while low < size and low not in pending:
            low += 1
        self._low[stage] = low
        if 8 * len(pending) < size - low:
            yield from sorted(pending)
            return
        remaining = len(pending)
        for index in range(low, size):
            if not remaining:
                return
            if index in pending:
                remaining -= 1
                yield index
