"""Run a job's plan in this process, task after task, with blocks in a local directory.

This is how tests, ``testbed profile`` and the benchmarks run workloads without
agents or a master: each task gets a ``TaskContext`` whose inputs are the
blocks its parents wrote (read locally), exactly the code path of an agent's
worker minus the network. Final outputs land in ``<work>/outputs/part-NNNNN``
like a run's ``outputs/<job_id>/``.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.plan import JobPlan
from testbed.wire.protocol import BlockRef, TaskMetrics, TaskSpec
from testbed.workloads.base import BlockFetcher, TaskContext, peak_rss_bytes, reset_peak_rss
from testbed.workloads.progress import Progress

LOCAL = "local"
"""The location every local block is stored at (the fetcher's own URL)."""


@dataclass
class TaskRun:
    spec: TaskSpec
    metrics: TaskMetrics
    partition_bytes: tuple[int, ...]
    seconds: float


@dataclass
class LocalJob:
    plan: JobPlan
    work: Path
    job_id: str = "job"
    tasks: dict[tuple[int, int], TaskRun] = field(default_factory=dict)

    @property
    def blocks(self) -> Path:
        return self.work / "blocks"

    @property
    def outputs(self) -> Path:
        return self.work / "outputs"

    def spec(self, stage: int, index: int, memory_mb: int = 1, attempt: int = 0) -> TaskSpec:
        plan = self.plan.stages[stage]
        return TaskSpec(
            task_id=f"{self.job_id}.s{stage}.t{index}",
            job_id=self.job_id,
            stage=stage,
            index=index,
            attempt=attempt,
            op=plan.op,
            memory_mb=max(1, memory_mb),
            params=plan.params(index),
            inputs=self._inputs(stage, index),
            partitions=plan.partitions,
            final=plan.final,
        )

    def _inputs(self, stage: int, index: int) -> tuple[tuple[BlockRef, ...], ...]:
        refs = []
        for dep in self.plan.stages[stage].deps:
            parents = [index] if dep.kind == "narrow" else range(self.plan.stages[dep.stage].tasks)
            partition = index if dep.kind == "shuffle" else 0
            refs.append(
                tuple(
                    BlockRef(
                        block=self.tasks[(dep.stage, p)].spec.block_id,
                        partition=partition,
                        locations=(LOCAL,),
                    )
                    for p in parents
                    if self.tasks[(dep.stage, p)].partition_bytes[partition] > 0
                )
            )
        return tuple(refs)

    def run_task(
        self, stage: int, index: int, budget_bytes: int, attempt: int = 0, score: Any = None
    ) -> TaskRun:
        """Run one task (its parents must have run) with a budget in bytes; keeps its output.
        ``score``: where its progress score goes, as an agent's shared double."""
        spec = self.spec(stage, index, -(-budget_bytes // 2**20), attempt)
        self.tasks[(stage, index)] = run = run_task(spec, self.work, budget_bytes, score)
        if spec.final:
            self.outputs.mkdir(parents=True, exist_ok=True)
        return run

    def run(self, budget_bytes: int | Callable[[int, int], int]) -> LocalJob:
        """Run every task in stage order, each with a budget (or ``budget(stage, index)``)."""
        for s, stage in enumerate(self.plan.stages):
            for i in range(stage.tasks):
                budget = budget_bytes(s, i) if callable(budget_bytes) else budget_bytes
                self.run_task(s, i, budget)
        return self

    def total(self, field_name: str, stage: int | None = None) -> int:
        return sum(
            getattr(run.metrics, field_name) for key, run in self.tasks.items() if stage in (None, key[0])
        )

    def cleanup(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)


def run_task(spec: TaskSpec, work: Path, budget_bytes: int | None = None, score: Any = None) -> TaskRun:
    """Run one task like an agent's worker does, reading its inputs from local blocks.

    A final task's output is moved to ``work/outputs/part-<index>``. Failures
    raise: a local run has nobody to retry for it.
    """
    from testbed.workloads.catalog import OPERATIONS  # late: the registry imports the workload modules

    scratch = work / "scratch" / spec.block_id
    scratch.mkdir(parents=True, exist_ok=True)
    blocks = work / "blocks"
    blocks.mkdir(parents=True, exist_ok=True)
    fetcher = BlockFetcher(blocks, LOCAL)
    ctx = TaskContext(spec, blocks, scratch, fetcher, budget_override=budget_bytes, progress=Progress(score))
    reset_peak_rss()
    started = time.perf_counter()
    try:
        OPERATIONS[spec.op](ctx)
        ctx.metrics.peak_rss_bytes = peak_rss_bytes()
        if spec.final:
            outputs = work / "outputs"
            outputs.mkdir(parents=True, exist_ok=True)
            shutil.move(ctx.final_path, outputs / f"part-{spec.index:05d}")
    finally:
        ctx.cleanup()
    seconds = time.perf_counter() - started
    ctx.metrics.compute_s = seconds
    return TaskRun(spec, ctx.metrics, ctx.partition_bytes or (0,) * spec.partitions, seconds)
