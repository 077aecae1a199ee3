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

from testbed.protocol import BlockRef
from testbed.workloads.plan import JobPlan

TaskKey = tuple[int, int]
Status = Literal["pending", "running", "done"]
MAX_FAILURES = 6


@dataclass
class TaskRecord:
    stage: int
    index: int
    status: Status = "pending"
    attempt: int = -1
    node: str | None = None
    location: str | None = None
    block: str | None = None
    available: bool = False
    partition_bytes: tuple[int, ...] = ()
    launches: int = 0
    failures: int = 0
    memory_mb: int = 0
    started: float | None = None
    elastic: bool = False


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
    long: bool = False
    """Eagle's job class: the estimate reached the scenario's long/short cutoff."""
    params: dict[str, Any] = field(default_factory=dict)
    started: float | None = None
    finished: float | None = None
    status: Literal["waiting", "running", "succeeded", "failed"] = "waiting"
    error: str | None = None
    bytes_recomputed: int = 0
    tasks: dict[TaskKey, TaskRecord] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for s, stage in enumerate(self.plan.stages):
            for i in range(stage.tasks):
                self.tasks[(s, i)] = TaskRecord(s, i)

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

    # ------------------------------------------------------------------ readiness

    def parents(self, key: TaskKey) -> Iterator[TaskKey]:
        stage, index = key
        for dep in self.plan.stages[stage].deps:
            if dep.kind == "narrow":
                yield (dep.stage, index)
            else:
                for i in range(self.plan.stages[dep.stage].tasks):
                    yield (dep.stage, i)

    def ready(self) -> list[TaskKey]:
        """Pending tasks whose every input is available, in stage then index order."""
        stage_available = [
            all(self.tasks[(s, i)].available for i in range(stage.tasks))
            for s, stage in enumerate(self.plan.stages)
        ]
        ready = []
        for key, record in self.tasks.items():
            if record.status != "pending":
                continue
            deps = self.plan.stages[key[0]].deps
            if all(
                self.tasks[(d.stage, key[1])].available if d.kind == "narrow" else stage_available[d.stage]
                for d in deps
            ):
                ready.append(key)
        return ready

    def input_refs(self, key: TaskKey) -> tuple[tuple[BlockRef, ...], ...]:
        stage, index = key
        refs = []
        for dep in self.plan.stages[stage].deps:
            if dep.kind == "narrow":
                parents = [self.tasks[(dep.stage, index)]]
                partition = 0
            else:
                parents = [self.tasks[(dep.stage, i)] for i in range(self.plan.stages[dep.stage].tasks)]
                partition = index
            refs.append(
                tuple(
                    BlockRef(block=p.block, partition=partition, locations=(p.location,))  # type: ignore[arg-type]
                    for p in parents
                    if not p.partition_bytes or p.partition_bytes[partition] > 0
                )
            )
        return tuple(refs)

    # ------------------------------------------------------------------ transitions

    def launched(self, key: TaskKey, node: str, memory_mb: int, now: float, elastic: bool = False) -> int:
        record = self.tasks[key]
        record.status = "running"
        record.attempt += 1
        record.launches += 1
        record.node = node
        record.memory_mb = memory_mb
        record.started = now
        record.elastic = elastic
        if self.started is None:
            self.started = now
            self.status = "running"
        return record.attempt

    def succeeded(
        self, key: TaskKey, attempt: int, location: str, block: str, partition_bytes: tuple[int, ...]
    ) -> bool:
        """Record a successful attempt; False when it is stale (an older or duplicate attempt)."""
        record = self.tasks[key]
        if record.status != "running" or record.attempt != attempt:
            return False
        if record.launches > 1:
            self.bytes_recomputed += sum(partition_bytes)
        record.status = "done"
        record.location = location
        record.block = block
        record.partition_bytes = partition_bytes
        record.available = True
        return True

    def failed(self, key: TaskKey, attempt: int, counts_as_failure: bool) -> bool:
        """Back to pending; False when stale. Too many real failures fail the job."""
        record = self.tasks[key]
        if record.status != "running" or record.attempt != attempt:
            return False
        record.status = "pending"
        record.node = None
        if counts_as_failure:
            record.failures += 1
            if record.failures >= MAX_FAILURES:
                self.status = "failed"
                self.error = f"task {self.task_id(key)} failed {record.failures} times"
        self.require_inputs(key)
        return True

    def lose_blocks(self, blocks: set[str]) -> None:
        """Outputs that a fetch could not get are gone: recompute them when needed."""
        for record in self.tasks.values():
            if record.block in blocks and record.status == "done" and not self.is_final(record):
                record.available = False
        self.recover()

    def node_lost(self, node: str, url: str) -> list[TaskKey]:
        """Tasks that were running on the lost node (now pending again)."""
        interrupted = []
        for key, record in self.tasks.items():
            if record.status == "running" and record.node == node:
                record.status = "pending"
                record.node = None
                interrupted.append(key)
            elif record.status == "done" and record.location == url and not self.is_final(record):
                record.available = False
        self.recover()
        return interrupted

    def recover(self) -> None:
        """Recompute every lost output that an unfinished task still needs (lineage)."""
        for key, record in list(self.tasks.items()):
            if record.status != "done":
                self.require_inputs(key)

    def require_inputs(self, key: TaskKey) -> None:
        for parent in self.parents(key):
            record = self.tasks[parent]
            if record.status == "done" and not record.available:
                record.status = "pending"
                self.require_inputs(parent)

    def is_final(self, record: TaskRecord) -> bool:
        return self.plan.stages[record.stage].final

    # ------------------------------------------------------------------ progress

    @property
    def complete(self) -> bool:
        return all(r.status == "done" for r in self.tasks.values() if self.plan.stages[r.stage].final)

    @property
    def relaunched(self) -> int:
        return sum(max(0, r.launches - 1) for r in self.tasks.values())

    @property
    def running_count(self) -> int:
        return sum(1 for r in self.tasks.values() if r.status == "running")

    @property
    def done_count(self) -> int:
        return sum(1 for r in self.tasks.values() if r.status == "done")
