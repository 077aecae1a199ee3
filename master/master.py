"""The master: the imperative shell around the pure policies.

It keeps the node registry (from MQTT), turns jobs into tasks, asks the
scheduler policy what to run where, sends launch commands, applies task
results, detects lost nodes (Last Will first, heartbeat timeout as fallback)
and recovers through lineage, commits final outputs exactly once, and writes
the journal as it goes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from master.api import MasterApi
from master.autoscaling import AutoscalingShell
from master.chaos.controller import ChaosController
from master.core.lifecycle import NODE
from master.disk_faults import DiskFullNodes, journal_disk_full
from master.jobs import JobRuntime, TaskKey, TaskRecord
from master.journal import Journal
from master.liveness_shell import LivenessShell
from master.node_start import NodeStarts
from master.nodes import NodeRecord
from master.policies import make_scheduler, stage_memory
from master.policies.base import (
    Assign,
    Autoscaler,
    ClusterSnapshot,
    Dequeue,
    Enqueue,
    JobView,
    LogDecision,
    NodeClass,
    NodeView,
    PendingTask,
    Reserve,
    RunningTask,
    Scheduler,
)
from master.policies.cloudcoaster import revocation_outcome
from master.policies.static import StaticAutoscaler
from master.policies.window import FreeNode, PendingWindow
from master.providers.base import NodeProvider
from master.run_records import RunRecords
from master.senders import SenderCheck
from master.signing import CommandSigner
from master.strategies import make_strategy
from testbed.arrivals import is_long
from testbed.capabilities import RunKeys
from testbed.mqtt import MAX_BACKOFF_S, BrokerAddress, MqttLink
from testbed.protocol import (
    BlockReceived,
    Codec,
    Heartbeat,
    LaunchTask,
    Message,
    NodeState,
    PushDelivered,
    Resync,
    TaskSpec,
    TaskUpdate,
    Topics,
)
from testbed.scenario import Scenario
from testbed.workloads import plan_job

log = logging.getLogger("master")
REPLACED_LOSSES = ("heartbeat_timeout", "crashed")
"""Losses the chaos controller did not cause (it replaces its own evictions itself)."""
BACKLOG_TURNS = 256
"""At most this many event-loop turns go to received messages before a scheduling round."""


class Master:
    resumed_from: float = 0.0
    """Where this master's segment of the run starts on the run's clock (``ResumedMaster``)."""

    def __init__(
        self,
        scenario: Scenario,
        run_id: str,
        run_dir: Path,
        provider: NodeProvider,
        broker: BrokerAddress,
        token: str,
        agent_command: Callable[[str, str], list[str]],
        http_host: str = "127.0.0.1",
        advertise: str = "127.0.0.1",
        autoscaler: Autoscaler | None = None,
        agent_env: dict[str, str] | None = None,
        attach: bool = False,
        node_env: Callable[[str], Awaitable[dict[str, str]]] | None = None,
    ) -> None:
        """``token`` is the run secret (``testbed.capabilities``); ``node_env(node_id)``: the
        extra environment of one agent (its broker login). ``attach``: the initial nodes are
        started by someone else (compose, Swarm); the master waits for the scenario's node
        counts to come up and adopts them."""
        self.scenario = scenario
        self.run_id = run_id
        self.run_dir = run_dir
        self.provider = provider
        self.broker = broker
        self.scheduler: Scheduler = make_scheduler(scenario)
        self.stage_memory = stage_memory(scenario)
        self.keys = RunKeys(token)
        self.signer = CommandSigner(self)
        self.agent_command = agent_command
        self.http_host = http_host
        self.advertise = advertise
        self.agent_env = agent_env or {}
        """Extra environment of every agent; never journaled."""
        self.node_env = node_env
        self.attach = attach
        self.topics = Topics(run_id)
        self.codec = Codec()
        self.journal = Journal(run_dir)
        self.journal.on_disk_full = lambda error: journal_disk_full(self, error)
        self.senders = SenderCheck(self.journal)
        self.nodes: dict[str, NodeRecord] = {}
        self.jobs: dict[str, JobRuntime] = {}
        self.arriving = scenario.arriving_jobs()
        self.expected_jobs = sum(job.repeat for job in scenario.jobs) + len(self.arriving)
        self.evictions = 0
        self.clock_started = False
        """Whether time 0 is set: before it, the journal's clock counts the cluster's launch."""
        self.evicted: list[dict[str, Any]] = []
        """Each eviction so far (time, node, class, reason), for the status API."""
        self.launch_acks: dict[tuple[str, int], float] = {}
        """Seconds from sending each launch to the agent's ``running`` (the fidelity monitor's)."""
        self._kick = asyncio.Event()
        self._timers: list[asyncio.TimerHandle] = []
        self.stoppers: list[Callable[[], Awaitable[None]]] = []
        """Helpers the run attached (its broker's keeper), stopped before the nodes are."""
        self.records = RunRecords(self)
        self.starts = NodeStarts(self)
        self.link = MqttLink(broker, f"{run_id}-master", self._on_message, self._on_connect)
        self.chaos = ChaosController(self)
        self.api = MasterApi(self)
        self.strategy = make_strategy(self)
        self.autoscaling = AutoscalingShell(self, autoscaler or StaticAutoscaler())
        self.full_disks = DiskFullNodes(self)
        self.liveness = LivenessShell(self)

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> bool:
        """Run every job to completion (or the scenario timeout); True when all succeeded."""
        runner = await self.api.start()
        self.link.start()
        loop = asyncio.get_running_loop()
        background = [
            asyncio.create_task(self._scheduling_loop()),
            asyncio.create_task(self._ticker()),
            asyncio.create_task(self.liveness.watch()),
        ]
        try:
            await self.starts.launch_initial()
            self._start_clock()
            self.chaos.start()
            self.autoscaling.start()
            self._schedule_arrivals(loop)
            await self._until_done(background)
        finally:
            self.chaos.stop()
            for timer in self._timers:
                timer.cancel()
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await self.liveness.stop()
            for stop in self.stoppers:
                await stop()
            await self.autoscaling.stop()
            await self.starts.shutdown()
            await self.link.close()
            await runner.cleanup()
        ok = self.records.all_succeeded()
        self.journal.event("run_finished", status="succeeded" if ok else "failed")
        self.journal.close()
        return ok

    async def _until_done(self, background: list[asyncio.Task[None]]) -> None:
        """Wait for every job to end, or the timeout. A background loop that dies (a bug in a
        policy or in the shell) ends the run at once with its jobs failed and the error in the
        journal, rather than leaving the run without a scheduler until its timeout."""
        all_done = asyncio.ensure_future(self.records.all_done.wait())
        try:
            done, _ = await asyncio.wait(
                [all_done, *background], timeout=self.scenario.timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            all_done.cancel()
        crashed = [task for task in done if task is not all_done]
        if crashed:
            error = crashed[0].exception()
            log.error("the master stopped on an internal error", exc_info=error)
            trace = "".join(traceback.format_exception(error))
            self.journal.event("master_error", error=repr(error), traceback=trace)
            self.records.fail_unfinished(f"internal error in the master: {error!r}")
        elif not done:
            self.records.fail_unfinished(f"the run hit its timeout of {self.scenario.timeout_s:.0f}s")

    def abort(self, reason: str) -> None:
        """End the run at once (its broker is gone for good): unfinished jobs fail with ``reason``."""
        log.error("the run cannot go on: %s", reason)
        self.journal.event("run_aborted", reason=reason)
        self.records.fail_unfinished(reason)
        self.records.all_done.set()

    def _start_clock(self) -> None:
        """Time 0 of the run is when its initial cluster is up."""
        self.set_time_zero(self.journal.clock())
        self.journal.event("run_started", run_id=self.run_id, name=self.scenario.name)
        for node in self.nodes.values():
            node.launched_t = 0.0

    def set_time_zero(self, t0: float) -> None:
        """Move the journal's time 0 to the clock reading ``t0``; the nodes' last heartbeats
        move with it, so a node silent since before keeps its silence (and is found lost)."""
        self.liveness.starting_up = False
        shift = t0 - self.journal.t0
        self.journal.t0 = t0
        self.clock_started = True
        for node in self.nodes.values():
            node.last_seen -= shift

    async def launch_node(self, node_class: str) -> NodeRecord:
        return await self.starts.launch(node_class)

    def _schedule_arrivals(self, loop: asyncio.AbstractEventLoop) -> None:
        ordinal = 0
        for spec in [*self.scenario.jobs, *self.arriving]:
            for repeat in range(spec.repeat):
                self.submit_later(
                    loop, self.scenario.trace(spec.submit_at + repeat * spec.every), spec, ordinal
                )
                ordinal += 1

    def submit_later(self, loop: asyncio.AbstractEventLoop, delay: float, spec: Any, ordinal: int) -> None:
        self.records.unsubmitted[ordinal] = spec
        self._timers.append(loop.call_later(delay, self.submit_job, spec, ordinal))

    def submit_job(self, spec: Any, ordinal: int) -> None:
        self.records.unsubmitted.pop(ordinal, None)
        try:
            job = self.new_job(spec, ordinal, self.journal.now())
        except Exception as exc:  # e.g. its input changed since validation: the job fails, not the run
            log.warning("job j%03d cannot be planned: %s", ordinal, exc)
            self.records.fail_unplanned(ordinal, spec, f"cannot plan the job: {exc}")
            self.records.check_all_done()
            return
        self.jobs[job.job_id] = job
        (self.run_dir / "outputs" / job.job_id).mkdir(parents=True, exist_ok=True)
        self.strategy.job_submitted(job)
        self.journal.event(
            "job_submitted",
            job=job.job_id,
            workload=spec.workload,
            tasks=job.plan.total_tasks,
            long=job.long,
            est_s=round(job.est_duration_s, 4),
        )
        self.kick()

    def new_job(self, spec: Any, ordinal: int, submitted: float) -> JobRuntime:
        """The ``ordinal``-th job of the scenario: the same id, seed and plan in every run of it."""
        seed = spec.seed if spec.seed is not None else self.scenario.seed * 1000 + ordinal
        plan = plan_job(spec, seed, self.scenario)
        memory = tuple(self.stage_memory(spec, stage) for stage in range(len(plan.stages)))
        job = JobRuntime(
            f"j{ordinal:03d}",
            spec.name or f"{spec.workload}-{ordinal}",
            spec.workload,
            plan,
            submitted,
            max(memory),
            stage_memory_mb=memory,
        )
        if spec.workload == "sleep":
            job.est_duration_s = self.scenario.trace(spec.estimate_s)
            job.long = is_long(spec.estimate_s, self.scenario.long_cutoff)
        return job

    # ------------------------------------------------------------------ MQTT

    async def _on_connect(self, link: MqttLink) -> None:
        for topic in (self.topics.state(), self.topics.heartbeat(), self.topics.task_updates()):
            await link.subscribe(topic)
        if link.session > 1:
            self._rejoined_broker()

    def _on_message(self, topic: str, payload: bytes) -> None:
        message = self.codec.decode(payload)
        if message is None:
            log.warning("dropped a malformed message on %s (%d so far)", topic, self.codec.malformed)
            return
        node = self.nodes.get(Topics.node_of(topic))
        if node is None and self.attach and isinstance(message, NodeState) and message.state == "up":
            node = self.starts.adopt(message)
        if node is None or not self.senders.allows(node.node_id, message, self._latest_attempt(message)):
            return
        if isinstance(message, TaskUpdate | Heartbeat) and message.cached_inputs is not None:
            node.cached_inputs = tuple((c.key, c.nbytes) for c in message.cached_inputs)
        if isinstance(message, TaskUpdate):
            self._on_task_update(node, message)
        elif isinstance(message, NodeState):
            self._on_node_state(node, message)
        elif isinstance(message, BlockReceived):
            self.strategy.block_received(node, message)
        elif isinstance(message, PushDelivered):
            self.strategy.push_delivered(node, message)
        elif isinstance(message, Heartbeat) and message.incarnation == node.incarnation:
            self.liveness.heartbeat(node, message)

    def _on_node_state(self, node: NodeRecord, state: NodeState) -> None:
        if state.state == "up" and node.status == "launching":
            node.status = NODE.next(node.status, "joined")
            node.incarnation, node.session = state.incarnation, state.session
            node.url = f"http://{state.host}:{state.port}"
            node.last_seen = self.journal.now()
            self.journal.event(
                "node_up", node=node.node_id, **{"class": node.node_class}, pid=state.pid, url=node.url
            )
            self.starts.node_joined()
            self.kick()
        elif state.incarnation != node.incarnation or not node.alive:
            return
        elif state.state == "draining" and node.status == "up":
            node.status = NODE.next(node.status, "drain")
        elif state.state == "lost":
            self.liveness.will(node, state.session)
        elif state.state == "gone":
            self.liveness.gone(node)
        if state.state in ("up", "draining") and state.session > node.session:
            self._agent_reconnected(node, state.session)

    def drain(self, node: NodeRecord, reason: str) -> None:
        """No new tasks go to the node (an eviction notice, an autoscaler removal)."""
        if node.status == "up":
            node.status = NODE.next(node.status, "drain")
            self.journal.event("node_draining", node=node.node_id, reason=reason)

    def undrain(self, node: NodeRecord, reason: str) -> None:
        """Take a draining node back into service (an autoscaler needs it again)."""
        if node.status == "draining":
            node.status = NODE.next(node.status, "undrain")
            self.journal.event("node_undrained", node=node.node_id, reason=reason)

    def release_node(self, node: NodeRecord, reason: str) -> None:
        """Stop a node gracefully (an autoscaler removal); nodes.csv says ``released``."""
        if not node.alive:
            return
        self.journal.event("node_release", node=node.node_id, **{"class": node.node_class}, reason=reason)
        self.node_lost(node, "released")

    def send(self, node_id: str, message: Message) -> None:
        """Publish a command, with the capabilities it needs minted for ``node_id``."""
        message = self.signer.sign(message)
        self.senders.sent(node_id, message)
        self.link.publish(self.topics.command(node_id), self.codec.encode(message))

    def _latest_attempt(self, message: Message) -> int | None:
        located = self._locate(message.task_id) if isinstance(message, TaskUpdate) else None
        return located[0].tasks[located[1]].attempt if located else None

    def running_views(self, node: NodeRecord) -> tuple[RunningTask, ...]:
        """The node's running tasks as the policies see them. A task's view is fixed once it
        has started, so each is built once per attempt, not in every scheduling round."""
        cache, views = node.views, []
        for task_id, (job, key) in node.running.items():
            record = job.tasks[key]
            cached = cache.get(task_id)
            if cached is not None and cached[0] == record.attempt:
                views.append(cached[1])
                continue
            view = self._running_view(task_id, job, record)
            if record.started is not None:
                cache[task_id] = (record.attempt, view)
            views.append(view)
        if len(cache) > 2 * len(node.running) + 16:  # forget tasks that ended
            node.views = {task_id: cache[task_id] for task_id in node.running if task_id in cache}
        return tuple(views)

    def _running_view(self, task_id: str, job: JobRuntime, record: TaskRecord) -> RunningTask:
        started = record.started if record.started is not None else self.journal.now()
        duration = record.predicted_s if record.predicted_s is not None else job.est_duration_s
        return RunningTask(
            task_id,
            job.job_id,
            record.memory_mb,
            started,
            started + duration,
            record.elastic,
            long=job.long,
            disk_mb_s=record.disk_mb_s,
        )

    def stored_bytes(self) -> dict[str, int]:
        """Bytes of live intermediate outputs held on each node (what an eviction would lose)."""
        by_url = {n.url: n.node_id for n in self.nodes.values() if n.alive}
        held: dict[str, int] = {}
        for job in self.jobs.values():
            if job.status not in ("waiting", "running"):
                continue
            for record in job.tasks.values():
                node_id = by_url.get(record.location or "")
                if record.available and node_id and not job.is_final(record):
                    held[node_id] = held.get(node_id, 0) + sum(record.partition_bytes)
        return held

    def record_eviction(
        self, node: NodeRecord, reason: str, lifetime_s: float | None, tasks_running: int, bytes_lost: int
    ) -> None:
        self.evictions += 1
        node.evicted_at = self.journal.now()
        self.evicted.append(
            {"t": round(node.evicted_at, 3), "node": node.node_id, "class": node.node_class, "reason": reason}
        )
        facts = {
            "reason": reason,
            "lifetime_s": lifetime_s,
            "tasks_running": tasks_running,
            "bytes_lost": bytes_lost,
        }
        # evictions.csv gets its row from this event (testbed.journal_tables.ROWS_FROM_EVENTS)
        self.journal.event("eviction", node=node.node_id, **{"class": node.node_class}, **facts)
        if node.status == "launching":  # it never connected: no Last Will or heartbeat will tell
            self.node_lost(node, "evicted_while_launching")

    def node_lost(self, node: NodeRecord, reason: str) -> None:
        """Forget a node and recover what it held: its running tasks and its stored outputs."""
        if not node.alive:
            return
        self._forget_queue(node)
        node.status = NODE.next(node.status, "released" if reason == "released" else "lost")
        now = self.journal.now()
        detect_s = now - node.evicted_at if node.evicted_at is not None else None
        self.journal.event(
            "node_lost", node=node.node_id, **{"class": node.node_class}, reason=reason, detect_s=detect_s
        )
        # An evicted node ended when it was killed, not when its loss was heard: its replacement
        # may already be launching, and the record never shows more nodes than were alive.
        self.records.node_row(node, node.evicted_at if node.evicted_at is not None else now, reason)
        self.strategy.before_node_lost(node)
        for job in self.jobs.values():
            if job.status in ("waiting", "running"):
                for key in job.node_lost(node.node_id, node.url):
                    self.records.task_row(job, key, node, "lost", "node_lost", now)
        self.strategy.after_node_lost(node)
        node.running.clear()
        node.launches.clear()
        node.sent_at.clear()
        node.acked.clear()
        node.vanish_resends.clear()
        if reason in REPLACED_LOSSES and not self.attach and not self.records.all_done.is_set():
            self.chaos.replace_lost(node)
        self.kick()

    def _on_task_update(self, node: NodeRecord, update: TaskUpdate) -> None:
        located = self._locate(update.task_id)
        if update.state == "running" and update.task_id in node.sent_at:  # the first, not a redelivery
            key = (update.task_id, update.attempt)
            self.launch_acks.setdefault(key, self.journal.now() - node.sent_at[update.task_id])
        if located is not None and update.state == "running":
            record = located[0].tasks[located[1]]
            if (record.attempt, record.node, record.status) == (update.attempt, node.node_id, "running"):
                node.acked.add(update.task_id)
            return
        if located is None:
            return
        job, key = located
        record = job.tasks[key]
        if record.attempt != update.attempt or record.status != "running" or record.node != node.node_id:
            return  # stale or duplicate (QoS 1 redelivery): already applied
        self._forget_launch(node, update.task_id)
        job.count_cache_use(update.metrics)
        stage = job.plan.stages[key[0]]
        ok = update.state == "succeeded"
        if ok and not stage.final and len(update.partition_bytes) != stage.partitions:
            log.warning(
                "%s reported %d partitions, not %d",
                update.task_id,
                len(update.partition_bytes),
                stage.partitions,
            )
            ok, update = False, update.model_copy(update={"failure": "error"})
        if ok and stage.final and stage.writes_output:
            ok = self.api.commit_output(job.job_id, key[1], update.attempt)
        if ok:
            self.strategy.task_succeeded(job, key, node, update, self.journal.now())
        else:
            if update.lost_blocks:
                job.lose_blocks(set(update.lost_blocks))
            real_failure = update.failure not in ("fetch", "cancelled")
            fatal = update.failure == "data"
            job.failed(key, update.attempt, counts_as_failure=real_failure, error=update.error, fatal=fatal)
            if update.failure in ("enospc", "oom"):
                self._resource_fault(node, job, key, update.failure)
        self.records.task_row(
            job, key, node, update.state if ok else "failed", update.failure or "", self.journal.now(), update
        )
        if job.status == "failed":
            self.records.finish_job(job)
        elif job.complete:
            job.status = "succeeded"
            self.records.finish_job(job)
        self.kick()

    def _locate(self, task_id: str) -> tuple[JobRuntime, TaskKey] | None:
        job = self.jobs.get(task_id.partition(".")[0])
        key = job.key_of(task_id) if job else None
        return (job, key) if job and key else None

    # ------------------------------------------------------------------ scheduling

    def kick(self) -> None:
        self._kick.set()

    async def _scheduling_loop(self) -> None:
        """A round on every kick (arrival, task end, node change) and every heartbeat interval."""
        while True:
            await self._kick.wait()
            await self._let_backlog_in()
            self._kick.clear()
            self.full_disks.step()
            self.schedule_once()
            self.autoscaling.step()
            await asyncio.sleep(0)

    async def _let_backlog_in(self) -> None:
        """Messages the link has already received are handled before the round: one round
        for a burst of task ends, not one per message (each takes the receiver a few turns
        of the event loop). Bounded, so a flood of messages cannot hold rounds back."""
        for _ in range(BACKLOG_TURNS):
            if not self.link.backlog:
                return
            await asyncio.sleep(0)

    async def _ticker(self) -> None:
        """Kick a scheduling round every heartbeat interval (YARN schedules on node heartbeats)."""
        while True:
            await asyncio.sleep(self.scenario.heartbeat_interval_s)
            self.kick()

    def snapshot(self) -> tuple[ClusterSnapshot, dict[str, tuple[JobRuntime, TaskKey]]]:
        now = self.journal.now()
        pending: dict[str, tuple[JobRuntime, TaskKey]] = {}
        jobs = []
        window = self._pending_window()
        for job in self.jobs.values():
            if job.status not in ("waiting", "running"):
                continue
            tasks = []
            classes: dict[int, frozenset[NodeClass]] = {}
            for key in self.strategy.ready(job):
                if window is not None and window.full:
                    break
                if key[0] not in classes:
                    classes[key[0]] = self.strategy.allowed_classes(job, key)
                excluded = self._exclusions(job.tasks[key])
                if window is not None and not window.admits(
                    classes[key[0]], excluded, job.ideal_memory_mb(key[0])
                ):
                    continue
                task_id = job.task_id(key)
                pending[task_id] = (job, key)
                tasks.append(
                    PendingTask(
                        task_id,
                        job.job_id,
                        key[0],
                        key[1],
                        job.ideal_memory_mb(key[0]),
                        job.est_duration_s,
                        preferred_nodes=self.strategy.preferred_nodes(job, key),
                        allowed_classes=classes[key[0]],
                        long=job.long,
                        excluded_nodes=excluded,
                        workload=job.workload,
                    )
                )
            jobs.append(
                JobView(
                    job.job_id,
                    job.submitted,
                    tuple(tasks),
                    job.running_count,
                    job.done_count,
                    job.plan.total_tasks,
                )
            )
        self._prune_queues(pending)
        nodes = tuple(
            NodeView(
                n.node_id,
                n.node_class,
                n.slots,
                n.memory_mb,  # type: ignore[arg-type]
                self.running_views(n),
                draining=n.status == "draining",
                launched=n.launched_t,
                reserved_for=n.reserved_for,
                partition=n.partition,
                queued=tuple(n.queued),
                rebalance=n.rebalance_at is not None,
                zone=getattr(self.scenario.cluster, n.node_class).zone_of(n.ordinal),
            )
            for n in self.nodes.values()
            if n.status in ("up", "draining")
        )
        increment = self.scenario.cluster.memory_increment_mb
        return ClusterSnapshot(now, nodes, tuple(jobs), increment, self.chaos.unavailable()), pending

    def _pending_window(self) -> PendingWindow | None:
        """Which ready tasks a snapshot needs: all of them for schedulers that look ahead
        (YARN-ME's timeline), a window per node class for those that place the head (FIFO)."""
        if self.scheduler.needs_all_pending:
            return None
        return PendingWindow(
            FreeNode(
                n.node_id,
                n.node_class,  # type: ignore[arg-type]
                n.slots - len(n.running),
                n.memory_mb - sum(t.memory_mb for t in self.running_views(n)),
            )
            for n in self.nodes.values()
            if n.status == "up"
        )

    def schedule_once(self) -> None:
        self.strategy.tick(self.journal.now())
        snapshot, pending = self.snapshot()
        if not any(job.pending for job in snapshot.jobs):
            return
        for decision in self.scheduler.schedule(snapshot):
            if isinstance(decision, Assign):
                self._assign(decision, pending)
            elif isinstance(decision, Reserve):
                node = self.nodes.get(decision.node_id)
                if node is not None:
                    node.reserved_for = decision.job_id
            elif isinstance(decision, LogDecision):
                self._log_decision(decision)
            elif isinstance(decision, Enqueue | Dequeue):
                self._apply_queue_decision(decision, pending)

    def _log_decision(self, decision: LogDecision) -> None:
        """The scheduler's decision statistics (regular, elastic accepted or rejected, reserved)."""
        self.journal.row(
            "decisions",
            t_s=self.journal.now(),
            job_id=decision.job_id,
            task_id=decision.task_id,
            decision=decision.decision,
            node_id=decision.node_id,
            **decision.detail,
            detail=json.dumps(decision.detail, separators=(",", ":")),
        )

    def _assign(self, decision: Assign, pending: dict[str, tuple[JobRuntime, TaskKey]]) -> None:
        node = self.nodes.get(decision.node_id)
        located = pending.pop(decision.task_id, None)
        if node is None or located is None or not self._may_start(node, decision.task_id):
            return
        if decision.task_id in node.queued:
            node.queued.remove(decision.task_id)
        job, key = located
        if node.node_id in self._exclusions(job.tasks[key]):
            return  # a policy that ignores PendingTask.excluded_nodes: the task waits for another round
        now = self.journal.now()
        attempt = job.launched(key, node.node_id, decision.memory_mb, now, decision.elastic)
        self.senders.launched(decision.task_id, attempt, node.node_id)
        job.tasks[key].predicted_s = decision.predicted_duration_s
        job.tasks[key].disk_mb_s = decision.disk_mb_s
        stage = job.plan.stages[key[0]]
        spec = TaskSpec(
            task_id=decision.task_id,
            job_id=job.job_id,
            stage=key[0],
            index=key[1],
            attempt=attempt,
            op=stage.op,
            memory_mb=decision.memory_mb,
            params=stage.params(key[1]),
            inputs=self.strategy.input_refs(job, key),
            partitions=stage.partitions,
            final=stage.final and stage.writes_output,
            output_url=self.api.output_url(job.job_id, key[1], attempt) if stage.final else None,
            push=self.strategy.push_targets(job, key),
            push_rate_bytes_s=self.strategy.push_rate(),
            input_cache_mb=self.strategy.input_cache_mb(job, key),
            streamed=self.strategy.streamed_deps(job, key),
        )
        node.running[decision.task_id] = (job, key)
        node.launches[decision.task_id] = LaunchTask(task=spec)
        node.sent_at[decision.task_id] = now
        node.acked.discard(decision.task_id)
        node.strikes.pop(decision.task_id, None)
        node.vanish_resends.pop(decision.task_id, None)
        self.send(node.node_id, node.launches[decision.task_id])
        self.journal.event(
            "task_started",
            task=decision.task_id,
            job=job.job_id,
            stage=key[0],
            index=key[1],
            node=node.node_id,
            **{"class": node.node_class},
            attempt=attempt,
            memory_mb=decision.memory_mb,
        )

    # ------------------------------------------------------------------ node-side queues

    @staticmethod
    def _may_start(node: NodeRecord, task_id: str) -> bool:
        """A node that is up takes any task; a draining one only runs its own queue to the end."""
        return node.status == "up" or (node.status == "draining" and task_id in node.queued)

    def _apply_queue_decision(
        self, decision: Enqueue | Dequeue, pending: dict[str, tuple[JobRuntime, TaskKey]]
    ) -> None:
        """Apply Enqueue (append to the node's queue) or Dequeue (remove from it) literally."""
        node = self.nodes.get(decision.node_id)
        if node is None:
            return
        if isinstance(decision, Enqueue):
            if node.status == "up" and decision.task_id in pending and decision.task_id not in node.queued:
                node.queued.append(decision.task_id)
                copy = {"copy": True} if decision.copy else {}
                self.journal.event("task_queued", task=decision.task_id, node=node.node_id, **copy)
        elif decision.task_id in node.queued:
            node.queued.remove(decision.task_id)
            self.journal.event(
                "task_dequeued", task=decision.task_id, node=node.node_id, reason=decision.reason
            )

    def _prune_queues(self, pending: dict[str, tuple[JobRuntime, TaskKey]]) -> None:
        """Queues hold pending tasks only: drop tasks that started, or whose job ended, elsewhere."""
        for node in self.nodes.values():
            if node.queued:
                node.queued[:] = [task_id for task_id in node.queued if task_id in pending]

    def _forget_queue(self, node: NodeRecord) -> None:
        """A node leaves: its queue goes with it (CloudCoaster's copy rule keeps a copy elsewhere).

        Journals ``revocation_outcome``: copies that survive on other nodes, tasks
        queued only there (the scheduler places them again: they are pending and
        unqueued), and running tasks (re-pended by ``node_lost``).
        """
        if node.queued and node.status in ("up", "draining"):  # so it is in the snapshot
            outcome = revocation_outcome(self.snapshot()[0], node.node_id)
            self.journal.event(
                "revocation_outcome",
                node=node.node_id,
                surviving=[task for task, _ in outcome.surviving],
                requeue=list(outcome.requeue),
                rerun=list(outcome.rerun),
            )
        node.queued.clear()

    @staticmethod
    def _forget_launch(node: NodeRecord, task_id: str) -> tuple[JobRuntime, TaskKey] | None:
        node.launches.pop(task_id, None)
        node.sent_at.pop(task_id, None)
        node.acked.discard(task_id)
        node.strikes.pop(task_id, None)
        node.vanish_resends.pop(task_id, None)
        return node.running.pop(task_id, None)

    def fail_unaccounted(self, node: NodeRecord, task_id: str, now: float, why: str) -> None:
        """Fail and relaunch an attempt its node no longer accounts for (``master.liveness_shell``)."""
        job, key = node.running[task_id]
        attempt = job.tasks[key].attempt
        self._forget_launch(node, task_id)
        job.failed(key, attempt, counts_as_failure=True, error=f"{node.node_id} does not run it ({why})")
        self.records.task_row(job, key, node, "failed", "vanished", now)
        if job.status == "failed":
            self.records.finish_job(job)
        self.kick()

    # ------------------------------------------------------------------ node resource faults

    def _resource_fault(self, node: NodeRecord, job: JobRuntime, key: TaskKey, failure: str) -> None:
        """The task goes elsewhere next time; a node whose disk is full takes no new task until
        it is taken back (``master/disk_faults.py``)."""
        job.tasks[key].excluded_nodes.add(node.node_id)
        self.journal.event("resource_fault", node=node.node_id, task=job.task_id(key), failure=failure)
        if failure == "enospc":
            self.full_disks.node_full(node)

    def _exclusions(self, record: TaskRecord) -> frozenset[str]:
        """The nodes a task must avoid, unless that is every node up: then anywhere will do."""
        if not record.excluded_nodes:
            return frozenset()
        up = {n.node_id for n in self.nodes.values() if n.status == "up"}
        return frozenset() if up <= record.excluded_nodes else frozenset(record.excluded_nodes & up)

    # ------------------------------------------------------------------ broker outages

    def _rejoined_broker(self) -> None:
        """After our own reconnect: give agents time to reconnect too, and re-send what may be lost.

        Messages published while we were away were not queued for us (clean
        sessions), and a restarted broker forgets what it had not delivered.
        Re-sending each running task's launch is safe: an agent that runs or
        ran that attempt repeats its outcome instead of running it again.
        """
        now = self.journal.now()
        grace = now + 1.5 * MAX_BACKOFF_S
        resent = 0
        for node in self.nodes.values():
            if node.status in ("up", "draining"):
                node.last_seen = max(node.last_seen, grace)
                resent += self._resend_commands(node)
        self.journal.event("broker_reconnected", session=self.link.session, resent=resent)

    def _agent_reconnected(self, node: NodeRecord, session: int) -> None:
        """The agent is back on a new connection: what was sent to it meanwhile may be lost."""
        node.session = session
        node.last_seen = max(node.last_seen, self.journal.now())
        resent = self._resend_commands(node)
        self.journal.event("node_reconnected", node=node.node_id, session=session, resent=resent)

    def _resend_commands(self, node: NodeRecord) -> int:
        """Re-send the node's launches and the strategy's commands, then ask for its push reports
        again (``Resync``): after the repeated task outcomes, so a push follows its task's success."""
        now = self.journal.now()
        for task_id, launch in node.launches.items():
            self.send(node.node_id, launch)
            node.sent_at[task_id] = now
        self.strategy.resend(node)
        self.send(node.node_id, Resync())
        return len(node.launches)
