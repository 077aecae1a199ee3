"""A scheduler's ``Preempt`` and ``Migrate`` decisions in the core: a running attempt killed
and its task re-queued.

The attempt is cancelled through the path speculation's losers take
(``Copies.kill``: a ``CancelTask`` to its node, a ``killed`` row with failure ``preempted``,
its slot-seconds counted in the job's ``wasted_slot_s``, and ``preempted_attempts`` in its
``job_finished``); its task goes back to pending without counting as a failure. A late
outcome of the killed attempt is stale (its task is no longer running that attempt there),
so it is ignored, and a final task's output is committed once, by the attempt that
succeeds later. ``Migrate`` then starts the task on its target at once, as an ``Assign``
would; it is checked first, so a migration that could not start leaves the task running.
"""

from __future__ import annotations

from master.core.jobs import LIVE, JobRuntime, TaskKey
from master.core.nodes import NodeRecord
from master.core.ports import CorePort
from master.core.tasks import locate

PREEMPTED = "preempted"
"""The failure of a killed row of a preempted attempt."""


def preemptible(core: CorePort, task_id: str) -> tuple[JobRuntime, TaskKey, NodeRecord] | None:
    """The task, if it runs one attempt now that may be killed and run again: not with a
    speculative copy, not pushing its output (Pado), not fed while it runs (streamed)."""
    located = locate(core, task_id)
    if located is None:
        return None
    job, key = located
    record = job.tasks[key]
    node = core.nodes.get(record.node or "")
    launch = node.launches.get(task_id) if node is not None else None
    if (
        node is None
        or launch is None
        or job.status not in LIVE
        or record.status != "running"
        or key in job.copies
        or record.pushes
        or launch.task.streamed
    ):
        return None
    return job, key, node


def preempt(core: CorePort, where: tuple[JobRuntime, TaskKey, NodeRecord], cause: str) -> None:
    """Kill the task's running attempt (``preemptible``'s answer) and put the task back to pending."""
    job, key, node = where
    record = job.tasks[key]
    core.copies.kill(job, key, node, (record.attempt, record.started), None, PREEMPTED, cause)
    core.copies.preempted[job.job_id] += 1
    job.failed(key, record.attempt, counts_as_failure=False)
    core.kick()
