"""Synthetic tasks that run for a given duration: the tasks of Eagle/CloudCoaster traces.

A task sleeps (or spins the CPU, ``cpu_bound: true``) for its duration in wall
seconds, already converted by the planner (divided by the scenario's time scale,
stretched by its dilation).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from testbed.plan import JobPlan, StagePlan
from testbed.workloads.base import Combiner, TaskContext, TaskFunction

if TYPE_CHECKING:
    from testbed.scenario.schema import Scenario, SleepJob


def plan(job: SleepJob, seed: int, scenario: Scenario | None = None) -> JobPlan:
    """One task per duration, each in wall seconds (the scenario's ``wall_per_trace``)."""
    del seed
    wall_per_trace = 1.0 if scenario is None else scenario.wall_per_trace
    durations = job.task_durations
    stage = StagePlan(
        "sleep.run",
        len(durations),
        final=True,
        task_params=tuple({"duration_s": d * wall_per_trace} for d in durations),
        shared_params={"cpu_bound": job.cpu_bound},
    )
    return JobPlan("sleep", (stage,))


PROGRESS_STEP_S = 0.1
"""A sleeping task wakes this often to update its progress score (the fraction of its time done,
as the simulator scores a sleep: it has no input to read)."""


def run_task(ctx: TaskContext) -> None:
    duration = float(ctx.params["duration_s"])
    start = time.monotonic()
    deadline = start + duration
    while (now := time.monotonic()) < deadline:
        if ctx.params.get("cpu_bound"):
            sum(range(10_000))
        else:
            time.sleep(min(PROGRESS_STEP_S, deadline - now))
        ctx.progress.read(int((time.monotonic() - start) * 1e6), int(duration * 1e6))
    ctx.final_path.write_text(f"{ctx.spec.task_id}\t{duration:.3f}\n")


OPERATIONS: dict[str, TaskFunction] = {"sleep.run": run_task}
"""The task functions of its ops (``testbed.workloads.OPERATIONS`` gathers every workload's)."""
COMBINERS: dict[str, Combiner] = {}
"""None of its ops' outputs is aggregated before a push."""
PROFILED_STAGES: dict[str, int] = {}
"""Not profiled (``testbed profile`` measures the built-in shuffle workloads)."""
lineage = None
"""No logical DAG: its tasks depend on nothing (the strategies run them where they are placed)."""
RECORD_BYTES = 1
"""It reads no source."""
check = None
"""Its output (each task's duration) is not checked."""
generate = None
"""It reads no input file."""
