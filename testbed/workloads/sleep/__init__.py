"""Synthetic tasks that run for a given duration: the tasks of Eagle/CloudCoaster traces.

A task sleeps for its duration in wall seconds, already converted by the planner (divided
by the scenario's time scale, stretched by its dilation). With ``cpu_bound: true`` it is work,
not a wait: it spins until its thread has used its duration in CPU seconds of one emulated
core (its trace duration / the time scale, ``cpu_s``), which at its slot's quota (1 / the
dilation of a host core, faithful mode) takes its wall duration, and f times longer on a node
slowed f times (``chaos.slowdown``: the quota divided), as the simulator prices it. Without a
quota (unisolated) it takes at least its duration, longer where other work holds the core.
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
    cpu_per_trace = 1.0 if scenario is None else 1.0 / scenario.time_scale
    durations = job.task_durations
    stage = StagePlan(
        "sleep.run",
        len(durations),
        final=True,
        task_params=tuple(_params(d, wall_per_trace, cpu_per_trace, job.cpu_bound) for d in durations),
        shared_params={"cpu_bound": job.cpu_bound},
    )
    return JobPlan("sleep", (stage,))


def _params(duration: float, wall_per_trace: float, cpu_per_trace: float, cpu_bound: bool) -> dict:
    params = {"duration_s": duration * wall_per_trace}
    if cpu_bound:
        params["cpu_s"] = duration * cpu_per_trace
    return params


PROGRESS_STEP_S = 0.1
"""A sleeping task wakes this often to update its progress score (the fraction of its time done,
as the simulator scores a sleep: it has no input to read)."""


def run_task(ctx: TaskContext) -> None:
    duration = float(ctx.params["duration_s"])
    if ctx.params.get("cpu_bound"):
        _spin(ctx, float(ctx.params["cpu_s"]))
    else:
        _sleep(ctx, duration)
    ctx.final_path.write_text(f"{ctx.spec.task_id}\t{duration:.3f}\n")


def _sleep(ctx: TaskContext, duration: float) -> None:
    start = time.monotonic()
    deadline = start + duration
    while (now := time.monotonic()) < deadline:
        time.sleep(min(PROGRESS_STEP_S, deadline - now))
        ctx.progress.read(int((time.monotonic() - start) * 1e6), int(duration * 1e6))


def _spin(ctx: TaskContext, cpu_s: float) -> None:
    """Busy until this thread has used ``cpu_s`` CPU seconds (its progress: the share used)."""
    start = time.thread_time()
    while (used := time.thread_time() - start) < cpu_s:
        sum(range(10_000))
        ctx.progress.read(int(used * 1e6), int(cpu_s * 1e6))


OPERATIONS: dict[str, TaskFunction] = {"sleep.run": run_task}
"""The task functions of its ops (``testbed.workloads.catalog.OPERATIONS`` gathers every workload's)."""
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
