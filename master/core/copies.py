"""Speculative copies in the core: progress scores, the speculator's round, and which attempt wins.

Each node's heartbeats carry the progress score of what it runs (``Heartbeat.progress``);
the core keeps the score of each running attempt, and its rate is score per second since
the attempt started. After every scheduling round the speculator (``policy.speculation``)
reads a ``SpeculationSnapshot`` and may ask for ``Speculate(task, node)``; a copy is checked,
never trusted: its task runs once now, elsewhere than that node, neither pushing its output
(Pado) nor fed while it runs (streamed inputs), and the node is up with a slot and the
task's memory free.

A task then has two attempts. The first to succeed commits, exactly once, through the
normal path (a copy that wins first takes the task's record); the other is cancelled at
once (``killed``, its slot-seconds counted as waste). If either dies (a failure, a lost
node, an eviction), the other goes on alone: a lost original hands the task to its copy
instead of back to pending, so lineage recovery sees a task still running. Default runs
(``none``) launch no copy and journal nothing new.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import Any

from master.core.jobs import JobRuntime, TaskKey
from master.core.nodes import NodeRecord
from master.core.ports import CorePort
from master.core.task_records import Copy
from master.speculation import NoSpeculation
from testbed.api.speculation import (
    AttemptView,
    Speculate,
    SpeculationNode,
    SpeculationSnapshot,
    Speculator,
    TaskGroup,
)
from testbed.wire.protocol import CancelTask, Heartbeat, LaunchTask, TaskUpdate

_LOST_RACE = ("speculation", "another attempt of the task succeeded first")
"""A speculation loser's failure and cause."""


class Copies:
    def __init__(self, core: CorePort, speculator: Speculator, kill_at: Any) -> None:
        """``kill_at(node_id)``: when the node's eviction notice says it dies (None: none)."""
        self.core = core
        self.speculator = speculator
        self.kill_at = kill_at
        self.enabled = not isinstance(speculator, NoSpeculation)
        """Whether copies may be made (and rows say their role): not under ``none``."""
        self.finished: dict[tuple[str, int], list[float]] = defaultdict(list)
        """Each (job, stage)'s durations of successful attempts (wall seconds)."""
        self.stats: dict[str, list[float]] = defaultdict(lambda: [0, 0, 0.0])
        """Per job: copies launched, copies that won, slot-seconds of attempts killed as losers."""
        self.node_rates: dict[str, list[float]] = defaultdict(lambda: [0, 0.0])
        """Per node: attempts that succeeded there, the sum of their progress rates (1 / duration)."""
        self.preempted: dict[str, int] = defaultdict(int)
        """Per job: attempts a scheduler's ``Preempt`` or ``Migrate`` killed (``master.core.preemption``)."""

    # ------------------------------------------------------------------ progress

    def heartbeat(self, node: NodeRecord, beat: Heartbeat) -> None:
        """Keep the score of each attempt the node runs and reports."""
        for task_id, score in beat.progress.items():
            attempt = beat.attempts.get(task_id)
            reported = (attempt, score)
            if attempt is not None and task_id in node.running and node.scores.get(task_id) != reported:
                node.scores[task_id] = reported  # type: ignore[assignment]
                node.touch()  # its running tasks' views show the score

    def score(self, node: NodeRecord, task_id: str, attempt: int, started: float) -> tuple[float, float]:
        """(score, rate) of the attempt on the node, started at ``started``: 0 until reported."""
        reported = node.scores.get(task_id)
        if reported is None or reported[0] != attempt:
            return 0.0, 0.0
        elapsed = self.core.journal.now() - started
        return reported[1], (reported[1] / elapsed if elapsed > 0 else 0.0)

    # ------------------------------------------------------------------ the round

    def step(self) -> None:
        """After a scheduling round: ask the speculator, launch the copies that hold."""
        if not self.enabled:
            return
        snapshot = self.snapshot()
        if not snapshot.attempts:
            return
        for decision in self.speculator.speculate(snapshot):
            self.launch(decision)

    def snapshot(self) -> SpeculationSnapshot:
        """Every running attempt with its score and rate, the groups they belong to, the nodes."""
        attempts: list[AttemptView] = []
        nodes = []
        for node in self.core.nodes.values():
            if node.status in ("up", "draining"):
                attempts.extend(self._attempts_on(node))
                nodes.append(self._node_view(node))
        counts: dict[str, int] = defaultdict(int)
        for view in attempts:
            counts[view.task_id] += 1
        views = tuple(replace(a, copies=counts[a.task_id]) if counts[a.task_id] > 1 else a for a in attempts)
        return SpeculationSnapshot(self.core.journal.now(), views, self._groups(views), tuple(nodes))

    def _attempts_on(self, node: NodeRecord) -> list[AttemptView]:
        now, views = self.core.journal.now(), []
        for task_id, (job, key) in node.running.items():
            record = job.tasks[key]
            if record.status != "running":
                continue
            attempt, started = job.attempt_on(key, node.node_id)
            started = started if started is not None else now
            score, rate = self.score(node, task_id, attempt, started)
            view = AttemptView(
                task_id, job.job_id, key[0], key[1], attempt, node.node_id, started, record.memory_mb,
                score, rate, speculative=_is_copy(job, key, attempt),
            )  # fmt: skip
            views.append(view)
        return views

    def _node_view(self, node: NodeRecord) -> SpeculationNode:
        used = sum(job.tasks[key].memory_mb for job, key in node.running.values())
        done, rates = self.node_rates.get(node.node_id, (0, 0.0))
        return SpeculationNode(
            node.node_id,
            node.node_class,  # type: ignore[arg-type]
            node.slots,
            max(0, node.slots - len(node.running)),
            node.memory_mb - used,
            draining=node.status == "draining",
            kill_at=self.kill_at(node.node_id),
            finished_tasks=int(done),
            finished_rate=rates / done if done else 0.0,
        )

    def _groups(self, attempts: tuple[AttemptView, ...]) -> tuple[TaskGroup, ...]:
        groups = {(a.job_id, a.stage) for a in attempts}
        out = []
        for job_id, stage in sorted(groups):
            job = self.core.jobs[job_id]
            pending = len(job.progress.pending[stage])
            finished = tuple(self.finished.get((job_id, stage), ()))
            out.append(TaskGroup(job_id, stage, job.plan.stages[stage].tasks, pending, finished))
        return tuple(out)

    # ------------------------------------------------------------------ launching a copy

    def launch(self, decision: Speculate) -> None:
        core = self.core
        job = core.jobs.get(decision.task_id.partition(".")[0])
        key = job.key_of(decision.task_id) if job else None
        node = core.nodes.get(decision.node_id)
        if job is None or key is None or node is None:
            return
        record = job.tasks[key]
        origin = core.nodes.get(record.node or "")
        launch = origin.launches.get(decision.task_id) if origin is not None else None
        if (
            record.status != "running"
            or key in job.copies
            or record.pushes
            or launch is None
            or launch.task.streamed
            or node.status != "up"
            or decision.task_id in node.running
            or not _fits(node, record.memory_mb)
        ):
            return
        attempt = job.next_attempt(key)
        now = core.journal.now()
        job.copies[key] = Copy(attempt, node.node_id, now)
        job.copy_attempts.setdefault(key, set()).add(attempt)
        url = launch.task.output_url
        spec = launch.task.model_copy(
            update={"attempt": attempt, "output_url": f"{url.rsplit('/', 1)[0]}/{attempt}" if url else None}
        )
        message = LaunchTask(task=spec)
        core.senders.launched(decision.task_id, attempt, node.node_id)
        node.track_launch(decision.task_id, (job, key), message, now)
        core.send(node.node_id, message)
        self.stats[job.job_id][0] += 1
        role = {"role": "copy", "reason": decision.reason}
        core.records.task_started(job, key, node, attempt, record.memory_mb, **role)

    # ------------------------------------------------------------------ outcomes

    def copy_update(self, node: NodeRecord, update: TaskUpdate, job: JobRuntime, key: TaskKey) -> bool:
        """Apply an update of the task's copy; False when it is not the copy's (the original's,
        or stale). A copy's success first makes the copy the task's attempt (the original is
        killed) and is then applied as any success, by the caller: returns False then too."""
        copy = job.copies.get(key)
        if copy is None or (copy.attempt, copy.node) != (update.attempt, node.node_id):
            return False
        if update.state == "running":
            node.acked.add(update.task_id)
            return True
        if update.state == "succeeded":
            self._kill_original(job, key)
            self.stats[job.job_id][1] += 1
            return False
        node.forget_launch(update.task_id)
        del job.copies[key]
        self.core.records.task_finished(job, key, node, "failed", update.failure or "", update, copy=copy)
        if update.lost_blocks:
            job.lose_blocks(set(update.lost_blocks))
        self.core.kick()
        return True

    def succeeded(self, job: JobRuntime, key: TaskKey, now: float) -> None:
        """The task's attempt succeeded: its duration counts, a copy still running is killed."""
        if not self.enabled:
            return
        record = job.tasks[key]
        if record.started is not None:
            self.finished[(job.job_id, key[0])].append(now - record.started)
            self._node_finished(record.node, now - record.started)
        copy = job.copies.pop(key, None)
        if copy is not None:
            node = self.core.nodes.get(copy.node)
            if node is not None:
                self.kill(job, key, node, (copy.attempt, copy.started), copy, *_LOST_RACE)

    def takes_over(self, job: JobRuntime, key: TaskKey, failure: str | None) -> bool:
        """The original attempt ended without success: whether its copy goes on in its place
        (then the task stays running, as the copy). Not after a data failure: every attempt
        meets it."""
        copy = job.copies.get(key)
        if copy is None or failure == "data":
            return False
        self._promote(job, key, copy)
        return True

    def node_lost(self, node: NodeRecord) -> None:
        """The node is lost: its copies end (``lost``), and an original that ran there hands
        its task to its copy elsewhere."""
        if not self.enabled:
            return
        for task_id, (job, key) in list(node.running.items()):
            copy = job.copies.get(key)
            if copy is None:
                continue
            cause = f"its node {node.node_id} was lost"
            if copy.node == node.node_id:
                del job.copies[key]
                self.core.records.task_finished(job, key, node, "lost", "node_lost", cause=cause, copy=copy)
            elif job.tasks[key].node == node.node_id and job.tasks[key].status == "running":
                self.core.records.task_finished(job, key, node, "lost", "node_lost", cause=cause)
                self._promote(job, key, copy)
            node.forget_launch(task_id)

    def vanished(self, node: NodeRecord, task_id: str, job: JobRuntime, key: TaskKey, cause: str) -> bool:
        """An attempt its node no longer accounts for ends (``vanished``) if its task has a copy:
        a copy is dropped, an original hands its task to its copy. False: no copy."""
        copy = job.copies.get(key)
        if copy is None:
            return False
        node.forget_launch(task_id)
        if copy.node == node.node_id:
            del job.copies[key]
            self.core.records.task_finished(job, key, node, "failed", "vanished", cause=cause, copy=copy)
        else:
            self.core.records.task_finished(job, key, node, "failed", "vanished", cause=cause)
            self._promote(job, key, copy)
        self.core.kick()
        return True

    def job_counts(self, job: JobRuntime) -> dict[str, Any]:
        """``job_finished``'s speculation fields (none without speculation) and preemption's
        (none for a job with no attempt preempted)."""
        preempted = self.preempted.get(job.job_id, 0)
        if not self.enabled and not preempted:
            return {}
        launched, won, wasted = self.stats.get(job.job_id, (0, 0, 0.0))
        counts: dict[str, Any] = {}
        if self.enabled:
            counts = {"speculative_attempts": int(launched), "speculative_wins": int(won)}
        if preempted:
            counts["preempted_attempts"] = preempted
        return {**counts, "wasted_slot_s": round(wasted, 4)}

    # ------------------------------------------------------------------ helpers

    def _node_finished(self, node_id: str | None, seconds: float) -> None:
        """An attempt succeeded on the node after ``seconds``: its history gains its rate."""
        if node_id is not None and seconds > 0:
            history = self.node_rates[node_id]
            history[0] += 1
            history[1] += 1.0 / seconds

    def _kill_original(self, job: JobRuntime, key: TaskKey) -> None:
        """The copy succeeded first: the original is killed, the copy becomes the task's attempt."""
        record, copy = job.tasks[key], job.copies[key]
        node = self.core.nodes.get(record.node or "")
        if node is not None and record.status == "running":
            self.kill(job, key, node, (record.attempt, record.started), None, *_LOST_RACE)
        self._promote(job, key, copy)

    def kill(
        self,
        job: JobRuntime,
        key: TaskKey,
        node: NodeRecord,
        attempt: tuple[int, float | None],
        copy: Copy | None,
        failure: str,
        cause: str,
    ) -> None:
        """Cancel the attempt (its number, its start) on the node: a ``killed`` row, its
        slot-seconds counted as wasted (speculation's losers, preempted attempts)."""
        task_id = job.task_id(key)
        now = self.core.journal.now()
        self.core.send(node.node_id, CancelTask(task_id=task_id, attempt=attempt[0]))
        self.core.records.task_finished(job, key, node, "killed", failure, cause=cause, copy=copy)
        node.forget_launch(task_id)
        self.stats[job.job_id][2] += now - attempt[1] if attempt[1] is not None else 0.0

    @staticmethod
    def _promote(job: JobRuntime, key: TaskKey, copy: Copy) -> None:
        record = job.tasks[key]
        del job.copies[key]
        record.node = copy.node
        record.attempt = copy.attempt
        record.started = copy.started

    def role(self, job: JobRuntime, key: TaskKey, attempt: int) -> dict[str, str]:
        """A ``task_finished`` row's role (only under speculation)."""
        if not self.enabled:
            return {}
        return {"role": "copy" if attempt in job.copy_attempts.get(key, ()) else "original"}


def _is_copy(job: JobRuntime, key: TaskKey, attempt: int) -> bool:
    """Whether the attempt is the task's copy beside its original now."""
    copy = job.copies.get(key)
    return copy is not None and copy.attempt == attempt


def _fits(node: NodeRecord, memory_mb: int) -> bool:
    if len(node.running) >= node.slots:
        return False
    used = sum(job.tasks[key].memory_mb for job, key in node.running.values())
    return used + memory_mb <= node.memory_mb
