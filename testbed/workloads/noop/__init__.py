"""``workload: noop``: empty tasks the agent completes itself (no worker, no output), for
measuring the control plane alone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from testbed.plan import JobPlan, StagePlan
from testbed.wire.protocol import INLINE_NOOP
from testbed.workloads.base import Combiner, TaskFunction

if TYPE_CHECKING:
    from testbed.scenario.schema import NoopJob, Scenario


def plan(job: NoopJob, seed: int, scenario: Scenario | None = None) -> JobPlan:
    """One final stage of ``job.tasks`` inline no-op tasks."""
    del seed, scenario
    return JobPlan("noop", (StagePlan(INLINE_NOOP, job.tasks, final=True, writes_output=False),))


OPERATIONS: dict[str, TaskFunction] = {}
"""None: the agent completes an inline no-op task itself (no worker process)."""
COMBINERS: dict[str, Combiner] = {}
"""None of its ops' outputs is aggregated before a push."""
PROFILED_STAGES: dict[str, int] = {}
"""Not profiled (``testbed profile`` measures the built-in shuffle workloads)."""
lineage = None
"""No logical DAG: its tasks depend on nothing."""
RECORD_BYTES = 1
"""It reads no source."""
check = None
"""It writes no output."""
generate = None
"""It reads no input file."""
