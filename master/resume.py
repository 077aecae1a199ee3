"""Resuming a run whose master crashed, from what its journal recorded.

The journal is the run's replicated progress metadata (Pado, section 3.2.6):
every event and table row is flushed as it happens, and each committed final
output partition has its own ``output_committed`` event. ``testbed run
--resume RUN_DIR`` reads it back (``recover``) and a ``ResumedMaster``
continues the same scenario in the same directory:

- finished jobs are not run again;
- a job that was running keeps the final partitions it had committed, and
  everything else of it is launched again (intermediate outputs lived on the
  old agents, which died with the master);
- jobs not yet submitted arrive at their scheduled times;
- the clock continues from the last recorded time, so the downtime is not
  counted (it says nothing about the policy under test);
- task attempts that were running when the master died are recorded as
  ``lost`` (failure ``master_crashed``), nodes that were up as ended by
  ``master_crashed``; attempt numbers and node ordinals continue, so no block
  id, output name or node id is reused.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from master.journal import Journal
from master.master import Master
from testbed.journal import TaskStarted, read_events

NODE_ID = re.compile(r"(reserved|transient)-(\d+)")


class ResumeError(Exception):
    """The directory cannot be resumed; the message says why and what to do."""


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
    in_flight: dict[tuple[str, int], TaskStarted] = field(default_factory=dict)
    """(task, attempt) -> its task_started event, for attempts that never finished."""
    nodes_up: dict[str, float] = field(default_factory=dict)
    """Nodes alive when the master died -> when they joined."""
    ordinals: dict[str, int] = field(default_factory=lambda: {"reserved": 0, "transient": 0})
    """The next free node ordinal of each class."""


def check_resumable(run_dir: Path) -> None:
    """Refuse directories that are not a crashed run: a finished run, not a run. (A live one is
    refused by its lock: see ``master.rundir.owning``.)"""
    if not (run_dir / "events.jsonl").is_file() or not (run_dir / "scenario.yaml").is_file():
        raise ResumeError(f"{run_dir}: not a run directory (events.jsonl and scenario.yaml are needed)")
    if (run_dir / "summary.json").is_file():
        raise ResumeError(f"{run_dir}: the run finished (it has a summary.json): nothing to resume")


def recover(run_dir: Path) -> Recovered:
    """Read the journal back.

    Each segment of the run (the first, then one per resume) begins with a
    setup phase: its cluster comes up before ``run_started``/``run_resumed``,
    on a clock that does not count (nodes that join then count from the
    segment's start, as the master itself counts them).
    """
    events = read_events(run_dir / "events.jsonl").events
    found = Recovered()
    setting_up, joining = True, []
    for event in events:
        name = event["event"]
        if name == "resuming":
            setting_up, joining = True, []
        elif name in ("run_started", "run_resumed"):
            setting_up = False
            found.nodes_up.update({node_id: float(event["t"]) for node_id in joining})
        if setting_up and name == "node_up":
            joining.append(event["node"])
            continue
        if not setting_up or name == "resuming":
            found.crashed_at = max(found.crashed_at, float(event.get("t", 0.0)))
        _apply(found, event)
    for job in found.finished_jobs:
        found.submitted.pop(job, None)
        found.committed.pop(job, None)
    for node_id in _known_node_ids(run_dir, events):
        match = NODE_ID.fullmatch(node_id)
        if match:
            node_class, ordinal = match.group(1), int(match.group(2))
            found.ordinals[node_class] = max(found.ordinals[node_class], ordinal + 1)
    return found


def _apply(found: Recovered, event: dict[str, Any]) -> None:
    name = event["event"]
    if name == "job_submitted":
        found.submitted[event["job"]] = float(event["t"])
    elif name == "job_finished":
        found.finished_jobs.add(event["job"])
    elif name == "output_committed":
        found.committed.setdefault(event["job"], {})[int(event["index"])] = int(event["attempt"])
    elif name == "task_started":
        task, attempt = event["task"], int(event["attempt"])
        found.attempts[task] = max(found.attempts.get(task, -1), attempt)
        found.launches[task] += 1
        found.in_flight[(task, attempt)] = cast(TaskStarted, event)
        found.job_started.setdefault(event["job"], float(event["t"]))
    elif name == "task_finished":
        found.in_flight.pop((event["task"], int(event["attempt"])), None)
        if event.get("status") == "failed" and event.get("failure") not in (None, "fetch", "cancelled"):
            found.failures[event["task"]] += 1
    elif name == "node_up":
        found.nodes_up[event["node"]] = float(event["t"])
    elif name == "node_lost":
        found.nodes_up.pop(event["node"], None)


def _known_node_ids(run_dir: Path, events: list[dict[str, Any]]) -> set[str]:
    """Every node id the run used: in events, and the log file of each node it launched."""
    ids = {str(e["node"]) for e in events if "node" in e}
    logs = run_dir / "logs"
    if logs.is_dir():
        ids |= {p.stem for p in logs.glob("*.log")}
    return ids


def record_the_crash(journal: Journal, found: Recovered, prices: dict[str, float]) -> None:
    """Close what the crash left open: attempts that were running, nodes that were up.

    Each gets an event as well as a row, so resuming the same directory twice
    (the resumed master crashing too) closes nothing twice.
    """
    now = found.crashed_at
    for (task, attempt), started in sorted(found.in_flight.items()):
        journal.event(
            "task_finished",
            task=task,
            job=started.get("job"),
            stage=started.get("stage"),
            node=started.get("node"),
            attempt=attempt,
            status="lost",
            failure="master_crashed",
        )
        journal.row(
            "tasks",
            task_id=task,
            job_id=started.get("job"),
            stage=started.get("stage"),
            index=started.get("index"),
            attempt=attempt,
            node_id=started.get("node"),
            node_class=started.get("class"),
            memory_mb=started.get("memory_mb"),
            start_s=started.get("t"),
            end_s=now,
            status="lost",
            failure="master_crashed",
        )
    for node_id, joined in sorted(found.nodes_up.items()):
        node_class = NODE_ID.fullmatch(node_id)
        journal.event("node_lost", node=node_id, reason="master_crashed", detect_s=None)
        journal.row(
            "nodes",
            node_id=node_id,
            node_class=node_class.group(1) if node_class else "",
            launched_s=joined,
            ended_s=now,
            end_reason="master_crashed",
            price_per_hour=prices.get(node_class.group(1)) if node_class else None,
        )


class ResumedMaster(Master):
    """A master that continues a crashed run from its journal (see the module docstring)."""

    def __init__(self, *args: Any, recovered: Recovered, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.recovered = recovered
        self.expected_jobs -= len(recovered.finished_jobs)
        self.starts.ordinals = dict(recovered.ordinals)
        self.journal.t0 = self.journal.clock() - recovered.crashed_at
        self.journal.event("resuming", run_id=self.run_id, crashed_at=recovered.crashed_at)
        cluster = self.scenario.cluster
        prices = {"reserved": cluster.reserved.price_per_hour, "transient": cluster.transient.price_per_hour}
        record_the_crash(self.journal, recovered, prices)

    def _start_clock(self) -> None:
        """The clock continues from the crash once the new cluster is up: the time to restart
        the master and its agents (all of which died with it here) is not the policy's."""
        self.set_time_zero(self.journal.clock() - self.recovered.crashed_at)
        self.resumed_from = self.recovered.crashed_at
        self.journal.event(
            "run_resumed",
            run_id=self.run_id,
            crashed_at=self.recovered.crashed_at,
            finished_jobs=len(self.recovered.finished_jobs),
            restored_jobs=len(self.recovered.submitted),
            lost_attempts=len(self.recovered.in_flight),
        )
        now = self.journal.now()
        for node in self.nodes.values():
            node.launched_t = now

    def _schedule_arrivals(self, loop: Any) -> None:
        now = self.journal.now()
        ordinal = 0
        for spec in [*self.scenario.jobs, *self.arriving]:
            for repeat in range(spec.repeat):
                job_id = f"j{ordinal:03d}"
                if job_id in self.recovered.submitted:
                    self.restore_job(spec, ordinal)
                elif job_id not in self.recovered.finished_jobs:
                    delay = self.scenario.trace(spec.submit_at + repeat * spec.every) - now
                    self.submit_later(loop, max(0.0, delay), spec, ordinal)
                ordinal += 1
        if self.expected_jobs == 0:
            self.records.all_done.set()
        self.kick()

    def restore_job(self, spec: Any, ordinal: int) -> None:
        """A job that was running: keep its committed partitions, launch the rest again."""
        job = self.new_job(spec, ordinal, self.recovered.submitted[f"j{ordinal:03d}"])
        committed = self.recovered.committed.get(job.job_id, {})
        for key, record in job.tasks.items():
            task_id = job.task_id(key)
            record.attempt = self.recovered.attempts.get(task_id, -1)
            record.launches = self.recovered.launches.get(task_id, 0)
            record.failures = self.recovered.failures.get(task_id, 0)
            record.error_relaunches = min(record.failures, max(0, record.launches - 1))
            record.retrying_error = record.failures > record.error_relaunches
            if job.is_final(record) and key[1] in committed:
                record.status, record.available = "done", True
        if job.job_id in self.recovered.job_started:
            job.started, job.status = self.recovered.job_started[job.job_id], "running"
        self.jobs[job.job_id] = job
        self.strategy.job_submitted(job)
        _remove_uncommitted_outputs(self.run_dir / "outputs" / job.job_id, set(committed))
        self.journal.event("job_restored", job=job.job_id, tasks=job.plan.total_tasks, kept=len(committed))
        if job.complete:
            job.status = "succeeded"
            self.records.finish_job(job)


def _remove_uncommitted_outputs(directory: Path, kept: set[int]) -> None:
    """Staged uploads of attempts that died, and any part file without a commit event."""
    directory.mkdir(parents=True, exist_ok=True)
    for path in directory.iterdir():
        match = re.fullmatch(r"part-(\d+)", path.name)
        if match is None or int(match.group(1)) not in kept:
            path.unlink()
