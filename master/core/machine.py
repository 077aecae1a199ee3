"""The master as a state machine: ``MasterCore.handle(event, now) -> list[Command]``.

The core holds the run's state (the node registry, the jobs and their tasks,
the scheduler and the recovery strategy, the run's records, the sender check)
and its timers, and decides everything: one event in, the commands it causes
out, in order. It reads no clock (``now`` comes with every event), does no I/O
and draws no randomness of its own, so the same scenario and events with their
times give the same commands, byte for byte: the real shell (``master.shell.master``)
and a simulator drive the same decisions. docs/architecture.md shows the flow.
"""

from __future__ import annotations

import traceback
from typing import Any

from master.core import tasks
from master.core.chained import Chains
from master.core.chaos import ChaosWorld
from master.core.commands import (
    Command,
    CommitOutput,
    KillNode,
    PlanJob,
    PrepareJob,
    Probe,
    ReleaseNode,
    RunFile,
    RunOver,
    Send,
    WakeAt,
)
from master.core.copies import Copies
from master.core.disk_full import DiskFullNodes
from master.core.events import (
    Abort,
    Begin,
    Crashed,
    Event,
    EvictRequest,
    FromNode,
    JobFailed,
    JobPlanFailed,
    JobPlanned,
    LinkDown,
    LinkUp,
    NodeStartFailed,
    OutputLocated,
    OutputStaged,
    ProbeAnswered,
    Round,
    RoundLanded,
    Stop,
    Wake,
)
from master.core.exposure import StageDurations
from master.core.input_holders import place_inputs, store_inputs
from master.core.input_replicas import InputReplication
from master.core.jobs import JobRuntime, LiveJobs, TaskKey
from master.core.launch import Launcher
from master.core.lifecycle import NODE
from master.core.nodes import NodeRecord
from master.core.outbox import CoreJournal, Outbox
from master.core.planning import planned_job
from master.core.records import RunRecords
from master.core.recovery import Recovery
from master.core.resume import Recovered, restore_job, resumed_arrivals, resuming
from master.core.rounds import Pending, SchedulingRound
from master.core.scaling import Scaling
from master.core.senders import SenderCheck
from master.core.timers import TimerHeap
from master.core.watch import NodeWatch
from testbed.api.policy import ClusterSnapshot, NodeView, RunningTask, Scheduler
from testbed.api.strategy import BlockReported, JobSubmitted, NodeLost, PushReported, Reconnected, Strategy
from testbed.settings.run_settings import RunSettings
from testbed.wire.protocol import (
    MAX_BACKOFF_S,
    BlockReceived,
    Heartbeat,
    Message,
    NameRequest,
    NodeState,
    PushDelivered,
    Resync,
    TaskUpdate,
)

REPLACED_LOSSES = ("heartbeat_timeout", "crashed")
"""Losses the chaos rules did not cause (they replace their own evictions themselves)."""
ARRIVAL, TICK = 10, 20
"""Priorities of the core's own timers at the same instant (the chaos rules use 0-4)."""


class MasterCore:
    def __init__(
        self,
        settings: RunSettings,
        run_id: str,
        *,
        attach: bool = False,
        start_window: int | None = None,
        resume: Recovered | None = None,
        reads_reported: bool = False,
    ) -> None:
        """``settings``: the scenario compiled once (``testbed.settings.resolve``), its policies
        built; ``attach``: the initial nodes are started by someone else and adopted as they
        announce themselves; ``start_window``: how many initial nodes may be starting at once
        (None: all); ``resume``: what the journal of a crashed run says (``master.core.resume``);
        ``reads_reported``: real nodes report where maps read their input (``InputReplication``)."""
        policies = settings.policies
        self.settings = settings
        """The scenario compiled: the core reads its cluster, chaos, jobs and policies (the
        shells plan jobs with its scenario: ``PlanJob``)."""
        self.time = settings.time
        self.run_id = run_id
        self.attach = attach
        self.outbox = Outbox()
        self.journal = CoreJournal(self.outbox)
        self.timers = TimerHeap(self.journal.now)
        self.scheduler: Scheduler = policies.scheduler
        self.senders = SenderCheck(self.journal)
        self.nodes: dict[str, NodeRecord] = {}
        self.jobs: dict[str, JobRuntime] = {}
        self.live_jobs = LiveJobs()
        self.inputs = InputReplication(reported=reads_reported)
        if resume is not None:
            self.inputs.resumed(resume.input_reads, resume.finished_jobs)
        self.durations = resume.durations if resume else StageDurations()
        self.expected_jobs = sum(job.repeat for job in settings.jobs)
        self.evictions = 0
        self.evicted: list[dict[str, Any]] = []
        """Each eviction so far (time, node, class, reason), for the status API."""
        self.planning: dict[int, tuple[Any, float, bool]] = {}
        """Jobs asked for (``PlanJob``), not yet planned: spec, submission time, whether restored."""
        self.launch_acks: dict[tuple[str, int], float] = {}
        """Seconds from sending each launch to the agent's ``running`` (the fidelity monitor's)."""
        self.staged: set[tuple[str, int, int]] = set()
        self._sent = 0
        """Final outputs uploaded and not committed: (job, index, attempt)."""
        self.clock_started = False
        self.link_up = True
        self.resume = resume
        self.resumed_from = resume.crashed_at if resume is not None else 0.0
        """Where this segment of the run starts on the run's clock: 0, or the crash it resumes."""
        self.records = RunRecords(self)
        self.chains = Chains(self)
        self.full_disks = DiskFullNodes(self)
        self.watch = NodeWatch(self)
        self.launcher = Launcher(self, self.records, self.outbox.put, attach, start_window)
        self.round = SchedulingRound(self, self.scheduler)
        self.strategy: Strategy = policies.strategy
        self.recovery = Recovery(self, self.strategy)
        self.chaos = ChaosWorld(self)
        self.round.unavailable = self.chaos.unavailable
        self.round.news = self.outbox.take_news
        self.scaling = Scaling(self, policies.autoscaler)
        self.copies = Copies(self, policies.speculator, self.chaos.kill_at)
        if resume is not None:
            self.expected_jobs -= len(resume.finished_jobs)
            self.launcher.ordinals = {name: resume.ordinals.get(name, 0) for name in self.launcher.ordinals}

    # ------------------------------------------------------------------ the surface

    def start(self, now: float) -> list[Command]:
        """Before time 0: the initial cluster's launches (attach: none), the ticker's first timer."""
        self.outbox.now = now
        if self.resume is not None:
            resuming(self, self.resume)
        self.launcher.start_initial()
        self.timers.after(self.time.heartbeat_interval_s, TICK, self._tick)
        return self._commands()

    def handle(self, event: Event, now: float) -> list[Command]:
        """One stimulus in, the commands it causes out (``now``: run seconds)."""
        self.outbox.now = now
        self._dispatch(event)
        return self._commands()

    def _commands(self) -> list[Command]:
        wake = self.timers.wake_needed()
        if wake is not None:
            self.outbox.put(WakeAt(wake))
        return self.outbox.take()

    def _dispatch(self, event: Event) -> None:
        if isinstance(event, FromNode):
            self.on_message(event.node_id, event.message)
        elif isinstance(event, Wake):
            self.timers.run_due()
        elif isinstance(event, Round):
            self.outbox.round_begins()
            self.full_disks.step()
            snapshot = self.round.schedule_once(event.defer)
            self.copies.step()
            self.scaling.step(snapshot)
        elif isinstance(event, RoundLanded):
            self.round.land()
        elif isinstance(event, Begin):
            self._begin(event.origin)
        elif isinstance(event, NodeStartFailed):
            node = self.nodes.get(event.node_id)
            if node is not None:
                self.launcher.start_failed(node, event.error)
                self.kill(node.node_id)
        elif isinstance(event, ProbeAnswered):
            self.watch.probe_answered(event)
        elif isinstance(event, OutputStaged):
            self.staged.add((event.job_id, event.index, event.attempt))
        elif isinstance(event, OutputLocated):
            self.chains.located(event)
        elif isinstance(event, LinkUp):
            self.link_up = True
            if event.session > 1:
                self._rejoined_broker(event.session)
        elif isinstance(event, LinkDown):
            self.link_up = False
        elif isinstance(event, Abort):
            self.abort(event.reason, event.journal)
        elif isinstance(event, Crashed):
            trace = "".join(traceback.format_exception(event.error))
            self.journal.event("master_error", error=repr(event.error), traceback=trace)
            self.abort(f"internal error in the master: {event.error!r}", journal=False)
        elif isinstance(event, JobFailed):
            self.fail_job(event.job_id, event.error)
        elif isinstance(event, JobPlanned | JobPlanFailed):
            self._planned(event)
        elif isinstance(event, EvictRequest):
            self.outbox.put(self.chaos.request(event))
        elif isinstance(event, Stop):
            self.timers.clear()
            self.chaos.stop()
            self.scaling.stop()
            self.end_nodes()

    # ------------------------------------------------------------------ time

    def _begin(self, origin: float) -> None:
        """Time 0 of the run (its initial cluster is up): what was timed before moves with the
        clock's origin, so a node silent since before keeps its silence (and is found lost)."""
        self.timers.shift(origin)
        for node in self.nodes.values():
            node.last_seen -= origin
        self.clock_started = True
        self.watch.starting_up = False
        if self.resume is not None:
            resumed_arrivals(self, self.resume, self._submit_at)
        else:
            self.journal.event("run_started", run_id=self.run_id, name=self.settings.name)
            for node in self.nodes.values():
                node.launched_t = 0.0
            ordinal = 0
            for spec in self.settings.jobs:
                for repeat in range(spec.repeat):
                    if spec.after is not None:
                        self.chains.hold(spec, ordinal)
                    else:
                        when = self.time.trace(spec.submit_at + repeat * spec.every)
                        self._submit_at(when, spec, ordinal)
                    ordinal += 1
        self.chaos.start(since=self.resumed_from)
        self.scaling.start()

    def _submit_at(self, when: float, spec: Any, ordinal: int) -> None:
        self.records.unsubmitted[ordinal] = spec
        self.timers.at(when, ARRIVAL, lambda: self.submit_job(spec, ordinal))

    def _tick(self) -> None:
        """Every heartbeat interval: a scheduling round (YARN schedules on node heartbeats) and
        a look for silent nodes (not while our own broker link is down)."""
        self.timers.after(self.time.heartbeat_interval_s, TICK, self._tick)
        if self.link_up:
            self.watch.check_heartbeats()
        self.kick()

    # ------------------------------------------------------------------ jobs

    def submit_job(self, spec: Any, ordinal: int) -> None:
        """The ``ordinal``-th job arrives: the shell plans it (``PlanJob``), then it is submitted."""
        self._plan(spec, ordinal, self.journal.now(), restore=False)

    def restore_job(self, spec: Any, ordinal: int) -> None:
        """A job the crashed run had submitted: planned again, then restored (``master.core.resume``)."""
        assert self.resume is not None
        self._plan(spec, ordinal, self.resume.submitted[f"j{ordinal:03d}"], restore=True)

    def _plan(self, spec: Any, ordinal: int, submitted: float, restore: bool) -> None:
        self.planning[ordinal] = (spec, submitted, restore)
        self.timers.hold()
        self.outbox.put(PlanJob(ordinal, spec, self.job_seed(spec, ordinal)))

    def _planned(self, event: JobPlanned | JobPlanFailed) -> None:
        """The shell's answer to ``PlanJob``: the job is submitted (or restored), or fails; the
        timers it held go on."""
        spec, submitted, restore = self.planning.pop(event.ordinal)
        if not self.records.all_done:
            if isinstance(event, JobPlanned):
                self._submit(planned_job(spec, event, submitted), spec, event.ordinal, restore)
            else:
                self._unplanned(spec, event.ordinal, event.error)
        if not self.planning:
            self.timers.release()

    def _submit(self, job: JobRuntime, spec: Any, ordinal: int, restore: bool) -> None:
        """A restored job's replicas are placed again, on the new cluster (``master.core.input_holders``)."""
        seed = self.job_seed(spec, ordinal)
        if restore:
            place_inputs(self, job, spec.input_replication, self.round.nodes.alive(), seed)
            restore_job(self, self.resume, job)  # type: ignore[arg-type]
            return
        self.records.unsubmitted.pop(ordinal, None)
        self.jobs[job.job_id] = job
        self.live_jobs.add(job)
        place_inputs(self, job, spec.input_replication, self.round.nodes.alive(), seed)
        self.outbox.put(PrepareJob(job.job_id))
        self.recovery.react(JobSubmitted(job.job_id))
        self.journal.event(
            "job_submitted",
            job=job.job_id,
            workload=spec.workload,
            tasks=job.plan.total_tasks,
            long=job.long,
            est_s=round(job.est_duration_s, 4),
        )
        self.kick()

    def _unplanned(self, spec: Any, ordinal: int, error: str) -> None:
        """The job cannot be planned (e.g. its input changed since validation): it fails, not the run."""
        self.records.unsubmitted.pop(ordinal, None)
        self.journal.say("warning", f"job j{ordinal:03d} cannot be planned: {error}")
        self.records.fail_unplanned(ordinal, spec, f"cannot plan the job: {error}")
        self.chains.planning_failed(spec, ordinal, f"cannot plan the job: {error}")
        self.records.check_all_done()

    def job_seed(self, spec: Any, ordinal: int) -> int:
        """The ``ordinal``-th job's seed: its own, else drawn from the scenario's."""
        return spec.seed if spec.seed is not None else self.settings.seed * 1000 + ordinal

    def run_over(self) -> None:
        self.outbox.put(RunOver(self.records.all_succeeded()))

    def abort(self, reason: str, journal: bool = True) -> None:
        """End the run at once: unfinished jobs fail with ``reason``."""
        if journal:
            self.journal.say("error", f"the run cannot go on: {reason}")
            self.journal.event("run_aborted", reason=reason)
        self.records.fail_unfinished(reason)
        if not self.records.all_done:
            self.records.all_done = True
            self.run_over()

    def fail_job(self, job_id: str, error: str) -> None:
        """The job fails now (its output does not fit at the master), saying why."""
        job = self.jobs.get(job_id)
        if job is None or job.status not in ("waiting", "running"):
            return
        job.status, job.error = "failed", error
        self.records.finish_job(job)
        self.kick()

    def commit_output(self, job_id: str, index: int, attempt: int) -> bool:
        """Commit the attempt's uploaded part: exactly one attempt's output counts."""
        if (job_id, index, attempt) not in self.staged:
            return False
        self.staged.discard((job_id, index, attempt))
        self.outbox.put(CommitOutput(job_id, index, attempt))
        self.journal.event("output_committed", job=job_id, index=index, attempt=attempt)
        return True

    # ------------------------------------------------------------------ what the parts may do

    def send(self, node_id: str, message: Message) -> None:
        """Send ``message`` to the node, with an id of this run's (``testbed.wire.protocol`` draws one at
        random per process; the core's commands are the same for the same events)."""
        self._sent += 1
        message = message.model_copy(update={"id": f"{self.run_id}-{self._sent}"})
        self.senders.sent(node_id, message)
        self.outbox.put(Send(node_id, message))

    def kick(self) -> None:
        """Ask for a scheduling round."""
        self.outbox.want_round()

    def kill(self, node_id: str) -> None:
        self.outbox.put(KillNode(node_id))

    def probe(self, node: NodeRecord, purpose: str, session: int = 0) -> None:
        self.outbox.put(Probe(node.node_id, node.url, node.incarnation, purpose, session))  # type: ignore[arg-type]

    def put(self, command: Command) -> None:
        self.outbox.put(command)

    def run_file(self, name: str, text: str) -> None:
        self.outbox.put(RunFile(name, text))

    def launch_node(self, node_class: str) -> NodeRecord:
        return self.launcher.launch(node_class)

    def snapshot(self) -> tuple[ClusterSnapshot, Pending]:
        return self.round.snapshot()

    def node_views(self) -> tuple[NodeView, ...]:
        return self.round.nodes.views()

    def running_views(self, node: NodeRecord) -> tuple[RunningTask, ...]:
        return self.round.running_views(node)

    def resource_fault(self, node: NodeRecord, job: JobRuntime, key: TaskKey, failure: str) -> None:
        """The task goes elsewhere next time; a node whose disk is full takes no new task until
        it is taken back (``master.core.disk_full``)."""
        record = job.tasks[key]
        record.excluded_nodes = record.excluded_nodes | {node.node_id}
        self.journal.event("resource_fault", node=node.node_id, task=job.task_id(key), failure=failure)
        if failure == "enospc":
            self.full_disks.node_full(node)

    def stored_bytes(self) -> dict[str, int]:
        """Bytes of live intermediate outputs held on each node (what an eviction would lose)."""
        active = (j for j in self.jobs.values() if j.status in ("waiting", "running"))
        storing = [j for j in active if not j.outputs_final]
        if not storing:
            return {}
        by_url = {self.nodes[node_id].url: node_id for node_id in self.round.nodes.alive()}
        held: dict[str, int] = {}
        for job in storing:
            for record in job.tasks.values():
                node_id = by_url.get(record.location or "")
                if record.available and node_id and not job.is_final(record):
                    held[node_id] = held.get(node_id, 0) + sum(record.partition_bytes)
        return held

    # ------------------------------------------------------------------ nodes

    def on_message(self, node_id: str, message: Message) -> None:
        node = self.nodes.get(node_id)
        if node is None and self.attach and isinstance(message, NameRequest):
            if message.host == node_id:  # on its own host's topic
                self.launcher.adopt(message)
            return
        located = tasks.locate(self, message.task_id) if isinstance(message, TaskUpdate) else None
        if node is None or not self.senders.allows(node.node_id, message, tasks.latest_attempt(located)):
            return
        if isinstance(message, TaskUpdate | Heartbeat) and message.cached_inputs is not None:
            node.cached_inputs = tuple((c.key, c.nbytes) for c in message.cached_inputs)
        if isinstance(message, TaskUpdate):
            tasks.task_update(self, node, message, self.launch_acks, located)
        elif isinstance(message, NodeState):
            self._node_state(node, message)
        elif isinstance(message, BlockReceived):
            self.recovery.react(BlockReported(node.node_id, message))
        elif isinstance(message, PushDelivered):
            self.recovery.react(PushReported(node.node_id, message))
        elif isinstance(message, Heartbeat) and message.incarnation == node.incarnation:
            if message.progress:
                self.copies.heartbeat(node, message)
            self.watch.heartbeat(node, message)

    def _node_state(self, node: NodeRecord, state: NodeState) -> None:
        if state.state == "up" and node.status == "launching":
            node.status = NODE.next(node.status, "joined")
            node.incarnation, node.session = state.incarnation, state.session
            node.url = f"http://{state.host}:{state.port}"
            node.last_seen = self.journal.now()
            self.journal.event(
                "node_up", node=node.node_id, **{"class": node.class_name}, pid=state.pid, url=node.url
            )
            self.launcher.node_joined()
            for job_id in self.inputs.jobs:  # what it was placed to hold while it launched
                store_inputs(self, job_id, (node.node_id,))
            self.kick()
        elif state.incarnation != node.incarnation or not node.alive:
            return
        elif state.state == "draining" and node.status == "up":
            node.status = NODE.next(node.status, "drain")
        elif state.state == "lost":
            self.watch.will(node, state.session)
        elif state.state == "gone":
            self.watch.gone(node)
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
        self.journal.event("node_release", node=node.node_id, **{"class": node.class_name}, reason=reason)
        self.node_lost(node, "released")
        self.outbox.put(ReleaseNode(node.node_id))

    def record_eviction(
        self, node: NodeRecord, reason: str, lifetime_s: float | None, tasks_running: int, bytes_lost: int
    ) -> None:
        self.evictions += 1
        node.evicted_at = self.journal.now()
        self.evicted.append(
            {"t": round(node.evicted_at, 3), "node": node.node_id, "class": node.class_name, "reason": reason}
        )
        facts = {
            "reason": reason,
            "lifetime_s": lifetime_s,
            "tasks_running": tasks_running,
            "bytes_lost": bytes_lost,
        }
        self.journal.event("eviction", node=node.node_id, **{"class": node.class_name}, **facts)
        if node.status == "launching":  # it never connected: no Last Will or heartbeat will tell
            self.node_lost(node, "evicted_while_launching")

    def node_lost(self, node: NodeRecord, reason: str) -> None:
        """Forget a node and recover what it held: its running tasks and its stored outputs."""
        if not node.alive:
            return
        self.round.forget_queue(node)
        node.status = NODE.next(node.status, "released" if reason == "released" else "lost")
        now = self.journal.now()
        detect_s = now - node.evicted_at if node.evicted_at is not None else None
        # An evicted node ended when it was killed, not when its loss was heard: its replacement
        # may already be launching, and the record never shows more nodes than were alive.
        ended_s = node.evicted_at if node.evicted_at is not None else now
        self.records.node_ended(node, "node_lost", reason=reason, detect_s=detect_s, ended_s=ended_s)
        self.copies.node_lost(node)  # first: an original lost here hands its task to its copy
        self.inputs.node_lost(node.node_id)
        interrupted = {}
        cause = f"its node {node.node_id} was lost ({reason})"
        for job in self.jobs.values():
            if job.status in ("waiting", "running"):
                pushing = job.pushing_on(node.node_id)
                interrupted[job.job_id] = tuple(job.node_lost(node.node_id, node.url))
                for key in interrupted[job.job_id]:
                    if key in pushing:  # the attempt has its row (succeeded): its push is what is lost
                        self.journal.event("push_failed", job=job.job_id, task=job.task_id(key), error=cause)
                    else:
                        self.records.task_finished(job, key, node, "lost", "node_lost", cause=cause)
        self.recovery.react(NodeLost(node.node_id, node.node_class, interrupted))
        node.running.clear()
        node.launches.clear()
        node.sent_at.clear()
        node.acked.clear()
        node.vanish_resends.clear()
        if reason in REPLACED_LOSSES and not self.attach and not self.records.all_done:
            self.chaos.replace_lost(node)
        self.kick()

    def end_nodes(self) -> None:
        """The run ends: every node alive ends with it (``node_ended``: ``run_end`` in nodes.csv)."""
        for node in self.nodes.values():
            if node.alive:
                node.status = NODE.next(node.status, "run_ended")
                self.records.node_ended(node, "node_ended", reason="run_end")

    # ------------------------------------------------------------------ broker outages

    def _rejoined_broker(self, session: int) -> None:
        """After our own reconnect: give agents time to reconnect too, and re-send what may be lost.

        Messages published while we were away were not queued for us (clean
        sessions), and a restarted broker forgets what it had not delivered.
        Re-sending each running task's launch is safe: an agent that runs or
        ran that attempt repeats its outcome instead of running it again.
        """
        grace = self.journal.now() + 1.5 * MAX_BACKOFF_S
        resent = 0
        for node in self.nodes.values():
            if node.status in ("up", "draining"):
                node.last_seen = max(node.last_seen, grace)
                resent += self._resend_commands(node)
        self.journal.event("broker_reconnected", session=session, resent=resent)

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
        self.recovery.react(Reconnected(node.node_id))
        self.send(node.node_id, Resync())
        return len(node.launches)
