"""The run's records: jobs finishing, the run ending, and the journal's job, task and node ends.

A job ends here (its ``job_finished`` event, which makes its ``jobs.csv`` row, its running
tasks cancelled if it failed); the run is done once every expected job has
ended, including the ones that never had a plan (not submitted before the
timeout, or not plannable): then the core says ``RunOver``. It reaches the core
through ``master.core.ports.RecordsPort``; the core's other parts reach it through
``master.core.ports.JobEnding``.
"""

from __future__ import annotations

from typing import Any

from master.core.jobs import JobRuntime, TaskKey
from master.core.nodes import NodeRecord
from master.core.ports import RecordsPort
from master.core.task_records import Copy
from testbed.journal.tables import TASK_METRICS
from testbed.wire.protocol import CancelTask, TaskUpdate


class RunRecords:
    def __init__(self, master: RecordsPort) -> None:
        self.master = master
        self.all_done = False
        """Whether every expected job has ended."""
        self.unsubmitted: dict[int, Any] = {}
        """Scheduled jobs not submitted yet, by ordinal: failed if the run times out first."""
        self.never_ran: set[str] = set()
        """Jobs failed without a plan: not submitted before the timeout, or not plannable."""
        self.reserved: dict[str, NodeRecord] = {}
        """The nodes given a reservation (``reserve``) and not seen free of it since: a job's
        end lifts its reservations from these, not from every node."""

    def all_succeeded(self) -> bool:
        jobs = self.master.jobs.values()
        return not self.never_ran and all(job.status == "succeeded" for job in jobs)

    def finish_job(self, job: JobRuntime) -> None:
        if job.finished is not None:
            return  # a late update of a job that already failed
        job.finished = self.master.journal.now()
        input_reads = self.master.inputs.job_counts(job.job_id)
        self.master.inputs.finished(job.job_id)
        if job.status == "failed":
            self._cancel_running(job)
        jct = job.finished - job.submitted
        map_phase_s, reduce_phase_s = job.phase_durations()
        self.master.journal.event(
            "job_finished",
            job=job.job_id,
            status=job.status,
            jct_s=round(jct, 4),
            error=job.error,
            name=job.name,
            workload=job.workload,
            submit_s=job.submitted,
            start_s=job.started,
            tasks=job.plan.total_tasks,
            relaunched_tasks=job.relaunched,
            error_relaunches=job.error_relaunches,
            bytes_recomputed=job.bytes_recomputed,
            bytes_checkpointed=job.bytes_checkpointed,
            bytes_pushed=job.bytes_pushed,
            cache_hits=job.cache_hits,
            cache_misses=job.cache_misses,
            bytes_from_cache=job.bytes_from_cache,
            map_phase_s=map_phase_s,
            reduce_phase_s=reduce_phase_s,
            **self.master.copies.job_counts(job),
            **input_reads,
        )
        for node_id, node in list(self.reserved.items()):
            if node.reserved_for == job.job_id:
                node.reserved_for = None
            if node.reserved_for is None:
                del self.reserved[node_id]
        self.master.chains.parent_ended(job)
        self.check_all_done()

    def reserve(self, node: NodeRecord, job_id: str | None) -> None:
        """The node is reserved for the job (None: no longer), until that job ends."""
        node.reserved_for = job_id
        self.reserved[node.node_id] = node

    def check_all_done(self) -> None:
        if self.all_done:
            return
        finished = len(self.master.jobs) - len(self.master.live_jobs.jobs())  # an end is final
        if finished + len(self.never_ran) == self.master.expected_jobs:
            self.all_done = True
            self.master.run_over()

    def _cancel_running(self, job: JobRuntime) -> None:
        """Stop the tasks still running for a failed job: their slots go to other jobs."""
        for node in self.master.nodes.values():
            for task_id, (owner, key) in node.running.items():
                if owner is job:
                    attempt = job.attempt_on(key, node.node_id)[0]
                    self.master.send(node.node_id, CancelTask(task_id=task_id, attempt=attempt))

    def fail_unfinished(self, reason: str) -> None:
        for job in self.master.jobs.values():
            if job.status in ("waiting", "running"):
                job.status, job.error = "failed", reason
                self.finish_job(job)
        for ordinal, spec in sorted(self.unsubmitted.items()):
            self.fail_unplanned(ordinal, spec, f"not submitted: {reason}")

    def fail_unplanned(self, ordinal: int, spec: Any, error: str) -> None:
        """A job that never had a plan (its submission time was not reached, or planning
        failed): a failed row with no times and no tasks."""
        job_id = f"j{ordinal:03d}"
        self.never_ran.add(job_id)
        name = spec.name or f"{spec.workload}-{ordinal}"
        self.master.journal.event(
            "job_finished",
            job=job_id,
            status="failed",
            jct_s=None,
            error=error,
            name=name,
            workload=spec.workload,
        )

    def task_started(
        self, job: JobRuntime, key: TaskKey, node: NodeRecord, attempt: int, memory_mb: int, **extra: Any
    ) -> None:
        """The attempt was launched (``task_started``), now; ``extra``: a copy's role and reason."""
        self.master.journal.event(
            "task_started",
            task=job.task_id(key),
            job=job.job_id,
            stage=key[0],
            index=key[1],
            node=node.node_id,
            **{"class": node.class_name},
            attempt=attempt,
            memory_mb=memory_mb,
            **extra,
        )

    def task_finished(
        self,
        job: JobRuntime,
        key: TaskKey,
        node: NodeRecord,
        status: str,
        failure: str,
        update: TaskUpdate | None = None,
        cause: str | None = None,
        copy: Copy | None = None,
    ) -> None:
        """The attempt ended (``task_finished``, its row of tasks.csv), now: the metrics are its
        node's report, if it made one. An end that is no success carries its ``error``:
        ``cause`` (what the core knows of it), else the node's error, else the failure's name.
        ``copy``: the attempt is the task's speculative copy, not its record's attempt."""
        record = job.tasks[key]
        attempt, started = (copy.attempt, copy.started) if copy else (record.attempt, record.started)
        metrics = update.metrics.model_dump() if update is not None else {}
        self.master.journal.event(
            "task_finished",
            task=job.task_id(key),
            job=job.job_id,
            stage=key[0],
            index=key[1],
            node=node.node_id,
            **{"class": node.class_name},
            attempt=attempt,
            status=status,
            failure=failure or None,
            memory_mb=record.memory_mb,
            elastic=int(record.elastic),
            ideal_memory_mb=job.ideal_memory_mb(key[0]),
            predicted_s=record.predicted_s,
            start_s=started,
            **{name: metrics[name] for name in TASK_METRICS if name in metrics},
            **_cause(status, failure, update, cause),
            **self.master.copies.role(job, key, attempt),
            **self._reads(job, key, attempt, update),
        )

    def _reads(
        self, job: JobRuntime, key: TaskKey, attempt: int, update: TaskUpdate | None
    ) -> dict[str, Any]:
        """``input_reads``, where the attempt's worker reported where it read its replicated
        split (a real node; the simulator's ``task_finished`` stays as it was)."""
        if update is None or update.input_reads is None:
            return {}
        reads = self.master.inputs.reported_reads(job.job_id, job.task_id(key), attempt, update.input_reads)
        return {"input_reads": reads}

    def node_ended(self, node: NodeRecord, kind: str, **fields: Any) -> None:
        """The node ended (``kind``: ``node_start_failed``, ``node_lost``, ``node_ended``), with
        what its row of nodes.csv needs."""
        self.master.journal.event(
            kind,
            node=node.node_id,
            **{"class": node.class_name},
            **fields,
            launched_s=node.launched_t,
            price_per_hour=node.price_per_hour,
        )


def _cause(status: str, failure: str, update: TaskUpdate | None, cause: str | None) -> dict[str, str]:
    """Why an attempt ended without success, in full (a data failure's error is a bad input or
    a workload plugin's traceback, which its author needs in the journal); nothing for a success."""
    if status == "succeeded":
        return {}
    return {"error": cause or (update.error if update is not None else None) or failure or status}
