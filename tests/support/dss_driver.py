"""DSS's method as a test oracle: apply a scheduler's decisions on a virtual clock, no master.

The YARN-ME paper's simulator (DSS) does not run tasks: a task's end is its start plus its
model's duration at the memory it was given. This driver does the same with our scheduler
objects, bypassing the master core and its messages, which makes it an independent reference
for the simulator (``--backend sim``), not a second simulator of the testbed:
tests/policies/test_dss_oracle.py checks the two agree on DSS traces, and
benchmarks/yarn_me_dss.py prints its figure beside the core's as the peer.

Give it nodes (their running tasks are background load that ends at its expected end), jobs
made of stages (a stage's tasks become pending when the previous stage is done), a scheduler,
and the *true* runtime of a task given its memory. It asks the scheduler at every event (a job
arrival or a task end), checks every decision against the cluster (an over-committed node or
an unknown task is a :class:`SchedulingError`), and jumps the clock to the next event.

With ``heartbeat_s`` it asks the scheduler only at multiples of it (YARN's node heartbeat: a
node reports the tasks that ended, and is offered work, once an interval), as DSS does. Tasks
still end at their true end and a job at its last task's; what waits for the heartbeat is the
reuse of the freed resources.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace

from master.schedulers.yarn import ModelLookup, ModelSource
from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    JobView,
    LogDecision,
    NodeView,
    PendingTask,
    Reserve,
    RunningTask,
    Scheduler,
)

Runtime = Callable[[PendingTask, int], float]


class SchedulingError(RuntimeError):
    """A scheduler decision the cluster cannot honour."""


@dataclass(frozen=True, slots=True)
class SimJob:
    job_id: str
    submitted: float
    stages: tuple[tuple[PendingTask, ...], ...]
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class TaskRun:
    task_id: str
    job_id: str
    node_id: str
    memory_mb: int
    elastic: bool
    start: float
    end: float
    predicted_duration_s: float | None


@dataclass(frozen=True, slots=True)
class SimResult:
    finished: dict[str, float]
    """Job id -> completion time (end of its last task)."""
    jct: dict[str, float]
    """Job id -> completion time minus submission time."""
    runs: tuple[TaskRun, ...]
    log: tuple[LogDecision, ...]
    reservations: tuple[tuple[float, Reserve], ...]
    unfinished: tuple[str, ...]
    """Jobs that could never finish (no event left while they had work)."""


def model_runtime(models: ModelSource) -> Runtime:
    """True runtime = the model's penalized duration (the task's estimate if it has no model)."""
    lookup = ModelLookup(models)

    def runtime(task: PendingTask, memory_mb: int) -> float:
        model = lookup(task)
        return task.est_duration_s if model is None else model.penalized_duration(memory_mb)

    return runtime


@dataclass(slots=True)
class _Job:
    spec: SimJob
    stage: int = 0
    pending: list[PendingTask] = field(default_factory=list)
    running: int = 0
    done: int = 0
    left_in_stage: int = 0

    @property
    def total(self) -> int:
        return sum(len(stage) for stage in self.spec.stages)

    def open_stage(self) -> None:
        self.pending = list(self.spec.stages[self.stage])
        self.left_in_stage = len(self.pending)


@dataclass(slots=True)
class _Cluster:
    nodes: dict[str, NodeView]
    """Each node as last shown to the scheduler; the ``changed`` ones are rebuilt."""
    running: dict[str, list[RunningTask]]
    ends: list[tuple[float, int, str, RunningTask]]
    """A heap of the running tasks' true ends: (end, start order, node id, task)."""
    pending_jobs: list[SimJob]
    submitted: dict[str, float]
    changed: set[str] = field(default_factory=set)
    started: Iterator[int] = field(default_factory=itertools.count)
    pending: dict[str, tuple[PendingTask, _Job]] = field(default_factory=dict)
    """Pending task id -> the task and its job."""
    active: dict[str, _Job] = field(default_factory=dict)
    finished: dict[str, float] = field(default_factory=dict)
    runs: list[TaskRun] = field(default_factory=list)
    log: list[LogDecision] = field(default_factory=list)
    reservations: list[tuple[float, Reserve]] = field(default_factory=list)


def simulate(
    scheduler: Scheduler,
    nodes: Iterable[NodeView],
    jobs: Iterable[SimJob],
    runtime: Runtime,
    *,
    memory_increment_mb: int = 100,
    start: float = 0.0,
    max_rounds: int = 100_000,
    heartbeat_s: float = 0.0,
) -> SimResult:
    specs = sorted(jobs, key=lambda job: (job.submitted, job.job_id))
    if any(not stage for job in specs for stage in job.stages) or any(not j.stages for j in specs):
        raise ValueError("every job needs stages, and every stage at least one task")
    if not (math.isfinite(heartbeat_s) and heartbeat_s >= 0):
        raise ValueError(f"heartbeat_s must be >= 0, got {heartbeat_s}")
    cluster = _Cluster(
        nodes={node.node_id: node for node in nodes},
        running={},
        ends=[],
        pending_jobs=specs,
        submitted={job.job_id: job.submitted for job in specs},
    )
    for node in cluster.nodes.values():
        cluster.running[node.node_id] = list(node.running)
        for task in node.running:
            _push_end(cluster, node.node_id, task, task.expected_end)
    now = start
    for _ in range(max_rounds):
        _arrive(cluster, now)
        snapshot = _snapshot(cluster, now, memory_increment_mb)
        for decision in scheduler.schedule(snapshot):
            _apply(cluster, decision, now, runtime)
        upcoming = _next_event(cluster)
        if upcoming is None:
            return _result(cluster)
        now = max(now, _next_round(upcoming, start, heartbeat_s))
        _complete(cluster, now)
    raise SchedulingError(f"no end after {max_rounds} scheduling rounds")


def _next_round(event: float, start: float, heartbeat_s: float) -> float:
    """The round that sees ``event``: at the event, or at the first heartbeat not before it."""
    if heartbeat_s == 0:
        return event
    return start + math.ceil((event - start) / heartbeat_s - 1e-9) * heartbeat_s


def _push_end(cluster: _Cluster, node_id: str, task: RunningTask, end: float) -> None:
    heapq.heappush(cluster.ends, (end, next(cluster.started), node_id, task))


def _arrive(cluster: _Cluster, now: float) -> None:
    while cluster.pending_jobs and cluster.pending_jobs[0].submitted <= now:
        spec = cluster.pending_jobs.pop(0)
        job = _Job(spec)
        _open_stage(cluster, job)
        cluster.active[spec.job_id] = job


def _open_stage(cluster: _Cluster, job: _Job) -> None:
    job.open_stage()
    cluster.pending.update((task.task_id, (task, job)) for task in job.pending)


def _snapshot(cluster: _Cluster, now: float, increment: int) -> ClusterSnapshot:
    for node_id in cluster.changed:
        cluster.nodes[node_id] = replace(cluster.nodes[node_id], running=tuple(cluster.running[node_id]))
    cluster.changed.clear()
    nodes = tuple(cluster.nodes.values())
    jobs = tuple(
        JobView(
            job_id,
            job.spec.submitted,
            tuple(job.pending),
            running=job.running,
            done_tasks=job.done,
            total_tasks=job.total,
            weight=job.spec.weight,
        )
        for job_id, job in cluster.active.items()
    )
    return ClusterSnapshot(now, nodes, jobs, increment)


def _apply(cluster: _Cluster, decision: object, now: float, runtime: Runtime) -> None:
    if isinstance(decision, Assign):
        _start(cluster, decision, now, runtime)
    elif isinstance(decision, Reserve):
        node = cluster.nodes[decision.node_id]
        cluster.nodes[decision.node_id] = replace(node, reserved_for=decision.job_id)
        cluster.changed.add(decision.node_id)
        cluster.reservations.append((now, decision))
    elif isinstance(decision, LogDecision):
        cluster.log.append(decision)
    else:
        raise SchedulingError(f"unknown decision {decision!r}")


def _start(cluster: _Cluster, assign: Assign, now: float, runtime: Runtime) -> None:
    task, job = _find_pending(cluster, assign.task_id)
    node = cluster.nodes.get(assign.node_id)
    if node is None or node.draining:
        raise SchedulingError(f"{assign.task_id} assigned to unusable node {assign.node_id}")
    running = cluster.running[node.node_id]
    used = sum(t.memory_mb for t in running)
    if len(running) >= node.slots or used + assign.memory_mb > node.memory_mb:
        raise SchedulingError(f"{assign.task_id} over-commits {node.node_id}")
    job.pending.remove(task)
    del cluster.pending[task.task_id]
    job.running += 1
    predicted = assign.predicted_duration_s
    expected_end = now + (predicted if predicted is not None else task.est_duration_s)
    started = RunningTask(
        task.task_id,
        task.job_id,
        assign.memory_mb,
        now,
        expected_end,
        assign.elastic,
        disk_mb_s=assign.disk_mb_s,
    )
    running.append(started)
    cluster.changed.add(node.node_id)
    end = now + runtime(task, assign.memory_mb)
    _push_end(cluster, node.node_id, started, end)
    cluster.runs.append(
        TaskRun(
            task.task_id,
            task.job_id,
            node.node_id,
            assign.memory_mb,
            assign.elastic,
            now,
            end,
            predicted,
        )
    )


def _find_pending(cluster: _Cluster, task_id: str) -> tuple[PendingTask, _Job]:
    found = cluster.pending.get(task_id)
    if found is None:
        raise SchedulingError(f"{task_id} is not a pending task")
    return found


def _next_event(cluster: _Cluster) -> float | None:
    times = [cluster.ends[0][0]] if cluster.ends else []
    if cluster.pending_jobs:
        times.append(cluster.pending_jobs[0].submitted)
    return min(times, default=None)


def _complete(cluster: _Cluster, now: float) -> None:
    """End the tasks due by ``now``, in order of their ends; a job ends at its last task's end."""
    ends = cluster.ends
    while ends and ends[0][0] <= now:
        end, _, node_id, task = heapq.heappop(ends)
        cluster.running[node_id].remove(task)
        cluster.changed.add(node_id)
        job = cluster.active.get(task.job_id)
        if job is not None:
            _task_done(cluster, job, end)


def _task_done(cluster: _Cluster, job: _Job, now: float) -> None:
    job.running -= 1
    job.done += 1
    job.left_in_stage -= 1
    if job.left_in_stage > 0:
        return
    job.stage += 1
    if job.stage < len(job.spec.stages):
        _open_stage(cluster, job)
    else:
        cluster.finished[job.spec.job_id] = now
        del cluster.active[job.spec.job_id]


def _result(cluster: _Cluster) -> SimResult:
    return SimResult(
        finished=dict(cluster.finished),
        jct={job: end - cluster.submitted[job] for job, end in cluster.finished.items()},
        runs=tuple(cluster.runs),
        log=tuple(cluster.log),
        reservations=tuple(cluster.reservations),
        unfinished=tuple(sorted(cluster.active) + [j.job_id for j in cluster.pending_jobs]),
    )
