"""The scheduling round: the snapshot a policy sees, its decisions validated and applied.

``snapshot`` is a query: the jobs' ready tasks (the recovery strategy's ``plan``),
the nodes up or draining with what runs on them. ``schedule_once`` asks the
scheduler policy and applies what it decided: a launch is a ``Send(LaunchTask)``
and a ``task_started`` event; a decision that no longer holds (a node gone, a
task started elsewhere) is dropped, and the task waits for the next round.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from master.autoscalers.revocation import revocation_outcome
from master.core.exposure import NONE, Exposure, exposure
from master.core.jobs import LIVE, JobRuntime, TaskKey
from master.core.node_views import NodeViews
from master.core.nodes import NodeRecord
from master.core.ports import CorePort
from master.core.preemption import preempt, preemptible
from master.core.task_records import TaskRecord
from master.core.turns import PlacementTurns
from master.schedulers.window import PendingWindow
from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    Decision,
    Dequeue,
    Enqueue,
    JobView,
    LogDecision,
    Migrate,
    PendingTask,
    Preempt,
    Reserve,
    RunningTask,
    Scheduler,
)
from testbed.api.strategy import Ready, TaskLaunch, TaskStarted, Tick
from testbed.wire.protocol import BlockRef, LaunchTask, TaskSpec

Pending = dict[str, tuple[JobRuntime, TaskKey]]


class SchedulingRound:
    def __init__(self, core: CorePort, scheduler: Scheduler) -> None:
        self.core = core
        self.scheduler = scheduler
        self.output_base = ""
        """Where final tasks upload their output (the shell's HTTP sink), before ``/outputs/...``."""
        self.unavailable: Callable[[], frozenset[str]] = frozenset
        """The node classes whose capacity is out now (the chaos rules say; none by default)."""
        self.nodes = NodeViews(core.nodes, core.settings.cluster, self._running_views)
        """The nodes' views, rebuilt only where they changed."""
        self.views_needed: bool = scheduler.needs_node_views
        """Whether the round's snapshot shows the nodes' views (a plugin that does not declare it
        was given the interface's default when it loaded: ``testbed.scenario.plugins``)."""
        self.free_needed: bool = scheduler.needs_free_index
        """Whether the round's snapshot indexes the free nodes (``ClusterSnapshot.free``)."""
        self.exposure_needed: bool = scheduler.needs_exposure
        """Whether the pending tasks' views show their outputs' exposure and their own expected
        run (else 0, 0 and 0)."""
        self._pending_views: dict[str, PendingTask] = {}
        """The last snapshot's pending tasks, by id (``_pending_task``)."""
        self._job_views: dict[str, JobView] = {}
        """The last snapshot's jobs, by id (``_job_view``)."""
        self._shown_jobs: dict[str, JobView] = {}
        """This snapshot's, as it is built (the last but one's dict, reused)."""
        self.news: Callable[[], float | None] = lambda: None
        """The time of the first news since the last round, taken (``Outbox.take_news``)."""
        self.turns = PlacementTurns()
        """Each ready task's turn and each placement's latency (summary.json's)."""
        self.in_flight: tuple[list[Decision], Pending] | None = None
        """A deferred round's decisions and the tasks they may place, until ``land``."""
        self.asked = False
        """Whether the last round asked the scheduler (it does not when nothing is pending)."""
        self.modelled_s: float | None = None
        """The scheduler's model of its last round's time (``Scheduler.modelled_round_s``)."""

    # ------------------------------------------------------------------ the snapshot

    def snapshot(self, free: bool = False) -> tuple[ClusterSnapshot, Pending]:
        """``free``: the scheduling round's snapshot: with the nodes with a free slot indexed
        (``ClusterSnapshot.free``) if the scheduler reads them, no node views if it needs none,
        and only a window of the ready tasks if it places the head of the queue. Any other
        snapshot (the autoscaler's) holds every ready task."""
        core = self.core
        now = core.journal.now()
        pending: Pending = {}
        jobs = []
        window = self._pending_window() if free else None
        previous, self._pending_views = self._pending_views, {}
        self._job_views, self._shown_jobs = self._shown_jobs, self._job_views
        self._shown_jobs.clear()
        for job in core.live_jobs.jobs():
            tasks = []
            exposures: dict[int, Exposure] = {}
            for ready in core.recovery.plan(job):
                if window is not None and window.full:
                    break
                key = ready.key
                excluded = self.exclusions(job.tasks[key])
                if window is not None and not window.admits(
                    ready.classes, excluded, job.ideal_memory_mb(key[0])
                ):
                    continue
                task_id = job.task_id(key)
                pending[task_id] = (job, key)
                stage = key[0]
                if stage not in exposures:
                    exposures[stage] = (
                        exposure(job, stage, core.durations, now) if self.exposure_needed else NONE
                    )
                task = self._pending_task(
                    previous.get(task_id), task_id, job, key, ready, excluded, exposures[stage]
                )
                self._pending_views[task_id] = task
                tasks.append(task)
            jobs.append(self._job_view(job, tuple(tasks)))
        self._prune_queues(pending)
        nodes = self.nodes.views() if not free or self.views_needed else ()
        increment = core.settings.cluster.memory_increment_mb
        indexed = self.nodes.free_index() if free and self.free_needed else None
        return ClusterSnapshot(now, nodes, tuple(jobs), increment, self.unavailable(), indexed), pending

    def _job_view(self, job: JobRuntime, tasks: tuple[PendingTask, ...]) -> JobView:
        """The job's view: the last snapshot's when it shows the same (most jobs' pending
        tasks and counts are the same from one round to the next), else a new one."""
        cached = self._job_views.get(job.job_id)
        running, done = job.running_count, job.done_count
        if cached is None or (cached.running, cached.done_tasks, cached.pending) != (running, done, tasks):
            cached = JobView(job.job_id, job.submitted, tasks, running, done, job.plan.total_tasks)
        self._shown_jobs[job.job_id] = cached
        return cached

    def _pending_task(
        self,
        cached: PendingTask | None,
        task_id: str,
        job: JobRuntime,
        key: TaskKey,
        ready: Ready,
        excluded: frozenset[str],
        exposed: Exposure,
    ) -> PendingTask:
        """The task's view: the last snapshot's when it shows the same (a ready task is in
        every snapshot until it starts: YARN-ME's round sees all of them, and checking a
        view costs a tenth of building one), else a new one. ``exposed``: its output's
        exposure and its own run's estimate (``master.core.exposure``)."""
        preferred, allowed = ready.preferred, ready.classes
        ideal = job.ideal_memory_mb(key[0])
        input_bytes, on_node = self.core.inputs.held(job.job_id, task_id)
        if (
            cached is not None
            and cached.input_on_node == on_node
            and cached.preferred_nodes == preferred
            and cached.allowed_classes == allowed
            and cached.excluded_nodes == excluded
            and cached.ideal_memory_mb == ideal
            and cached.est_duration_s == job.est_duration_s
            and cached.long == job.long
            and cached.workload == job.workload
            and cached.exposed_s == exposed.exposed_s
            and cached.loss_s == exposed.loss_s
            and cached.expected_run_s == exposed.run_s
        ):
            return cached
        return PendingTask(
            task_id,
            job.job_id,
            key[0],
            key[1],
            ideal,
            job.est_duration_s,
            preferred_nodes=preferred,
            allowed_classes=allowed,
            long=job.long,
            excluded_nodes=excluded,
            workload=job.workload,
            input_bytes=input_bytes,
            input_on_node=on_node,
            exposed_s=exposed.exposed_s,
            loss_s=exposed.loss_s,
            expected_run_s=exposed.run_s,
        )

    def _pending_window(self) -> PendingWindow | None:
        """Which ready tasks a snapshot needs: all of them for schedulers that look ahead
        (YARN-ME's timeline), a window per node class for those that place the head (FIFO)."""
        if self.scheduler.needs_all_pending:
            return None
        return self.nodes.window()

    def running_views(self, node: NodeRecord) -> tuple[RunningTask, ...]:
        """The node's running tasks as the policies see them."""
        return self._running_views(node)[0]

    def _running_views(self, node: NodeRecord) -> tuple[tuple[RunningTask, ...], bool]:
        """The node's running tasks' views, and whether one of them is of a task not yet
        started (its view then changes with the round's time). A task's view is fixed once
        it has started, so each is built once per attempt, not in every scheduling round."""
        cache, views, volatile = node.views, [], False
        for task_id, (job, key) in node.running.items():
            record = job.tasks[key]
            attempt, started = job.attempt_on(key, node.node_id)
            score = node.scores.get(task_id)
            cached = cache.get(task_id)
            if cached is not None and cached[0] == attempt and cached[2] == score:
                views.append(cached[1])
                continue
            view = self._running_view(task_id, job, record, node, attempt, started)
            if started is not None:
                cache[task_id] = (attempt, view, score)
            else:
                volatile = True
            views.append(view)
        if len(cache) > 2 * len(node.running) + 16:  # forget tasks that ended
            node.views = {task_id: cache[task_id] for task_id in node.running if task_id in cache}
        return tuple(views), volatile

    def _running_view(
        self,
        task_id: str,
        job: JobRuntime,
        record: TaskRecord,
        node: NodeRecord,
        attempt: int,
        at: float | None,
    ) -> RunningTask:
        started = at if at is not None else self.core.journal.now()
        duration = record.predicted_s if record.predicted_s is not None else job.est_duration_s
        score, rate = self.core.copies.score(node, task_id, attempt, started) if node.scores else (0.0, 0.0)
        return RunningTask(
            task_id,
            job.job_id,
            record.memory_mb,
            started,
            started + duration,
            record.elastic,
            long=job.long,
            disk_mb_s=record.disk_mb_s,
            progress=score,
            progress_rate=rate,
        )

    def exclusions(self, record: TaskRecord) -> frozenset[str]:
        """The nodes a task must avoid, unless that is every node up: then anywhere will do."""
        if not record.excluded_nodes:
            return frozenset()
        up = self.nodes.up()
        return frozenset() if up <= record.excluded_nodes else frozenset(record.excluded_nodes & up)

    # ------------------------------------------------------------------ the round

    def schedule_once(self, defer: bool = False) -> ClusterSnapshot:
        """Ask the scheduler and apply its decisions; the snapshot it saw (before them).
        ``defer``: hold the decisions as the round in flight (``in_flight``), applied by
        ``land`` when the shell says its charged time is over (``simulation.charge_policy_time``)."""
        self.core.recovery.react(Tick())
        snapshot, pending = self.snapshot(free=True)
        self.turns.seen(snapshot, self.news())
        self.asked = False
        if not any(job.pending for job in snapshot.jobs):
            return snapshot
        decisions = self.scheduler.schedule(snapshot)
        self.asked = True
        self.modelled_s = self.scheduler.modelled_round_s()
        if defer:
            self.in_flight = (decisions, pending)
        else:
            self._apply(decisions, pending)
        return snapshot

    def land(self) -> None:
        """The round in flight takes effect now: each decision that still holds is applied
        (a task no longer ready, or whose node is gone or full, waits for the next round)."""
        if self.in_flight is None:
            return
        decisions, pending = self.in_flight
        self.in_flight = None
        jobs = {job.job_id: job for job, _ in pending.values() if job.status in LIVE}
        ready = {job.task_id(r.key) for job in jobs.values() for r in self.core.recovery.plan(job)}
        self._apply(decisions, {task_id: where for task_id, where in pending.items() if task_id in ready})

    def _apply(self, decisions: list[Decision], pending: Pending) -> None:
        for decision in decisions:
            if isinstance(decision, Assign):
                self._assign(decision, pending)
            elif isinstance(decision, Reserve):
                node = self.core.nodes.get(decision.node_id)
                if node is not None:
                    self.core.records.reserve(node, decision.job_id)
            elif isinstance(decision, LogDecision):
                self._log_decision(decision)
            elif isinstance(decision, Enqueue | Dequeue):
                self._apply_queue_decision(decision, pending)
            elif isinstance(decision, Preempt | Migrate):
                self._preempt(decision)

    def _preempt(self, decision: Preempt | Migrate) -> None:
        """Kill the running attempt and re-queue its task (``master.core.preemption``); a
        migration also starts it on its target, checked first as an ``Assign`` would be."""
        where = preemptible(self.core, decision.task_id)
        if where is None:
            return
        job, key, origin = where
        record = job.tasks[key]
        if isinstance(decision, Migrate):
            target = self.core.nodes.get(decision.node_id)
            if (
                target is None
                or target is origin
                or not _may_start(target, decision.task_id)
                or not _fits(target, record.memory_mb)
                or target.node_id in self.exclusions(record)
                or (record.allowed_classes is not None and target.node_class not in record.allowed_classes)
            ):
                return
            preempt(self.core, where, _because(f"migrated to {target.node_id}", decision.reason))
            move = Assign(
                decision.task_id, target.node_id, record.memory_mb, record.elastic,
                record.predicted_s, record.disk_mb_s,
            )  # fmt: skip
            self._assign(move, {decision.task_id: (job, key)})
        else:
            preempt(self.core, where, _because("preempted by the scheduler", decision.reason))

    def _log_decision(self, decision: LogDecision) -> None:
        """The scheduler's decision statistics (regular, elastic accepted or rejected, reserved):
        a ``decision`` event, which makes its row of decisions.csv."""
        self.core.journal.event(
            "decision",
            job=decision.job_id,
            task=decision.task_id,
            decision=decision.decision,
            node=decision.node_id,
            detail=dict(decision.detail),
        )

    def _assign(self, decision: Assign, pending: Pending) -> None:
        core = self.core
        node = core.nodes.get(decision.node_id)
        located = pending.pop(decision.task_id, None)
        if node is None or located is None or not _may_start(node, decision.task_id):
            return
        if not _fits(node, decision.memory_mb):  # a policy's decision is checked, not trusted
            core.journal.say(
                "warning",
                f"{decision.task_id} refused: {node.node_id} has no free slot or less than "
                f"{decision.memory_mb} MB free",
            )
            return  # the task waits for another round
        if decision.task_id in node.queued:
            node.queued.remove(decision.task_id)
        job, key = located
        if node.node_id in self.exclusions(job.tasks[key]):
            return  # a policy that ignores PendingTask.excluded_nodes: the task waits for another round
        allowed = self._allowed_classes(decision.task_id, job.tasks[key])
        if allowed is not None and node.node_class not in allowed:
            core.journal.say("warning", f"{decision.task_id} refused: {node.node_id} is not of its classes")
            return  # a policy that ignores PendingTask.allowed_classes: the task waits for another round
        job.tasks[key].allowed_classes = allowed
        now = core.journal.now()
        self.turns.placed(decision.task_id, now)
        attempt = job.launched(key, node.node_id, decision.memory_mb, now, decision.elastic)
        core.senders.launched(decision.task_id, attempt, node.node_id)
        job.tasks[key].predicted_s = decision.predicted_duration_s
        job.tasks[key].disk_mb_s = decision.disk_mb_s
        plan = core.recovery.launch(job, key)
        job.tasks[key].pushes = plan.pushing
        read = core.inputs.launched(job, key, node.node_id)
        replica = None if read is None else core.inputs.replica(job, key, attempt, node.node_id, self._url_of)
        launch = LaunchTask(task=self._spec(job, key, attempt, decision, plan, read, replica))
        node.forget_launch(decision.task_id)
        node.track_launch(decision.task_id, (job, key), launch, now)
        core.send(node.node_id, launch)
        core.records.task_started(
            job, key, node, attempt, decision.memory_mb, **core.inputs.read_plan(job, key, attempt)
        )
        core.recovery.react(TaskStarted(job.job_id, key, attempt, node.node_id, plan))

    def _allowed_classes(self, task_id: str, record: TaskRecord) -> frozenset[str] | None:
        """The classes the task's view in this round's snapshot allowed; for a task not shown
        (a migration's), those of its last placement."""
        view = self._pending_views.get(task_id)
        return record.allowed_classes if view is None else view.allowed_classes

    def _url_of(self, node_id: str) -> str:
        node = self.core.nodes.get(node_id)
        return node.url if node is not None else ""

    def _spec(
        self,
        job: JobRuntime,
        key: TaskKey,
        attempt: int,
        decision: Assign,
        plan: TaskLaunch,
        read: dict[str, Any] | None = None,
        replica: BlockRef | None = None,
    ) -> TaskSpec:
        stage = job.plan.stages[key[0]]
        output_url = f"{self.output_base}/outputs/{job.job_id}/{key[1]}/{attempt}" if stage.final else None
        return TaskSpec(
            task_id=decision.task_id,
            job_id=job.job_id,
            stage=key[0],
            index=key[1],
            attempt=attempt,
            op=stage.op,
            memory_mb=decision.memory_mb,
            params=stage.params(key[1]) if read is None else {**stage.params(key[1]), "input_from": read},
            inputs=plan.inputs,
            partitions=stage.partitions,
            final=stage.final and stage.writes_output,
            output_url=output_url,
            push=plan.push,
            push_rate_bytes_s=plan.push_rate_bytes_s,
            input_cache_mb=plan.input_cache_mb,
            streamed=plan.streamed,
            broadcast=tuple(d for d, dep in enumerate(stage.deps) if dep.kind == "broadcast"),
            report_progress=self.core.copies.enabled,
            replica=replica,
        )

    # ------------------------------------------------------------------ node-side queues

    def _apply_queue_decision(self, decision: Enqueue | Dequeue, pending: Pending) -> None:
        """Apply Enqueue (append to the node's queue) or Dequeue (remove from it) literally."""
        node = self.core.nodes.get(decision.node_id)
        if node is None:
            return
        if isinstance(decision, Enqueue):
            if node.status == "up" and decision.task_id in pending and decision.task_id not in node.queued:
                node.queued.append(decision.task_id)
                copy = {"copy": True} if decision.copy else {}
                self.core.journal.event("task_queued", task=decision.task_id, node=node.node_id, **copy)
        elif decision.task_id in node.queued:
            node.queued.remove(decision.task_id)
            self.core.journal.event(
                "task_dequeued", task=decision.task_id, node=node.node_id, reason=decision.reason
            )

    def _prune_queues(self, pending: Pending) -> None:
        """Queues hold pending tasks only: drop tasks that started, or whose job ended, elsewhere."""
        for node_id in self.nodes.queueing():
            node = self.core.nodes[node_id]
            if not all(task_id in pending for task_id in node.queued):
                node.queued[:] = [task_id for task_id in node.queued if task_id in pending]

    def forget_queue(self, node: NodeRecord) -> None:
        """A node leaves: its queue goes with it (CloudCoaster's copy rule keeps a copy elsewhere).

        Journals ``revocation_outcome``: copies that survive on other nodes, tasks
        queued only there (the scheduler places them again: they are pending and
        unqueued), and running tasks (re-pended by ``node_lost``).
        """
        if node.queued and node.status in ("up", "draining"):  # so it is in the snapshot
            outcome = revocation_outcome(self.snapshot()[0], node.node_id)
            self.core.journal.event(
                "revocation_outcome",
                node=node.node_id,
                surviving=[task for task, _ in outcome.surviving],
                requeue=list(outcome.requeue),
                rerun=list(outcome.rerun),
            )
        node.queued.clear()


def _because(what: str, reason: str) -> str:
    return f"{what}: {reason}" if reason else what


def _may_start(node: NodeRecord, task_id: str) -> bool:
    """A node that is up takes any task; a draining one only runs its own queue to the end."""
    return node.status == "up" or (node.status == "draining" and task_id in node.queued)


def _fits(node: NodeRecord, memory_mb: int) -> bool:
    """Whether the node has a free slot and ``memory_mb`` free for one more task."""
    if len(node.running) >= node.slots:
        return False
    used = sum(job.tasks[key].memory_mb for job, key in node.running.values())
    return used + memory_mb <= node.memory_mb
