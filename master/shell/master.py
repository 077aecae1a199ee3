"""The master's real shell: the sans-I/O core (``master.core``) driven by the world.

MQTT messages become ``FromNode`` events, a round follows the backlog of
received messages, the core's timers become event-loop timers, and every
command is carried out here: a message is signed and published, the journal
file written, an output renamed into place, a node launched, killed or released
through the provider, an agent asked over HTTP. The chaos rules and the
autoscaler run in the core; a live eviction (the HTTP API's) and a full disk
at the master are events too (``master.shell.master_ports`` names what each part uses).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from master.core import commands as cmd
from master.core.events import (
    Abort,
    Begin,
    Crashed,
    Event,
    EvictRequest,
    FromNode,
    JobFailed,
    LinkDown,
    LinkUp,
    OutputLocated,
    OutputStaged,
    ProbeAnswered,
    Round,
    Stop,
    Wake,
)
from master.core.liveness import start_window
from master.core.machine import MasterCore
from master.core.nodes import NodeRecord
from master.core.resume import Recovered
from master.core.shell_base import Shell
from master.core.view import CoreView
from master.providers.base import AdoptingProvider, NodeProvider
from master.shell import answers
from master.shell.disk_faults import journal_disk_full
from master.shell.http_api import MasterApi
from master.shell.journal_file import Journal
from master.shell.live_chaos import ChaosShell
from master.shell.node_start import NodeStarts
from master.shell.probe import probe_agent
from master.shell.resume_run import prepare_restored_outputs
from master.shell.signing import CommandSigner
from master.summary.latency import RoundTimes
from testbed.settings.run_settings import RunSettings
from testbed.wire.capabilities import RunKeys, name_proof, seal
from testbed.wire.mqtt import BrokerAddress, MqttLink
from testbed.wire.protocol import Codec, Message, NodeNamed, NodeState, Topics

log = logging.getLogger("master")
BACKLOG_TURNS = 256
"""At most this many event-loop turns go to received messages before a scheduling round."""


class Master(Shell):
    def __init__(
        self,
        settings: RunSettings,
        run_id: str,
        run_dir: Path,
        provider: NodeProvider,
        broker: BrokerAddress,
        token: str,
        agent_command: Callable[[str, str], list[str]],
        http_host: str = "127.0.0.1",
        advertise: str = "127.0.0.1",
        agent_env: dict[str, str] | None = None,
        attach: bool = False,
        node_env: Callable[[str], Awaitable[dict[str, str]]] | None = None,
        recovered: Recovered | None = None,
    ) -> None:
        """``token`` is the run secret (``testbed.wire.capabilities``); ``node_env(node_id)``: the
        extra environment of one agent (its broker login). ``attach``: the initial nodes are
        started by someone else (compose, Swarm); the master waits for the scenario's node
        counts to come up and adopts them. ``recovered``: a crashed run to resume."""
        super().__init__()
        scenario = settings.scenario
        self.settings = settings
        self.planner = answers.Planner(settings)
        self.scenario = scenario
        self.run_id = run_id
        self.run_dir = run_dir
        self.provider = provider
        self.broker = broker
        self.keys = RunKeys(token)
        self.http_host = http_host
        self.advertise = advertise
        self.attach = attach
        self.topics = Topics(run_id)
        self.codec = Codec()
        self.journal = Journal(run_dir)
        if recovered is not None:
            self.journal.t0 = self.journal.clock() - recovered.crashed_at
        self.journal.on_disk_full = lambda error: journal_disk_full(self, error)
        window = start_window(os.cpu_count() or 2, scenario.cluster.start_window)
        self.core = MasterCore(
            settings,
            run_id,
            attach=attach,
            start_window=window,
            resume=recovered,
            reads_reported=True,
        )
        self.signer = CommandSigner(self)
        self._kick = asyncio.Event()
        self._all_done = asyncio.Event()
        self._crash: Exception | None = None
        """The first error the core raised (a plugin's bug, or the core's), wherever it was
        handling an event: a message, a timer, a round. The run ends on it (``_until_done``)."""
        self._crashed = asyncio.Event()
        self._timers: list[tuple[float, asyncio.TimerHandle]] = []
        """The event loop's timers for the core's ``WakeAt``s, with their loop times."""
        self._work: set[asyncio.Task[Any]] = set()
        self.stoppers: list[Callable[[], Awaitable[None]]] = []
        """Helpers the run attached (its broker's keeper), stopped before the nodes are."""
        self.starts = NodeStarts(self.core, provider, self.keys, agent_command, agent_env or {}, node_env)
        self.link = MqttLink(broker, f"{run_id}-master", self._on_message, self._on_connect)
        self.view = CoreView(self.core)
        self.times = RoundTimes(charged=False)
        """Each scheduling round's CPU seconds (summary.json's ``solver_time_*``)."""
        self.chaos = ChaosShell(self)
        self.api = MasterApi(self)

    # ------------------------------------------------------------------ the core's state, read-only

    @property
    def nodes(self) -> dict[str, NodeRecord]:
        return self.core.nodes

    @property
    def jobs(self) -> dict[str, Any]:
        return self.core.jobs

    @property
    def resumed_from(self) -> float:
        return self.core.resumed_from

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> bool:
        """Run every job to completion (or the scenario timeout); True when all succeeded."""
        runner = await self.api.start()
        self.core.round.output_base = self.api.url
        self.link.start()
        background = [asyncio.create_task(self._scheduling_loop())]
        try:
            self.execute(self.core.start(self.journal.now()))
            await self.starts.until_cluster_up(self.journal.now, self._handle)
            self.begin()
            await self._until_done(background)
        finally:
            for _, timer in self._timers:
                timer.cancel()
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            for stop in self.stoppers:
                await stop()
            self._handle(Stop())
            await self._settle()
            await self.starts.shutdown()
            await self.link.close()
            self.api.feed.close()  # its open streams end: the server's stop would wait for them
            await runner.cleanup()
        ok = self.core.records.all_succeeded()
        self.journal.event("run_finished", status="succeeded" if ok else "failed")
        self.journal.close()
        return ok

    def begin(self) -> None:
        """Time 0 of the run (a resumed run: the crash's time) is when its initial cluster is up."""
        old_t0 = self.journal.t0
        self.journal.t0 = self.journal.clock() - self.core.resumed_from
        self._handle(Begin(self.journal.t0 - old_t0))

    async def _until_done(self, background: list[asyncio.Task[None]]) -> None:
        """Wait for every job to end, or the timeout. A background loop that dies, or an event
        the core fails on (a bug in a policy, a strategy or the shell; an MQTT message's or a
        timer's would otherwise only be logged), ends the run at once with its jobs failed and
        the error in the journal, rather than leaving the run stuck until its timeout."""
        all_done = asyncio.ensure_future(self._all_done.wait())
        crash = asyncio.ensure_future(self._crashed.wait())
        try:
            done, _ = await asyncio.wait(
                [all_done, crash, *background],
                timeout=self.scenario.timeout_s,
                return_when=asyncio.FIRST_COMPLETED,
            )
        finally:
            all_done.cancel()
            crash.cancel()
        crashed = [task for task in done if task not in (all_done, crash)]
        error = self._crash or (crashed[0].exception() if crashed else None)
        if error is not None:
            log.error("the master stopped on an internal error", exc_info=error)
            self._handle(Crashed(error))
        elif not done:
            self._handle(Abort(f"the run hit its timeout of {self.scenario.timeout_s:.0f}s", journal=False))

    def abort(self, reason: str) -> None:
        """End the run at once (its broker is gone for good): unfinished jobs fail with ``reason``."""
        self._handle(Abort(reason))

    async def _settle(self) -> None:
        """Wait for the releases, kills and probes under way (no process left behind)."""
        await asyncio.gather(*self._work, return_exceptions=True)

    # ------------------------------------------------------------------ events in, commands out

    def _handle(self, event: Event) -> list[cmd.Command]:
        commands = self.handle_answer(event)
        self.execute(commands)
        return commands

    def handle_answer(self, event: Event) -> list[cmd.Command]:
        try:
            return self.core.handle(event, self.journal.now())
        except Exception as error:
            if self._crash is None:
                self._crash = error
                self._crashed.set()
            raise

    # ------------------------------------------------------------------ the verbs (``Shell``)

    def do_journal(self, command: cmd.Journal) -> None:
        self.journal.write_event(command.t, command.kind, command.fields)

    def do_send(self, command: cmd.Send) -> None:
        self._publish(command.node_id, command.message)

    def do_want_round(self, command: cmd.WantRound) -> None:
        self._kick.set()

    def do_wake_at(self, command: cmd.WakeAt) -> None:
        self._wake_at(command.t)

    def do_start_node(self, command: cmd.StartNode) -> None:
        self.starts.start(command)

    def do_name_node(self, command: cmd.NameNode) -> None:
        self._spawn(self._name(command))

    def do_kill_node(self, command: cmd.KillNode) -> None:
        if self.provider.owns(command.node_id):
            self._spawn(self.provider.evict(command.node_id))

    def do_release_node(self, command: cmd.ReleaseNode) -> None:
        if self.provider.owns(command.node_id):
            self._spawn(self.provider.release(command.node_id))

    def do_slow_node(self, command: cmd.SlowNode) -> None:
        if self.provider.owns(command.node_id):
            self._spawn(self.provider.slow(command.node_id, command.factor))

    def do_probe(self, command: cmd.Probe) -> None:
        self._spawn(self._probe(command))

    def do_commit_output(self, command: cmd.CommitOutput) -> None:
        self.api.commit_output(command.job_id, command.index, command.attempt)

    def do_prepare_job(self, command: cmd.PrepareJob) -> None:
        outputs = self.run_dir / "outputs" / command.job_id
        outputs.mkdir(parents=True, exist_ok=True)
        if command.keep is not None:
            prepare_restored_outputs(outputs, set(command.keep))

    def do_plan_job(self, command: cmd.PlanJob) -> None:
        self.answer(self.planner.plan(command))

    def do_log(self, command: cmd.Log) -> None:
        answers.say(command)

    def do_locate_output(self, command: cmd.LocateOutput) -> None:
        """The parent's parts are committed: answered next."""
        parts = str(self.run_dir / "outputs" / command.job_id / "part-*")
        asyncio.get_running_loop().call_soon(self._handle, OutputLocated(command.ordinal, parts))

    def do_run_file(self, command: cmd.RunFile) -> None:
        path = self.run_dir / command.name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(command.text, encoding="utf-8")

    def do_cluster_up(self, command: cmd.ClusterUp) -> None:
        self.starts.cluster_up.set()

    def do_run_over(self, command: cmd.RunOver) -> None:
        self._all_done.set()

    def do_evicted(self, command: cmd.Evicted) -> None:
        """Read by ``evict`` from the commands ``_handle`` returns."""

    def _publish(self, node_id: str, message: Message) -> None:
        """Publish a command, with the capabilities it needs minted for ``node_id``."""
        message = self.signer.sign(message)
        self.link.publish(self.topics.command(node_id), self.codec.encode(message))

    async def _name(self, command: cmd.NameNode) -> None:
        """An adopted agent learns its node id and gets that node's broker login and node key,
        sealed under the key it sent (which only we read), with the proof that we named it."""
        if isinstance(self.provider, AdoptingProvider):
            self.provider.adopt(command.node_id, command.host)
        label = f"{command.host} {command.incarnation} {command.node_id}"
        sealed = seal(command.key, label, await self.starts.secrets_of(command.node_id))
        proof = name_proof(command.key, command.host, command.incarnation, command.node_id, sealed)
        named = NodeNamed(
            host=command.host,
            incarnation=command.incarnation,
            node_id=command.node_id,
            proof=proof,
            sealed=sealed,
        )
        self.link.publish(self.topics.name_answers(command.host), self.codec.encode(named))

    async def _probe(self, probe: cmd.Probe) -> None:
        outcome = await probe_agent(probe.url, probe.incarnation, self.scenario.heartbeat_timeout_s)
        self._handle(ProbeAnswered(probe.node_id, probe.purpose, outcome, probe.session))

    def _spawn(self, coroutine: Any) -> None:
        task = asyncio.get_running_loop().create_task(coroutine)
        self._work.add(task)
        task.add_done_callback(self._work.discard)

    def _wake_at(self, t: float) -> None:
        loop = asyncio.get_running_loop()
        delay = max(0.0, t - self.journal.now())
        self._timers = [(when, timer) for when, timer in self._timers if when > loop.time()]  # to come
        self._timers.append((loop.time() + delay, loop.call_later(delay, self._wake)))

    def _wake(self) -> None:
        if not self.link.connected.is_set() and self.core.link_up:
            self._handle(LinkDown())  # our own outage says nothing about the nodes
        self._handle(Wake())

    # ------------------------------------------------------------------ MQTT

    async def _on_connect(self, link: MqttLink) -> None:
        topics = [self.topics.state(), self.topics.heartbeat(), self.topics.task_updates()]
        for topic in [*topics, self.topics.name_requests()] if self.attach else topics:
            await link.subscribe(topic)
        self._handle(LinkUp(link.session))

    def _on_message(self, topic: str, payload: bytes) -> None:
        message = self.codec.decode(payload)
        if message is None:
            log.warning("dropped a malformed message on %s (%d so far)", topic, self.codec.malformed)
            return
        self._handle(FromNode(Topics.node_of(topic), message))
        if isinstance(message, NodeState):
            self.starts.came_up.set()

    async def _scheduling_loop(self) -> None:
        """A round whenever the core wants one (arrival, task end, node change, its ticker)."""
        while True:
            await self._kick.wait()
            await self._let_backlog_in()
            self._kick.clear()
            self.schedule_once()
            await asyncio.sleep(0)

    def schedule_once(self) -> None:
        """One scheduling round now (its CPU seconds recorded: ``RoundTimes``)."""
        started = time.thread_time()
        self._handle(Round())
        if self.core.round.asked:
            self.times.add(time.thread_time() - started, None)

    async def _let_backlog_in(self) -> None:
        """Messages the link has already received are handled before the round: one round
        for a burst of task ends, not one per message (each takes the receiver a few turns
        of the event loop). Bounded, so a flood of messages cannot hold rounds back."""
        for _ in range(BACKLOG_TURNS):
            if not self.link.backlog:
                return
            await asyncio.sleep(0)

    # ------------------------------------------------------------------ for the API and full disks

    def evict(self, request: EvictRequest) -> cmd.Evicted:
        """A live eviction (``master.shell.live_chaos``): the core's answer, its kills carried out."""
        return next(c for c in self._handle(request) if isinstance(c, cmd.Evicted))

    def fail_job(self, job_id: str, error: str) -> None:
        self._handle(JobFailed(job_id, error))

    def fail_unfinished(self, reason: str) -> None:
        self._handle(Abort(reason, journal=False))

    def output_staged(self, job_id: str, index: int, attempt: int) -> None:
        self._handle(OutputStaged(job_id, index, attempt))
