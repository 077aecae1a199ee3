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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from master.api import MasterApi
from master.chaos.controller import ChaosController
from master.jobs import JobRuntime, TaskKey
from master.journal import Journal
from master.policies import make_scheduler
from master.policies.base import (
    Assign,
    ClusterSnapshot,
    JobView,
    LogDecision,
    NodeView,
    PendingTask,
    Reserve,
    RunningTask,
    Scheduler,
)
from master.providers.base import NodeProvider
from testbed.mqtt import BrokerAddress, MqttLink
from testbed.protocol import Codec, Heartbeat, LaunchTask, Message, NodeState, TaskSpec, TaskUpdate, Topics
from testbed.scenario import Scenario
from testbed.workloads import plan_job

log = logging.getLogger("master")
NodeStatus = Literal["launching", "up", "draining", "lost", "gone"]


@dataclass
class NodeRecord:
    node_id: str
    node_class: str
    ordinal: int
    launched_t: float
    slots: int
    memory_mb: int
    price_per_hour: float
    status: NodeStatus = "launching"
    url: str = ""
    incarnation: str = ""
    last_seen: float = 0.0
    reserved_for: str | None = None
    evicted_at: float | None = None
    running: dict[str, tuple[JobRuntime, TaskKey]] = field(default_factory=dict)

    @property
    def alive(self) -> bool:
        return self.status in ("launching", "up", "draining")


class Master:
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
        attach: bool = False,
    ) -> None:
        """``attach``: the initial nodes are started by someone else (compose, Swarm); the
        master waits for the scenario's node counts to come up and adopts them."""
        self.scenario = scenario
        self.run_id = run_id
        self.run_dir = run_dir
        self.provider = provider
        self.broker = broker
        self.scheduler: Scheduler = make_scheduler(scenario, self.workload_of)
        self.token = token
        self.agent_command = agent_command
        self.http_host = http_host
        self.advertise = advertise
        self.attach = attach
        self.topics = Topics(run_id)
        self.codec = Codec()
        self.journal = Journal(run_dir)
        self.nodes: dict[str, NodeRecord] = {}
        self.jobs: dict[str, JobRuntime] = {}
        self.expected_jobs = sum(job.repeat for job in scenario.jobs)
        self.evictions = 0
        self._ordinals = {"reserved": 0, "transient": 0}
        self._kick = asyncio.Event()
        self._all_done = asyncio.Event()
        self._cluster_up = asyncio.Event()
        self._timers: list[asyncio.TimerHandle] = []
        self.link = MqttLink(broker, f"{run_id}-master", self._on_message, self._on_connect)
        self.chaos = ChaosController(self)
        self.api = MasterApi(self)

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> bool:
        """Run every job to completion (or the scenario timeout); True when all succeeded."""
        runner = await self.api.start()
        self.link.start()
        loop = asyncio.get_running_loop()
        background = [
            asyncio.create_task(self._scheduling_loop()),
            asyncio.create_task(self._ticker()),
            asyncio.create_task(self._heartbeat_watch()),
        ]
        try:
            await self._launch_initial_nodes()
            self.journal.t0 = self.journal.clock()
            self.journal.event("run_started", run_id=self.run_id, name=self.scenario.name)
            for node in self.nodes.values():
                node.launched_t = 0.0
            self.chaos.start()
            self._schedule_arrivals(loop)
            try:
                await asyncio.wait_for(self._all_done.wait(), self.scenario.timeout)
            except TimeoutError:
                self._fail_unfinished(f"the run hit its timeout of {self.scenario.timeout:.0f}s")
        finally:
            self.chaos.stop()
            for timer in self._timers:
                timer.cancel()
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            await self._shutdown_nodes()
            await self.link.close()
            await runner.cleanup()
        ok = all(job.status == "succeeded" for job in self.jobs.values())
        self.journal.event("run_finished", status="succeeded" if ok else "failed")
        self.journal.close()
        return ok

    async def _launch_initial_nodes(self) -> None:
        cluster = self.scenario.cluster
        for node_class, spec in (("reserved", cluster.reserved), ("transient", cluster.transient)):
            for _ in range(0 if self.attach else spec.count):
                await self.launch_node(node_class)
        if self.attach:
            log.info(
                "waiting for %d reserved and %d transient nodes",
                cluster.reserved.count,
                cluster.transient.count,
            )
        try:
            await asyncio.wait_for(self._cluster_up.wait(), 60 + 0.5 * len(self.nodes))
        except TimeoutError:
            missing = [n.node_id for n in self.nodes.values() if n.status == "launching"]
            raise RuntimeError(f"nodes did not come up within a minute: {', '.join(missing)}") from None

    async def launch_node(self, node_class: str) -> NodeRecord:
        spec = self.scenario.cluster.reserved if node_class == "reserved" else self.scenario.cluster.transient
        ordinal = self._ordinals[node_class]
        self._ordinals[node_class] += 1
        node_id = f"{node_class}-{ordinal}"
        record = NodeRecord(
            node_id, node_class, ordinal, self.journal.now(), spec.slots, spec.memory_mb, spec.price_per_hour
        )
        self.nodes[node_id] = record
        env = {"TESTBED_RUN_TOKEN": self.token}
        await self.provider.launch(
            node_id,
            node_class,
            spec.slots,
            spec.memory_mb,
            spec.cpus,
            self.agent_command(node_id, node_class),
            env,
        )
        return record

    async def _shutdown_nodes(self) -> None:
        now = self.journal.now()
        for node in self.nodes.values():
            if node.alive:
                node.status = "gone"
                self._node_row(node, now, "run_end")
        await self.provider.close()

    def _schedule_arrivals(self, loop: asyncio.AbstractEventLoop) -> None:
        ordinal = 0
        for spec in self.scenario.jobs:
            for repeat in range(spec.repeat):
                delay = self.scenario.trace(spec.submit_at + repeat * spec.every)
                self._timers.append(loop.call_later(delay, self.submit_job, spec, ordinal))
                ordinal += 1

    def submit_job(self, spec: Any, ordinal: int) -> None:
        job_id = f"j{ordinal:03d}"
        seed = spec.seed if spec.seed is not None else self.scenario.seed * 1000 + ordinal
        plan = plan_job(spec, seed, self.scenario)
        job = JobRuntime(
            job_id,
            spec.name or f"{spec.workload}-{ordinal}",
            spec.workload,
            plan,
            self.journal.now(),
            spec.memory_mb,
        )
        self.jobs[job_id] = job
        (self.run_dir / "outputs" / job_id).mkdir(parents=True, exist_ok=True)
        self.journal.event("job_submitted", job=job_id, workload=spec.workload, tasks=plan.total_tasks)
        self.kick()

    # ------------------------------------------------------------------ MQTT

    async def _on_connect(self, link: MqttLink) -> None:
        for topic in (self.topics.state(), self.topics.heartbeat(), self.topics.task_updates()):
            await link.subscribe(topic)

    def _on_message(self, topic: str, payload: bytes) -> None:
        message = self.codec.decode(payload)
        if message is None:
            log.warning("dropped a malformed message on %s (%d so far)", topic, self.codec.malformed)
            return
        node = self.nodes.get(Topics.node_of(topic))
        if node is None and self.attach and isinstance(message, NodeState) and message.state == "up":
            node = self._adopt(message)
        if node is None or getattr(message, "node_id", node.node_id) != node.node_id:
            return
        if isinstance(message, TaskUpdate):
            self._on_task_update(node, message)
        elif isinstance(message, NodeState):
            self._on_node_state(node, message)
        elif isinstance(message, Heartbeat) and message.incarnation == node.incarnation:
            node.last_seen = self.journal.now()

    def _on_node_state(self, node: NodeRecord, state: NodeState) -> None:
        if state.state == "up" and node.status == "launching":
            node.status, node.incarnation = "up", state.incarnation
            node.url = f"http://{state.host}:{state.port}"
            node.last_seen = self.journal.now()
            self.journal.event(
                "node_up", node=node.node_id, **{"class": node.node_class}, pid=state.pid, url=node.url
            )
            if self._all_up():
                self._cluster_up.set()
            self.kick()
        elif state.state == "draining" and node.status == "up":
            node.status = "draining"
        elif state.state in ("lost", "gone") and node.alive and state.incarnation == node.incarnation:
            crashed = "evicted" if node.evicted_at is not None else "crashed"
            self.node_lost(node, crashed if state.state == "lost" else "released")

    def _all_up(self) -> bool:
        if any(n.status == "launching" for n in self.nodes.values()):
            return False
        cluster = self.scenario.cluster
        return not self.attach or all(
            sum(1 for n in self.nodes.values() if n.node_class == node_class and n.status == "up")
            >= spec.count
            for node_class, spec in (("reserved", cluster.reserved), ("transient", cluster.transient))
        )

    def _adopt(self, state: NodeState) -> NodeRecord:
        """A node the master did not launch (attach mode) announced itself: register it."""
        spec = (
            self.scenario.cluster.reserved
            if state.node_class == "reserved"
            else self.scenario.cluster.transient
        )
        record = NodeRecord(
            state.node_id,
            state.node_class,
            sum(1 for n in self.nodes.values() if n.node_class == state.node_class),
            self.journal.now(),
            state.slots,
            state.memory_mb,
            spec.price_per_hour,
        )
        self.nodes[state.node_id] = record
        return record

    def drain(self, node: NodeRecord, reason: str) -> None:
        """No new tasks go to the node (an eviction notice, an autoscaler removal)."""
        if node.status == "up":
            node.status = "draining"
            self.journal.event("node_draining", node=node.node_id, reason=reason)

    def send(self, node_id: str, message: Message) -> None:
        self.link.publish(self.topics.command(node_id), self.codec.encode(message))

    def running_views(self, node: NodeRecord) -> tuple[RunningTask, ...]:
        now = self.journal.now()
        views = []
        for task_id, (job, key) in node.running.items():
            record = job.tasks[key]
            started = record.started if record.started is not None else now
            duration = record.predicted_s if record.predicted_s is not None else job.est_duration_s
            views.append(
                RunningTask(
                    task_id, job.job_id, record.memory_mb, started, started + duration, record.elastic
                )
            )
        return tuple(views)

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
        facts = {
            "reason": reason,
            "lifetime_s": lifetime_s,
            "tasks_running": tasks_running,
            "bytes_lost": bytes_lost,
        }
        self.journal.event("eviction", node=node.node_id, **{"class": node.node_class}, **facts)
        self.journal.row(
            "evictions", t_s=self.journal.now(), node_id=node.node_id, node_class=node.node_class, **facts
        )
        if node.status == "launching":  # it never connected: no Last Will or heartbeat will tell
            self.node_lost(node, "evicted_while_launching")

    def node_lost(self, node: NodeRecord, reason: str) -> None:
        """Forget a node and recover what it held: its running tasks and its stored outputs."""
        if not node.alive:
            return
        node.status = "lost" if reason != "released" else "gone"
        now = self.journal.now()
        detect_s = now - node.evicted_at if node.evicted_at is not None else None
        self.journal.event(
            "node_lost", node=node.node_id, **{"class": node.node_class}, reason=reason, detect_s=detect_s
        )
        self._node_row(node, now, reason)
        for job in self.jobs.values():
            if job.status in ("waiting", "running"):
                for key in job.node_lost(node.node_id, node.url):
                    self._task_row(job, key, node, "lost", "node_lost", now)
        node.running.clear()
        self.kick()

    def _on_task_update(self, node: NodeRecord, update: TaskUpdate) -> None:
        located = self._locate(update.task_id)
        if located is None or update.state == "running":
            return
        job, key = located
        record = job.tasks[key]
        if record.attempt != update.attempt or record.status != "running" or record.node != node.node_id:
            return  # stale or duplicate (QoS 1 redelivery): already applied
        node.running.pop(update.task_id, None)
        stage = job.plan.stages[key[0]]
        ok = update.state == "succeeded"
        if ok and stage.final:
            ok = self.api.commit_output(job.job_id, key[1], update.attempt)
        if ok:
            job.succeeded(
                key, update.attempt, node.url, f"{job.task_id(key)}.a{update.attempt}", update.partition_bytes
            )
        else:
            if update.lost_blocks:
                job.lose_blocks(set(update.lost_blocks))
            real_failure = update.failure not in ("fetch", "cancelled")
            job.failed(key, update.attempt, counts_as_failure=real_failure)
        self._task_row(
            job, key, node, update.state if ok else "failed", update.failure or "", self.journal.now(), update
        )
        if job.status == "failed":
            self._finish_job(job)
        elif job.complete:
            job.status = "succeeded"
            self._finish_job(job)
        self.kick()

    def _locate(self, task_id: str) -> tuple[JobRuntime, TaskKey] | None:
        job = self.jobs.get(task_id.partition(".")[0])
        key = job.key_of(task_id) if job else None
        return (job, key) if job and key else None

    # ------------------------------------------------------------------ scheduling

    def workload_of(self, job_id: str) -> str | None:
        job = self.jobs.get(job_id)
        return job.workload if job else None

    def kick(self) -> None:
        self._kick.set()

    async def _scheduling_loop(self) -> None:
        """A round on every kick (arrival, task end, node change) and every heartbeat interval."""
        while True:
            await self._kick.wait()
            self._kick.clear()
            self.schedule_once()
            await asyncio.sleep(0)

    async def _ticker(self) -> None:
        """Kick a scheduling round every heartbeat interval (YARN schedules on node heartbeats)."""
        while True:
            await asyncio.sleep(self.scenario.cluster.heartbeat_interval)
            self.kick()

    def snapshot(self) -> tuple[ClusterSnapshot, dict[str, tuple[JobRuntime, TaskKey]]]:
        now = self.journal.now()
        pending: dict[str, tuple[JobRuntime, TaskKey]] = {}
        jobs = []
        for job in self.jobs.values():
            if job.status not in ("waiting", "running"):
                continue
            tasks = []
            for key in job.ready():
                task_id = job.task_id(key)
                pending[task_id] = (job, key)
                tasks.append(
                    PendingTask(task_id, job.job_id, key[0], key[1], job.memory_mb, job.est_duration_s)
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
            )
            for n in self.nodes.values()
            if n.status in ("up", "draining")
        )
        return ClusterSnapshot(now, nodes, tuple(jobs), self.scenario.cluster.memory_increment_mb), pending

    def schedule_once(self) -> None:
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
        if node is None or node.status != "up" or located is None:
            return
        job, key = located
        now = self.journal.now()
        attempt = job.launched(key, node.node_id, decision.memory_mb, now, decision.elastic)
        job.tasks[key].predicted_s = decision.predicted_duration_s
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
            inputs=job.input_refs(key),
            partitions=stage.partitions,
            final=stage.final,
            output_url=self.api.output_url(job.job_id, key[1], attempt) if stage.final else None,
        )
        node.running[decision.task_id] = (job, key)
        self.send(node.node_id, LaunchTask(task=spec))
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

    # ------------------------------------------------------------------ failure detection

    async def _heartbeat_watch(self) -> None:
        timeout = self.scenario.cluster.heartbeat_timeout
        while True:
            await asyncio.sleep(self.scenario.cluster.heartbeat_interval)
            now = self.journal.now()
            for node in list(self.nodes.values()):
                if node.status in ("up", "draining") and now - node.last_seen > timeout:
                    log.warning("node %s missed heartbeats for %.1fs", node.node_id, now - node.last_seen)
                    self.node_lost(node, "heartbeat_timeout")
                    if self.provider.owns(node.node_id):  # a silent node may be frozen, not dead
                        asyncio.get_running_loop().create_task(self.provider.evict(node.node_id))

    # ------------------------------------------------------------------ journal rows

    def _finish_job(self, job: JobRuntime) -> None:
        job.finished = self.journal.now()
        jct = job.finished - job.submitted
        self.journal.event(
            "job_finished", job=job.job_id, status=job.status, jct_s=round(jct, 4), error=job.error
        )
        self.journal.row(
            "jobs",
            job_id=job.job_id,
            name=job.name,
            workload=job.workload,
            submit_s=job.submitted,
            start_s=job.started,
            finish_s=job.finished,
            jct_s=jct,
            queue_s=(job.started - job.submitted) if job.started is not None else None,
            status=job.status,
            tasks=job.plan.total_tasks,
            relaunched_tasks=job.relaunched,
            relaunched_ratio=job.relaunched / job.plan.total_tasks,
            bytes_recomputed=job.bytes_recomputed,
        )
        for node in self.nodes.values():
            if node.reserved_for == job.job_id:
                node.reserved_for = None
        finished = [j for j in self.jobs.values() if j.status in ("succeeded", "failed")]
        if len(finished) == self.expected_jobs:
            self._all_done.set()

    def _fail_unfinished(self, reason: str) -> None:
        for job in self.jobs.values():
            if job.status in ("waiting", "running"):
                job.status, job.error = "failed", reason
                self._finish_job(job)

    def _task_row(
        self,
        job: JobRuntime,
        key: TaskKey,
        node: NodeRecord,
        status: str,
        failure: str,
        now: float,
        update: TaskUpdate | None = None,
    ) -> None:
        record = job.tasks[key]
        metrics = update.metrics.model_dump() if update is not None else {}
        self.journal.row(
            "tasks",
            task_id=job.task_id(key),
            job_id=job.job_id,
            stage=key[0],
            index=key[1],
            attempt=record.attempt,
            node_id=node.node_id,
            node_class=node.node_class,
            memory_mb=record.memory_mb,
            elastic=int(record.elastic),
            ideal_memory_mb=job.memory_mb,
            predicted_s=record.predicted_s,
            start_s=record.started,
            end_s=now,
            status=status,
            failure=failure,
            **metrics,
        )
        self.journal.event(
            "task_finished",
            task=job.task_id(key),
            job=job.job_id,
            stage=key[0],
            node=node.node_id,
            **{"class": node.node_class},
            attempt=record.attempt,
            status=status,
            failure=failure or None,
            spill_bytes=metrics.get("spill_bytes", 0),
            bytes_in=metrics.get("bytes_in", 0),
            bytes_out=metrics.get("bytes_out", 0),
        )

    def _node_row(self, node: NodeRecord, now: float, reason: str) -> None:
        self.journal.row(
            "nodes",
            node_id=node.node_id,
            node_class=node.node_class,
            launched_s=node.launched_t,
            ended_s=now,
            end_reason=reason,
            price_per_hour=node.price_per_hour,
        )
