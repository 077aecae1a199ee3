"""``workload: noop``: empty tasks the agent completes itself (no worker, no output), for
measuring the control plane alone."""

from __future__ import annotations

from testbed.plan import JobPlan, StagePlan
from testbed.scenario.jobs import NoopJob
from testbed.wire.protocol import INLINE_NOOP


def plan(job: NoopJob, seed: int) -> JobPlan:
    """One final stage of ``job.tasks`` inline no-op tasks."""
    return JobPlan("noop", (StagePlan(INLINE_NOOP, job.tasks, final=True, writes_output=False),))
