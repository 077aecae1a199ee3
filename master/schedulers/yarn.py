"""``scheduler: yarn``: fair-share job order, full-memory placement, node reservation.

YARN's FairScheduler as the YARN-ME paper (section 3) describes it. Nodes are
served in heartbeat order (the order of ``snapshot.nodes``). A node is offered
to the jobs in queue order: fewest running tasks relative to weight first
(``fair``), or submission order (``fifo``). A task is placed only where its full
ideal memory, rounded up to the allocation increment, and a core are free. If
the next task of the job at the head of the queue does not fit, nothing is
allocated and the node is reserved for that job: while the job has pending
tasks, the node takes only that job's tasks. The reservation is lifted when the
job's task is placed there, or when the job has nothing left to run.

The pieces of one scheduling round (job cursors, the queue, node accounting,
decision emission) live here and are shared with ``yarn-me``.
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from operator import attrgetter
from typing import Any, Literal

from master.options import PolicyOptions, validated
from master.profiles import profile_models
from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    Decision,
    JobView,
    LogDecision,
    NodeView,
    PendingTask,
    Reserve,
    Scheduler,
)
from testbed.scenario.schema import Scenario
from testbed.workloads.task_model import TaskModel

Ordering = Literal["fair", "fifo"]
_MEMORY = attrgetter("memory_mb")
_DISK = attrgetter("disk_mb_s")
_DEMAND_KEY = attrgetter("stage", "ideal_memory_mb", "est_duration_s")
"""What a task's demand depends on: tasks with equal keys share one :class:`Demand`."""
ModelSource = Mapping[str | tuple[str, int], TaskModel] | Callable[[PendingTask], TaskModel | None]


def round_up(memory_mb: float, increment_mb: int) -> int:
    """Memory is allocated in increments: round up, and never allocate nothing."""
    steps = math.ceil(memory_mb / increment_mb - 1e-9)
    return max(1, steps) * increment_mb


def queue_key(ordering: Ordering, running: int, job: JobView) -> tuple[float, float, str]:
    """Sort key of a job in the queue; the job id breaks ties deterministically."""
    if ordering == "fifo":
        return (job.submitted, 0.0, job.job_id)
    return (running / max(job.weight, 1e-9), job.submitted, job.job_id)


class ModelLookup:
    """Finds a task's model: a callable, or a mapping keyed ``(job_id, stage)``, then ``job_id``.

    Models describe a job's stage: all tasks of one stage share one model.
    """

    def __init__(self, models: ModelSource | None = None) -> None:
        self._models = models

    def __call__(self, task: PendingTask) -> TaskModel | None:
        if self._models is None:
            return None
        if callable(self._models):
            return self._models(task)
        found = self._models.get((task.job_id, task.stage))
        return found if found is not None else self._models.get(task.job_id)


@dataclass(frozen=True, slots=True)
class Demand:
    """What a task asks for: the model when one is known, else the task's own fields."""

    memory_mb: int
    """The regular allocation: the ideal memory rounded up to the increment."""
    ideal_memory_mb: int
    duration_s: float
    model: TaskModel | None


class JobState:
    """One job during one round: which of its pending tasks are still to place."""

    __slots__ = (
        "_demands",
        "_lookup",
        "_no_task_for",
        "cursor",
        "increment",
        "latest_end",
        "placed",
        "remaining",
        "running",
        "view",
    )

    def __init__(self, view: JobView, lookup: ModelLookup, increment_mb: int) -> None:
        self.view = view
        self.running = view.running
        self.remaining = len(view.pending)
        self.cursor = 0
        self.placed: set[int] = set()
        self.latest_end = -math.inf
        self.increment = increment_mb
        self._lookup = lookup
        self._demands: dict[tuple[int, int, float], Demand] = {}
        self._no_task_for: set[str] = set()

    def next_task(self, node_class: str) -> int | None:
        """Position of the first unplaced pending task allowed on ``node_class``."""
        pending = self.view.pending
        while self.cursor < len(pending) and self.cursor in self.placed:
            self.cursor += 1
        if node_class in self._no_task_for:
            return None
        for position in range(self.cursor, len(pending)):
            if position not in self.placed and node_class in pending[position].allowed_classes:
                return position
        self._no_task_for.add(node_class)
        return None

    def demand(self, position: int) -> Demand:
        task = self.view.pending[position]
        key = _DEMAND_KEY(task)
        found = self._demands.get(key)
        if found is None:
            found = self._demands[key] = self._resolve(task)
        return found

    def distinct_demands(self) -> list[Demand]:
        """One demand per distinct (stage, size) among the pending tasks: one C-level pass."""
        last = {key: position for position, key in enumerate(map(_DEMAND_KEY, self.view.pending))}
        return [self.demand(position) for position in last.values()]

    def uniform(self) -> bool:
        """Do all pending tasks share one demand (one stage, one size)? One C-level pass."""
        return len(set(map(_DEMAND_KEY, self.view.pending))) <= 1

    def mark_placed(self, position: int, end: float) -> None:
        self.placed.add(position)
        self.remaining -= 1
        self.running += 1
        self.latest_end = max(self.latest_end, end)

    def _resolve(self, task: PendingTask) -> Demand:
        model = self._lookup(task)
        if model is None:
            ideal = task.ideal_memory_mb
            return Demand(round_up(ideal, self.increment), ideal, task.est_duration_s, None)
        ideal = model.ideal_memory_mb
        return Demand(round_up(ideal, self.increment), ideal, model.ideal_duration_s, model)


class JobQueue:
    """Jobs with tasks left to place, in queue order, kept sorted as tasks start."""

    def __init__(self, jobs: Iterable[JobState], ordering: Ordering) -> None:
        self._ordering = ordering
        self._jobs = {job.view.job_id: job for job in jobs if job.remaining > 0}
        self._entries = sorted(self._key(job) for job in self._jobs.values())

    def in_order(self) -> Iterator[JobState]:
        """Jobs in queue order. Stop iterating after :meth:`started` changed the queue."""
        for entry in self._entries:
            yield self._jobs[entry[-1]]

    def started(self, job: JobState, previous_running: int) -> None:
        """Re-sort ``job`` after one of its tasks started (``previous_running`` gave its key)."""
        old = queue_key(self._ordering, previous_running, job.view)
        del self._entries[bisect_left(self._entries, old)]
        if job.remaining > 0:
            insort(self._entries, self._key(job))
        else:
            del self._jobs[job.view.job_id]

    def _key(self, job: JobState) -> tuple[float, float, str]:
        return queue_key(self._ordering, job.running, job.view)


class NodeState:
    """One node during one round: what is still free, and what started on it this round."""

    __slots__ = (
        "elastic_disk_mb_s",
        "free_memory_mb",
        "free_slots",
        "reserved_for",
        "started",
        "view",
    )

    def __init__(self, view: NodeView) -> None:
        self.view = view
        self.free_slots = view.free_slots
        self.free_memory_mb = view.memory_mb - sum(map(_MEMORY, view.running))
        self.reserved_for = view.reserved_for
        self.elastic_disk_mb_s = sum(map(_DISK, view.running))  # of elastic tasks; regular: 0
        self.started: list[tuple[float, int]] = []

    def take(self, memory_mb: int, end: float, disk_mb_s: float) -> None:
        self.free_slots -= 1
        self.free_memory_mb -= memory_mb
        self.elastic_disk_mb_s += disk_mb_s
        self.started.append((end, memory_mb))

    def earliest_start(self, memory_mb: int, now: float) -> float:
        """When a task of ``memory_mb`` could start here at the earliest, from expected ends."""
        free_memory, free_slots = self.free_memory_mb, self.free_slots
        if free_memory >= memory_mb and free_slots > 0:
            return now
        releases = [(max(task.expected_end, now), task.memory_mb) for task in self.view.running]
        for end, memory in sorted(releases + self.started):
            free_memory += memory
            free_slots += 1
            if free_memory >= memory_mb and free_slots > 0:
                return end
        return math.inf


class Round:
    """The mutable working state of one ``schedule()`` call, and the decisions it emits."""

    def __init__(self, snapshot: ClusterSnapshot, lookup: ModelLookup, ordering: Ordering) -> None:
        self.snapshot = snapshot
        self.now = snapshot.now
        self.increment = snapshot.memory_increment_mb
        self.ordering = ordering
        self.jobs = {
            job.job_id: JobState(job, lookup, self.increment) for job in snapshot.jobs if job.pending
        }
        self.queue = JobQueue(self.jobs.values(), ordering)
        self.decisions: list[Decision] = []

    def can_allocate(self, node: NodeState) -> bool:
        return node.free_slots > 0 and node.free_memory_mb >= self.increment

    def pending_job(self, job_id: str | None) -> JobState | None:
        job = self.jobs.get(job_id) if job_id is not None else None
        return job if job is not None and job.remaining > 0 else None

    def lift_if_stale(self, node: NodeState) -> None:
        """A reservation for a job with nothing left to place is lifted."""
        if node.reserved_for is not None and self.pending_job(node.reserved_for) is None:
            self.lift(node)

    def assign(
        self,
        node: NodeState,
        job: JobState,
        position: int,
        memory_mb: int,
        duration_s: float,
        *,
        elastic: bool = False,
        disk_mb_s: float = 0.0,
        extra: Mapping[str, float] | None = None,
    ) -> None:
        task = job.view.pending[position]
        ideal = job.demand(position).ideal_memory_mb
        node_id = node.view.node_id
        self.decisions.append(Assign(task.task_id, node_id, memory_mb, elastic, duration_s, disk_mb_s))
        detail = {
            "memory_mb": float(memory_mb),
            "ideal_memory_mb": float(ideal),
            "allocation_ratio": memory_mb / ideal,
            "predicted_duration_s": duration_s,
            **(extra or {}),
        }
        label = "elastic_accepted" if elastic else "regular"
        self.decisions.append(LogDecision(job.view.job_id, task.task_id, label, node_id, detail))
        end = self.now + duration_s
        node.take(memory_mb, end, disk_mb_s)
        previous_running = job.running
        job.mark_placed(position, end)
        self.queue.started(job, previous_running)

    def reserve(self, node: NodeState, job: JobState, position: int) -> None:
        node.reserved_for = job.view.job_id
        self.decisions.append(Reserve(node.view.node_id, job.view.job_id))
        self.log(node, job, position, "reserved", {"free_memory_mb": float(node.free_memory_mb)})

    def log(
        self, node: NodeState, job: JobState, position: int, label: str, detail: dict[str, float]
    ) -> None:
        task_id = job.view.pending[position].task_id
        node_id = node.view.node_id
        self.decisions.append(LogDecision(job.view.job_id, task_id, label, node_id, detail))

    def lift(self, node: NodeState) -> None:
        node.reserved_for = None
        self.decisions.append(Reserve(node.view.node_id, None))

    def fits_regularly(self, node: NodeState, job: JobState, position: int) -> bool:
        return job.demand(position).memory_mb <= node.free_memory_mb

    def could_ever_fit(self, node: NodeState, job: JobState, position: int) -> bool:
        return job.demand(position).memory_mb <= node.view.memory_mb


class YarnScheduler(Scheduler):
    """``scheduler: yarn``. ``models`` (optional) override tasks' ideal memory and duration."""

    needs_exposure = False

    class Options(PolicyOptions):
        """``policy.options.yarn``."""

        ordering: Ordering = "fair"

    def __init__(self, ordering: Ordering = "fair", models: ModelSource | None = None) -> None:
        if ordering not in ("fair", "fifo"):
            raise ValueError(f"ordering must be 'fair' or 'fifo', got {ordering!r}")
        self.ordering: Ordering = ordering
        self.lookup = ModelLookup(models)

    @classmethod
    def from_options(cls, options: Mapping[str, Any], models: ModelSource | None = None) -> YarnScheduler:
        """Build from a scenario's ``policy.options``."""
        return cls(models=models, **validated(cls.Options, options))

    @classmethod
    def from_scenario(cls, options: Mapping[str, Any], scenario: Scenario) -> YarnScheduler:
        """``policy.options.yarn``, with the task models of the scenario's profiles."""
        return cls.from_options(options, profile_models(scenario))

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        rnd = Round(snapshot, self.lookup, self.ordering)
        for view in snapshot.nodes:
            if view.draining or (view.free_slots <= 0 and view.reserved_for is None):
                continue
            self._serve(rnd, NodeState(view))
        return rnd.decisions

    def _serve(self, rnd: Round, node: NodeState) -> None:
        """Allocate on one node until it is full, reserved, or nobody fits."""
        while True:
            rnd.lift_if_stale(node)
            if not rnd.can_allocate(node):
                return
            job = rnd.pending_job(node.reserved_for)
            if job is not None:
                changed = self._serve_reserving_job(rnd, node, job)
            else:
                changed = self._serve_queue(rnd, node)
            if not changed:
                return

    def _serve_reserving_job(self, rnd: Round, node: NodeState, job: JobState) -> bool:
        """True if the node changed (task placed or pointless reservation lifted)."""
        position = job.next_task(node.view.node_class)
        if position is None or not rnd.could_ever_fit(node, job, position):
            rnd.lift(node)
            return True
        if not rnd.fits_regularly(node, job, position):
            return False
        demand = job.demand(position)
        rnd.assign(node, job, position, demand.memory_mb, demand.duration_s)
        rnd.lift(node)
        return True

    def _serve_queue(self, rnd: Round, node: NodeState) -> bool:
        for job in rnd.queue.in_order():
            position = job.next_task(node.view.node_class)
            if position is None or not rnd.could_ever_fit(node, job, position):
                continue
            if rnd.fits_regularly(node, job, position):
                demand = job.demand(position)
                rnd.assign(node, job, position, demand.memory_mb, demand.duration_s)
                return True
            rnd.reserve(node, job, position)
            return False
        return False
