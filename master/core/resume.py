"""Resuming a crashed run in the core: its state rebuilt from what the journal recorded.

``master.shell.resume_run.recover`` reads the journal into a ``Recovered``; a ``MasterCore``
given it (``resume=``) continues the same scenario: the crash closes what it left
open (``resuming``), finished jobs are not run again, a job that was running keeps
its committed final partitions and, planned again as a new job is (``PlanJob``),
launches the rest again (``restore_job``), jobs
not yet submitted arrive at their times (``resumed_arrivals``), and the clock
continues from the crash. The module docstring of ``master.shell.resume_run`` says why.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from master.core.chained import Chains
from master.core.commands import Command, PrepareJob
from master.core.exposure import StageDurations
from master.core.jobs import JobRuntime, LiveJobs
from master.core.ports import JobEnding, JournalPort, RecoveryPort
from testbed.api.strategy import JobSubmitted
from testbed.journal.schema import TaskStarted
from testbed.settings.run_settings import RunSettings

NODE_ID = re.compile(r"([a-z][a-z0-9._-]*)-(\d+)")
"""A node id: its class's name (``reserved``, ``transient`` or a named class, which never ends
in ``-<digits>``) and its ordinal."""


class ResumingCore(Protocol):
    settings: RunSettings
    run_id: str
    journal: JournalPort
    jobs: dict[str, JobRuntime]
    live_jobs: LiveJobs
    nodes: dict[str, Any]
    expected_jobs: int
    records: JobEnding
    recovery: RecoveryPort

    def restore_job(self, spec: Any, ordinal: int) -> None: ...

    def kick(self) -> None: ...

    @property
    def chains(self) -> Chains: ...

    def run_over(self) -> None: ...

    def put(self, command: Command) -> None: ...


@dataclass
class Recovered:
    """What the journal of a crashed run says, as far as resuming needs it."""

    crashed_at: float = 0.0
    finished_jobs: set[str] = field(default_factory=set)
    submitted: dict[str, float] = field(default_factory=dict)
    """Unfinished jobs -> when they were submitted."""
    committed: dict[str, dict[int, int]] = field(default_factory=dict)
    """Job -> output partition -> the attempt whose part file was committed."""
    job_started: dict[str, float] = field(default_factory=dict)
    """Job -> when its first task was launched."""
    attempts: dict[str, int] = field(default_factory=dict)
    """Task -> highest attempt number launched."""
    launches: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    failures: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    restarts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    """Task -> its launches that restarted it after an earlier crash (not relaunches)."""
    restarting: set[str] = field(default_factory=set)
    """Tasks whose next launch restarts what a crash cut short: an attempt that ran, or one
    that succeeded (its output lived on the agents that died with the master)."""
    succeeded: set[str] = field(default_factory=set)
    """Tasks whose latest attempt succeeded."""
    in_flight: dict[tuple[str, int], TaskStarted] = field(default_factory=dict)
    """(task, attempt) -> its task_started event, for attempts that never finished."""
    nodes_up: dict[str, float] = field(default_factory=dict)
    """Nodes alive when the master died -> when they joined."""
    ordinals: dict[str, int] = field(default_factory=dict)
    """The next free node ordinal of each class (by name) the run used; a class not in it: 0."""
    workloads: dict[str, str] = field(default_factory=dict)
    """Each submitted job -> its workload (its ``job_submitted``)."""
    input_reads: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(job, ``input_reads``) of each ``task_finished`` that reported its replicated split's
    reads, in journal order: the resumed core's input totals go on from them."""
    durations: StageDurations = field(default_factory=StageDurations)
    """The stage means of every attempt that succeeded before the crash, as the live core kept
    them (``MasterCore.durations``; each ``task_finished`` succeeded, folded by the same
    ``StageDurations.observed``): the resumed core goes on from them, not from the priors."""


def resuming(core: ResumingCore, found: Recovered) -> None:
    """Before the new cluster starts: say the run resumes, and close what the crash left open."""
    core.journal.event("resuming", run_id=core.run_id, crashed_at=found.crashed_at)
    prices = {node_class: shape.price_per_hour for node_class, shape in core.settings.cluster.classes.items()}
    record_the_crash(core.journal, found, prices)


def record_the_crash(journal: JournalPort, found: Recovered, prices: dict[str, float]) -> None:
    """Close what the crash left open: attempts that were running, nodes that were up; each
    ended at the crash (``end_s``/``ended_s``), and its event makes its table row.

    Resuming the same directory twice (the resumed master crashing too) closes nothing twice:
    ``master.shell.resume_run.recover`` reads these events back.
    """
    now = found.crashed_at
    for (task, attempt), started in sorted(found.in_flight.items()):
        node_class = {"class": started["class"]} if "class" in started else {}
        journal.event(
            "task_finished",
            task=task,
            job=started.get("job"),
            stage=started.get("stage"),
            index=started.get("index"),
            node=started.get("node"),
            **node_class,
            attempt=attempt,
            status="lost",
            failure="master_crashed",
            memory_mb=started.get("memory_mb"),
            start_s=started.get("t"),
            end_s=now,
            error="the master crashed while it ran",
        )
    for node_id, joined in sorted(found.nodes_up.items()):
        named = NODE_ID.fullmatch(node_id)
        journal.event(
            "node_lost",
            node=node_id,
            **({"class": named.group(1)} if named else {}),
            reason="master_crashed",
            detect_s=None,
            ended_s=now,
            launched_s=joined,
            price_per_hour=prices.get(named.group(1)) if named else None,
        )


def resumed_arrivals(
    core: ResumingCore, found: Recovered, submit_at: Callable[[float, Any, int], None]
) -> None:
    """At the resumed run's time 0 (the crash's time): restore the jobs that were running,
    time the arrivals still to come."""
    core.journal.event(
        "run_resumed",
        run_id=core.run_id,
        crashed_at=found.crashed_at,
        finished_jobs=len(found.finished_jobs),
        restored_jobs=len(found.submitted),
        lost_attempts=len(found.in_flight),
    )
    now = core.journal.now()
    for node in core.nodes.values():
        node.launched_t = now
    ordinal = 0
    specs = list(core.settings.jobs)
    for spec in specs:
        for repeat in range(spec.repeat):
            job_id = f"j{ordinal:03d}"
            if spec.after is not None and job_id not in found.finished_jobs:
                resume_chained(core, found, spec, ordinal, specs)
            elif job_id in found.submitted:
                core.restore_job(spec, ordinal)
            elif job_id not in found.finished_jobs:
                submit_at(max(now, core.time.trace(spec.submit_at + repeat * spec.every)), spec, ordinal)
            ordinal += 1
    if core.expected_jobs == 0:
        core.records.check_all_done()
    core.kick()


def resume_chained(core: ResumingCore, found: Recovered, spec: Any, ordinal: int, specs: list[Any]) -> None:
    """A chained job not finished: held again; its parent finished (succeeded: a failed
    parent failed it in the same step), so it is located again, and restored if it ran."""
    core.chains.hold(spec, ordinal, restore=f"j{ordinal:03d}" in found.submitted)
    parent = f"j{ordinal_of(specs, spec.after):03d}"
    if parent in found.finished_jobs:
        core.chains.parent_succeeded(spec.after, parent)


def ordinal_of(specs: list[Any], name: str) -> int:
    """The ordinal of the (unrepeated) job named ``name``."""
    ordinal = 0
    for spec in specs:
        if spec.name == name:
            return ordinal
        ordinal += spec.repeat
    raise KeyError(name)


def restore_job(core: ResumingCore, found: Recovered, job: JobRuntime) -> None:
    """A job that was running, planned again (``MasterCore.restore_job``): keep its committed
    partitions, launch the rest again."""
    committed = found.committed.get(job.job_id, {})
    for key, record in job.tasks.items():
        task_id = job.task_id(key)
        record.attempt = found.attempts.get(task_id, -1)
        record.launches = found.launches.get(task_id, 0)
        record.failures = found.failures.get(task_id, 0)
        record.error_relaunches = min(record.failures, max(0, record.launches - 1))
        record.retrying_error = record.failures > record.error_relaunches
        record.restarting = task_id in found.restarting
        job.restarts += found.restarts.get(task_id, 0)
        if job.is_final(record) and key[1] in committed:
            record.status, record.available = "done", True
    if job.job_id in found.job_started:
        job.started, job.status = found.job_started[job.job_id], "running"
    core.jobs[job.job_id] = job
    core.live_jobs.add(job)
    core.recovery.react(JobSubmitted(job.job_id))
    core.put(PrepareJob(job.job_id, keep=tuple(sorted(committed))))
    core.journal.event("job_restored", job=job.job_id, tasks=job.plan.total_tasks, kept=len(committed))
    if job.complete:
        job.status = "succeeded"
        core.records.finish_job(job)
