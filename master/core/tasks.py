"""A task's outcome as its node reports it: applied once, whatever the broker redelivers.

A ``TaskUpdate`` of the attempt the core launched on that node moves the task
on (``master.core.lifecycle.TASK``); a stale or repeated one (QoS 1 redelivery, an
outcome repeated after a re-sent launch) changes nothing. A final task's success
commits its output exactly once: only an attempt whose upload the sink staged
(``OutputStaged``) is committed (``CommitOutput``), so the decision needs no file.
"""

from __future__ import annotations

from master.core.exposure import attempt_seconds
from master.core.jobs import JobRuntime, TaskKey
from master.core.nodes import NodeRecord
from master.core.ports import CorePort
from testbed.wire.protocol import TaskUpdate


def locate(core: CorePort, task_id: str) -> tuple[JobRuntime, TaskKey] | None:
    job = core.jobs.get(task_id.partition(".")[0])
    key = job.key_of(task_id) if job else None
    return (job, key) if job and key else None


def latest_attempt(located: tuple[JobRuntime, TaskKey] | None) -> int | None:
    """The located task's latest launched attempt, its copy's if it has one (the sender check's bound)."""
    if not located:
        return None
    job, key = located
    copy = job.copies.get(key)
    return max(job.tasks[key].attempt, copy.attempt) if copy else job.tasks[key].attempt


def task_update(
    core: CorePort,
    node: NodeRecord,
    update: TaskUpdate,
    launch_acks: dict,
    located: tuple[JobRuntime, TaskKey] | None,
) -> None:
    """Apply the update of the task ``located`` (``locate(core, update.task_id)``)."""
    now = core.journal.now()
    if update.state == "running" and update.task_id in node.sent_at:  # the first, not a redelivery
        launch_acks.setdefault((update.task_id, update.attempt), now - node.sent_at[update.task_id])
    if located is not None and update.state == "running":
        record = located[0].tasks[located[1]]
        if (record.attempt, record.node, record.status) == (update.attempt, node.node_id, "running"):
            node.acked.add(update.task_id)
        elif core.copies.enabled:
            core.copies.copy_update(node, update, *located)
        return
    if located is None:
        return
    job, key = located
    if core.copies.enabled and core.copies.copy_update(node, update, job, key):
        return
    record = job.tasks[key]
    if record.attempt != update.attempt or record.status != "running" or record.node != node.node_id:
        return  # stale or duplicate (QoS 1 redelivery): already applied
    node.forget_launch(update.task_id)
    job.count_cache_use(update.metrics)
    ok, update = _outcome(core, job, key, update)
    cause = None
    if not ok and key in job.copies and update.failure != "data":  # its copy goes on alone
        core.records.task_finished(job, key, node, "failed", update.failure or "", update)
        core.copies.takes_over(job, key, update.failure)
        core.kick()
        return
    if ok:
        core.durations.observed(job.workload, key[0], attempt_seconds(record.started, now))
        core.recovery.succeeded(job, key, node, update, now)
        core.copies.succeeded(job, key, now)
    else:
        cause = _failed(core, node, job, key, update)
    status = update.state if ok else "failed"
    core.records.task_finished(job, key, node, status, update.failure or "", update, cause)
    if job.status == "failed":
        core.records.finish_job(job)
    elif job.complete:
        job.status = "succeeded"
        core.records.finish_job(job)
    core.kick()


def _outcome(core: CorePort, job: JobRuntime, key: TaskKey, update: TaskUpdate) -> tuple[bool, TaskUpdate]:
    """Whether the update is a success that counts: all its partitions, its output committed."""
    stage = job.plan.stages[key[0]]
    ok = update.state == "succeeded"
    if ok and not stage.final and len(update.partition_bytes) != stage.partitions:
        error = f"reported {len(update.partition_bytes)} partitions, not {stage.partitions}"
        core.journal.say("warning", f"{update.task_id} {error}")
        return False, update.model_copy(update={"failure": "error", "error": error})
    if (
        ok
        and stage.final
        and stage.writes_output
        and not core.commit_output(job.job_id, key[1], update.attempt)
    ):
        return False, update.model_copy(
            update={"error": "its output was not staged by the sink: not committed"}
        )
    return ok, update


def _failed(
    core: CorePort, node: NodeRecord, job: JobRuntime, key: TaskKey, update: TaskUpdate
) -> str | None:
    """Apply a failed attempt; its cause when the core knows more of it than the node (a task
    cancelled because its job failed: the job's error)."""
    if update.lost_blocks:
        job.lose_blocks(set(update.lost_blocks))
    real_failure = update.failure not in ("fetch", "cancelled")
    fatal = update.failure == "data"
    job.failed(key, update.attempt, counts_as_failure=real_failure, error=update.error, fatal=fatal)
    if update.failure in ("enospc", "oom"):
        core.resource_fault(node, job, key, update.failure)
    if update.failure == "cancelled" and job.status == "failed":
        return f"cancelled: the job failed: {job.error}"
    return None
