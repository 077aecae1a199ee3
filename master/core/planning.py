"""A job's runtime state made from the shell's answer to ``PlanJob`` (``JobPlanned``)."""

from __future__ import annotations

from typing import Any

from master.core.events import JobPlanned
from master.core.jobs import JobRuntime


def planned_job(spec: Any, planned: JobPlanned, submitted: float) -> JobRuntime:
    """The scenario's ``planned.ordinal``-th job: the same id, seed and plan in every run of it."""
    ordinal, memory = planned.ordinal, planned.stage_memory_mb
    job = JobRuntime(
        f"j{ordinal:03d}",
        spec.name or f"{spec.workload}-{ordinal}",
        spec.workload,
        planned.plan,
        submitted,
        max(memory),
        stage_memory_mb=memory,
        stage_prior_s=planned.stage_prior_s,
    )
    if planned.estimate_s is not None:
        job.est_duration_s, job.long, job.estimated = planned.estimate_s, planned.long, True
    return job
