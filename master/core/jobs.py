"""A job at runtime: its stages, every task's state, and lineage recovery.

State only, no I/O: the master shell feeds it events (task launched, finished,
failed, node lost) and asks it what may run now. Recovery follows Spark's
lineage model: when a node is lost, tasks running there go back to pending,
outputs stored there are marked lost, and any lost output that an unfinished
task still needs is recomputed, cascading to its own lost parents.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from master.core.lifecycle import JOB, TASK
from master.core.task_records import Copy, JobProgress, TaskRecord
from testbed.api.strategy import JobStatus, TaskKey
from testbed.plan import Dependency, JobPlan
from testbed.wire.protocol import BlockRef, TaskMetrics

MAX_FAILURES = 6


@dataclass
class JobRuntime:
    job_id: str
    name: str
    workload: str
    plan: JobPlan
    submitted: float
    memory_mb: int
    est_duration_s: float = 1.0
    """Estimated task duration in wall seconds (what the scheduler sees)."""
    estimated: bool = False
    """Whether ``est_duration_s`` is the job's own estimate (a sleep job's, ``JobPlanned.estimate_s``),
    not the default that stands for none."""
    long: bool = False
    """Eagle's job class: the estimate reached the scenario's long/short cutoff."""
    stage_memory_mb: tuple[int, ...] = ()
    """Ideal memory of each stage's tasks (``memory_mb`` for stages not listed)."""
    stage_prior_s: tuple[float, ...] = ()
    """Each stage's expected task duration before the run has seen one (``master.stage_prior``;
    (): none, the job's ``est_duration_s`` stands for every stage)."""
    params: dict[str, Any] = field(default_factory=dict)
    started: float | None = None
    finished: float | None = None
    status: JobStatus = "waiting"
    error: str | None = None
    bytes_recomputed: int = 0
    """Output bytes of tasks computed again after a first success (lineage recomputation)."""
    bytes_checkpointed: int = 0
    bytes_pushed: int = 0
    cache_hits: int = 0
    """Task attempts that read their source from their node's input cache (Pado)."""
    cache_misses: int = 0
    """Task attempts that read their source through the cache and kept it there."""
    bytes_from_cache: int = 0
    restarts: int = 0
    """Launches that restarted what a master crash cut short (``--resume``): no relaunches."""
    tasks: dict[TaskKey, TaskRecord] = field(default_factory=dict)
    stage_first_start: dict[int, float] = field(default_factory=dict)
    stage_last_end: dict[int, float] = field(default_factory=dict)
    copies: dict[TaskKey, Copy] = field(default_factory=dict)
    """The running tasks' speculative copies (at most one each)."""
    copy_attempts: dict[TaskKey, set[int]] = field(default_factory=dict)
    """Each task's attempts launched as copies: their rows say ``role: copy``, and a relaunch
    numbers past them."""
    progress: JobProgress = field(init=False, repr=False)
    readers: tuple[tuple[int, ...], ...] = field(init=False, repr=False)
    """Per stage, the later stages that read its outputs (``JobPlan.readers_of``, kept)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "status" and "status" in self.__dict__:
            JOB.check(self.__dict__["status"], value)
        object.__setattr__(self, name, value)

    def __post_init__(self) -> None:
        self.progress = JobProgress(self.plan)
        self.readers = tuple(self.plan.readers_of(stage) for stage in range(len(self.plan.stages)))
        self._by_stage: list[list[TaskRecord]] = []
        for s, stage in enumerate(self.plan.stages):
            records = [TaskRecord(s, i) for i in range(stage.tasks)]
            self._by_stage.append(records)
            for record in records:
                self.tasks[(s, record.index)] = record
                self.progress.add(record)

    # ------------------------------------------------------------------ naming

    def task_id(self, key: TaskKey) -> str:
        return f"{self.job_id}.s{key[0]}.t{key[1]}"

    def key_of(self, task_id: str) -> TaskKey | None:
        job, _, rest = task_id.rpartition(".s")
        stage, _, index = rest.partition(".t")
        if job != self.job_id or not stage.isdigit() or not index.isdigit():
            return None
        key = (int(stage), int(index))
        return key if key in self.tasks else None

    def ideal_memory_mb(self, stage: int) -> int:
        return self.stage_memory_mb[stage] if stage < len(self.stage_memory_mb) else self.memory_mb

    # ------------------------------------------------------------------ readiness

    def parents(self, key: TaskKey, read: bool = False) -> Iterator[TaskKey]:
        """The tasks whose outputs task ``key`` depends on. ``read``: only those it reads once
        launched (``dep_refs``): not a shuffle parent whose partition for it is empty, as a
        Spark reducer never fetches a zero-size block. A task not launched yet waits for every
        parent, empty or not, as a Spark reducer needs every map output's location to start
        (``MapOutputTracker.convertMapStatuses`` fails it on any missing one)."""
        stage, index = key
        for dep in self.plan.stages[stage].deps:
            if dep.kind == "narrow":
                yield (dep.stage, index)
                continue
            partition = index if dep.kind == "shuffle" else 0
            for parent in self._by_stage[dep.stage]:
                sizes = parent.partition_bytes  # () until it succeeded: not known empty
                if not (read and partition < len(sizes) and sizes[partition] == 0):
                    yield (dep.stage, parent.index)

    def ready(self, streamed: frozenset[int] = frozenset()) -> Iterator[TaskKey]:
        """Pending tasks whose every input is available, in stage then index order (lazily,
        so a caller that needs only the head of the queue stops early). Visits pending
        tasks only, and none of a stage waiting for a whole stage's outputs (a shuffle's or a
        broadcast's). A shuffle from a ``streamed`` stage does not wait: its outputs reach the
        task while it runs."""
        stages, progress = self.plan.stages, self.progress
        for s, stage in enumerate(stages):
            if not progress.pending[s]:
                continue
            if any(
                d.kind != "narrow"
                and not (d.kind == "shuffle" and d.stage in streamed)
                and progress.available[d.stage] < stages[d.stage].tasks
                for d in stage.deps
            ):
                continue
            narrow = [self._by_stage[d.stage] for d in stage.deps if d.kind == "narrow"]
            for index in progress.pending_in_order(s, stage.tasks):
                if all(parents[index].available for parents in narrow):
                    yield (s, index)

    def stage_available(self, stage: int) -> bool:
        return self.progress.available[stage] == self.plan.stages[stage].tasks

    def input_refs(self, key: TaskKey) -> tuple[tuple[BlockRef, ...], ...]:
        return tuple(self.dep_refs(key, dep) for dep in self.plan.stages[key[0]].deps)

    def dep_refs(self, key: TaskKey, dep: Dependency) -> tuple[BlockRef, ...]:
        """The blocks task ``key`` reads through one dependency: the producer's copy
        first, then any replica (a checkpoint). Narrow: its parent's whole output; shuffle:
        its own partition of every parent's; broadcast: every parent's whole output."""
        index = key[1]
        stage = self._by_stage[dep.stage]
        parents = [stage[index]] if dep.kind == "narrow" else stage
        partition = index if dep.kind == "shuffle" else 0
        trusted = BlockRef.trusted  # the core's own block ids and locations: not validated again
        return tuple(
            [  # a list, not a generator: 400 refs a reduce in sim-yarn-me-1k
                trusted(p.block, partition, p.locations)  # type: ignore[arg-type]
                for p in parents
                if not p.partition_bytes or p.partition_bytes[partition] > 0
            ]
        )

    # ------------------------------------------------------------------ transitions

    def launched(self, key: TaskKey, node: str, memory_mb: int, now: float, elastic: bool = False) -> int:
        record = self.tasks[key]
        record.status = TASK.next(record.status, "launch")
        record.attempt = self.next_attempt(key)
        record.launches += 1
        if record.retrying_error and record.launches > 1:
            record.error_relaunches += 1
        elif record.restarting:
            self.restarts += 1
        record.retrying_error = record.restarting = False
        record.node = node
        record.memory_mb = memory_mb
        record.started = now
        record.elastic = elastic
        self.stage_first_start.setdefault(key[0], now)
        if self.started is None:
            self.started = now
            self.status = JOB.next(self.status, "start")
        return record.attempt

    def next_attempt(self, key: TaskKey) -> int:
        """The task's next attempt number: past every attempt launched, copies included."""
        copies = self.copy_attempts.get(key)
        return max(self.tasks[key].attempt, *copies) + 1 if copies else self.tasks[key].attempt + 1

    def attempt_on(self, key: TaskKey, node: str) -> tuple[int, float | None]:
        """The attempt of the task that runs on ``node`` and when it started: its copy's there."""
        copy = self.copies.get(key)
        if copy is not None and copy.node == node:
            return copy.attempt, copy.started
        record = self.tasks[key]
        return record.attempt, record.started

    def succeeded(
        self,
        key: TaskKey,
        attempt: int,
        location: str,
        block: str,
        partition_bytes: tuple[int, ...],
        now: float | None = None,
        pushing: bool = False,
    ) -> bool:
        """Record a successful attempt (ended at ``now``); False when it is stale (an older or
        duplicate attempt).

        ``pushing``: the output still has to be pushed and committed (``committed``)
        before anyone may read it."""
        record = self.tasks[key]
        if record.status != "running" or record.attempt != attempt:
            return False
        if now is not None:
            self.stage_last_end[key[0]] = max(now, self.stage_last_end.get(key[0], now))
        record.location = location
        record.replicas = ()
        record.block = block
        record.partition_bytes = partition_bytes
        if pushing:
            record.status = TASK.next(record.status, "succeed_pushing")
            record.available = False
        else:
            self._done(record, "succeed")
        return True

    def committed(self, key: TaskKey, attempt: int, holders: tuple[str, ...]) -> bool:
        """A pushed output was committed on the agents ``holders``; False when stale."""
        record = self.tasks[key]
        if record.status != "pushing" or record.attempt != attempt:
            return False
        record.replicas = holders
        self._done(record, "commit")
        return True

    def _done(self, record: TaskRecord, event: Literal["succeed", "commit"]) -> None:
        if record.completions:
            self.bytes_recomputed += sum(record.partition_bytes)
        record.completions += 1
        record.status = TASK.next(record.status, event)
        record.available = True

    def add_replica(self, key: TaskKey, block: str, url: str) -> bool:
        """A copy of the task's current output now lives at ``url``; False when stale."""
        record = self.tasks[key]
        if record.status != "done" or record.block != block or url in record.replicas:
            return False
        record.replicas = (*record.replicas, url)
        record.available = True
        return True

    def abandon_push(self, key: TaskKey, attempt: int) -> bool:
        """The output could not be pushed whole: compute it again."""
        record = self.tasks[key]
        if record.status != "pushing" or record.attempt != attempt:
            return False
        record.status = TASK.next(record.status, "abandon_push")
        record.node = None
        return True

    def reopen(self, key: TaskKey) -> None:
        """A committed output must be produced and pushed again (its receiver was lost)."""
        record = self.tasks[key]
        if record.status == "done":
            record.status = TASK.next(record.status, "reopen")
            record.available = False
            record.node = None

    def failed(
        self,
        key: TaskKey,
        attempt: int,
        counts_as_failure: bool,
        error: str | None = None,
        fatal: bool = False,
    ) -> bool:
        """Back to pending; False when stale. Too many real failures fail the job, whose error
        ends with the last line of the task's (``error``, e.g. the exception of a bad input);
        a ``fatal`` failure (malformed input data, which every attempt would meet) fails it at once."""
        record = self.tasks[key]
        if record.status != "running" or record.attempt != attempt:
            return False
        record.status = TASK.next(record.status, "fail")
        record.node = None
        record.retrying_error = counts_as_failure
        if counts_as_failure:
            record.failures += 1
            if record.failures >= MAX_FAILURES or fatal:
                if self.status not in JOB.terminal:  # a finished job keeps its verdict
                    self.status = JOB.next(self.status, "fail")
                last = (error or "").strip().splitlines()[-1:]
                reason = f": {last[0]}" if last else ""
                times = "" if fatal else f" {record.failures} times"
                self.error = f"task {self.task_id(key)} failed{times}{reason}"
        self.require_inputs(key)
        return True

    def lose_blocks(self, blocks: set[str]) -> None:
        """Outputs that a fetch could not get are gone: recompute them when needed."""
        for record in self.tasks.values():
            if record.block in blocks and record.status == "done" and not self.is_final(record):
                record.available = False
        self.recover()

    def pushing_on(self, node: str) -> set[TaskKey]:
        """The tasks whose attempt on ``node`` succeeded and is still pushing its output."""
        return {key for key in self.progress.on_node.get(node, ()) if self.tasks[key].status == "pushing"}

    def node_lost(self, node: str, url: str) -> list[TaskKey]:
        """Tasks that were running (or pushing their output) on the lost node, now
        pending again. A stored output is lost when no copy of it survives."""
        interrupted = []
        if self.outputs_final:  # no stored output to lose, no lineage: only what ran there
            for key in sorted(self.progress.on_node.get(node, ())):  # the tasks' order
                record = self.tasks[key]
                record.status = TASK.next(record.status, "node_lost")
                record.node = None
                interrupted.append(key)
            return interrupted
        for key, record in self.tasks.items():
            if record.status in ("running", "pushing") and record.node == node:
                record.status = TASK.next(record.status, "node_lost")
                record.node = None
                interrupted.append(key)
            elif record.status == "done" and not self.is_final(record):
                if record.location == url:
                    record.location = None
                record.replicas = tuple(r for r in record.replicas if r != url)
                record.available = record.location is not None or bool(record.replicas)
        self.recover()
        return interrupted

    def recover(self) -> None:
        """Recompute every lost output that an unfinished task still needs (lineage)."""
        if self.outputs_final:
            return
        for key, record in list(self.tasks.items()):
            if record.status in ("pending", "running"):
                self.require_inputs(key)

    def require_inputs(self, key: TaskKey) -> None:
        """Recompute the lost outputs task ``key`` needs: a running task's, those it reads; a
        pending task's, every parent's (``parents``)."""
        for parent in self.parents(key, read=self.tasks[key].status == "running"):
            record = self.tasks[parent]
            if record.status == "done" and not record.available:
                record.status = TASK.next(record.status, "input_lost")
                self.require_inputs(parent)

    def is_final(self, record: TaskRecord) -> bool:
        return self.plan.stages[record.stage].final

    @property
    def outputs_final(self) -> bool:
        """Every stage is final and reads no other (one stage: sleep jobs, map-only jobs): a
        lost node loses nothing stored, and no lineage is ever recomputed. Such a job skips
        the scans over all its tasks that an eviction makes (at 10,000 nodes, the most of them)."""
        return all(stage.final and not stage.deps for stage in self.plan.stages)

    def count_cache_use(self, metrics: TaskMetrics) -> None:
        self.cache_hits += metrics.cache_hits
        self.cache_misses += metrics.cache_misses
        self.bytes_from_cache += metrics.cache_bytes_read

    # ------------------------------------------------------------------ progress

    def phase_durations(self) -> tuple[float | None, float | None]:
        """(map, reduce) phase durations as in the YARN-ME paper: the map phase runs from the
        first start of a stage-0 task to the last successful end of one; the reduce phase from
        the first start of a later stage's task to the job's finish. None: never started."""
        map_s = reduce_s = None
        if 0 in self.stage_first_start and 0 in self.stage_last_end:
            map_s = self.stage_last_end[0] - self.stage_first_start[0]
        later = [t for stage, t in self.stage_first_start.items() if stage > 0]
        if later and self.finished is not None:
            reduce_s = self.finished - min(later)
        return map_s, reduce_s

    @property
    def complete(self) -> bool:
        """Every final-stage task is done."""
        return self.progress.final_done == self.progress.final_total

    @property
    def relaunched(self) -> int:
        """Relaunches caused by evictions or lost data (a lost node, a lost output to
        recompute, an input that could not be fetched); not ``error_relaunches``, nor the
        ``restarts`` after a master crash."""
        launched_again = sum(max(0, r.launches - 1) for r in self.tasks.values())
        return launched_again - self.error_relaunches - self.restarts

    @property
    def error_relaunches(self) -> int:
        """Relaunches after the task's own failure (error, oom, enospc, killed)."""
        return sum(r.error_relaunches for r in self.tasks.values())

    @property
    def running_count(self) -> int:
        return self.progress.counts["running"]

    @property
    def done_count(self) -> int:
        return self.progress.counts["done"]


LIVE: tuple[JobStatus, ...] = ("waiting", "running")
"""The statuses of a job not ended; the others (``JOB``'s terminal ones) have no way out."""


class LiveJobs:
    """The jobs not ended (waiting or running), in arrival order (``core.jobs``' order): what a
    round's snapshot lists and the run's end counts, without a walk over every job arrived (a
    simulated day's 26,000 in every round). An end is final, so a job is dropped once it is
    seen ended: the jobs listed are always those of ``core.jobs`` with a ``LIVE`` status."""

    def __init__(self) -> None:
        self._jobs: dict[str, JobRuntime] = {}

    def add(self, job: JobRuntime) -> None:
        """A job that joined ``core.jobs`` (submitted, or restored by a resumed run)."""
        self._jobs[job.job_id] = job

    def jobs(self) -> list[JobRuntime]:
        """The jobs not ended now, in arrival order."""
        jobs = self._jobs
        ended = [job_id for job_id, job in jobs.items() if job.status not in LIVE]
        for job_id in ended:
            del jobs[job_id]
        return list(jobs.values())
