"""The node agent: one asyncio process per emulated node.

It announces itself on MQTT (retained state, Last Will ``lost``), sends
heartbeats, runs the tasks the master sends it, each in a worker process, and
serves its node-local blocks over HTTP. Everything it stores lives under its
own node directory, which an eviction destroys.

This is the agent's I/O shell: what it decides is ``agents.core.AgentCore``'s, which it feeds
the decoded commands and the results of its I/O as inputs and whose actions it carries out.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
from aiohttp import web

from agents import core
from agents.core import AgentCore, HeartbeatDue, SendHeartbeat
from agents.push import push_block
from agents.shuffle import make_app
from agents.worker_main import combine_in_worker, run_in_worker, warmed
from agents.worker_process import receive_outcome, start_worker
from testbed.node.bandwidth import UNLIMITED, NodeLimits
from testbed.node.cgroups import slot_group
from testbed.wire.mqtt import BrokerAddress, MqttLink
from testbed.wire.protocol import (
    Codec,
    FlushAggregate,
    NodeState,
    PushedPart,
    TaskInputs,
    TaskSpec,
    TaskUpdate,
    Topics,
)
from testbed.wire.replica_blocks import hold_storing, release_storing, store_replicas

log = logging.getLogger("agent")
_forkserver = multiprocessing.get_context("forkserver")
_forkserver.set_forkserver_preload(["agents.forkserver_guard", "agents.worker"])


@dataclass(frozen=True)
class AgentConfig:
    run_id: str
    node_id: str
    node_class: str
    broker: BrokerAddress
    data_dir: Path
    slots: int = 2
    memory_mb: int = 1024
    listen: str = "127.0.0.1"
    advertise: str = "127.0.0.1"
    port: int = 0
    node_key: str = ""
    """Checks the capabilities presented to this node's shuffle server (testbed.wire.capabilities)."""
    heartbeat_interval: float = 0.5
    master_id: str = "master"
    warm_workers: bool = True
    task_memory_limit_mb: int | None = None
    """Extra memory a task worker may allocate (None: no limit); see agents.worker."""
    network_mbps: float | None = None
    disk_mb_s: float | None = None
    """The node's bandwidths (None: unlimited), shared with its task workers (testbed.node.bandwidth)."""
    cgroup: Path | None = None
    """The node's CPU group (testbed.node.cgroups): each task worker joins the leaf of a free slot."""
    broker_wait_s: float | None = None
    """How long the broker may stay out of reach before the agent gives up (None: for ever)."""


@dataclass
class RunningAttempt:
    """An attempt's worker as the shell holds it, from ``StartWorker`` until it is gone."""

    spec: TaskSpec
    process: Any  # None until the worker process has started
    cancelled: bool = False
    """Killed (``Kill``): a worker still starting is killed once it runs, or not started."""
    feed: Any = None
    """The writing end of the worker's input feed (streamed dependencies), once it runs."""
    feeding: asyncio.Lock = field(default_factory=asyncio.Lock)
    slot: int | None = None
    """The task slot whose CPU group its worker joined, until the worker is gone."""
    score: Any = None
    """The progress score its worker writes (a shared double), if its spec asks it reported."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.spec.task_id, self.spec.attempt)


class Agent:
    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.topics = Topics(config.run_id)
        self.codec = Codec()
        self.incarnation = os.urandom(6).hex()
        self.core = AgentCore(config.node_id, self.incarnation)
        self.workers: dict[tuple[str, int], RunningAttempt] = {}
        """Each attempt's worker by (task, attempt), until it is gone."""
        self.port = config.port
        self.free_slots = set(range(config.slots)) if config.cgroup is not None else set()
        """Task slots whose CPU group no worker is in (none without per-slot groups)."""
        self.started = False
        """Announced (retained state ``up``) only once its task forkserver is warm."""
        self.limits = UNLIMITED
        self.link: MqttLink
        self._stop = asyncio.Event()

    @property
    def url(self) -> str:
        return f"http://{self.config.advertise}:{self.port}"

    @property
    def running(self) -> dict[str, core.Attempt]:
        """Each task's current attempt here (the core's)."""
        return self.core.running

    def _state_payload(self, state: str, session: int | None = None) -> bytes:
        c = self.config
        message = NodeState(
            node_id=c.node_id,
            node_class=c.node_class,
            state=state,  # type: ignore[arg-type]
            incarnation=self.incarnation,
            session=self.link.session if session is None else session,
            host=c.advertise,
            port=self.port,
            slots=c.slots,
            memory_mb=c.memory_mb,
            pid=os.getpid(),
        )
        return self.codec.encode(message)

    # ------------------------------------------------------------------ lifecycle

    async def run(self) -> None:
        (self.config.data_dir / "blocks").mkdir(parents=True, exist_ok=True)
        self.limits = NodeLimits.create(self.config.data_dir, self.config.network_mbps, self.config.disk_mb_s)
        runner = await self._start_http()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, self._stopped_by, signum)
        client_id = f"{self.config.run_id}-{self.config.node_id}-{self.incarnation}"
        self.link = MqttLink(
            self.config.broker,
            client_id,
            self._on_message,
            self._on_connect,
            self._will,
            give_up_after=self.config.broker_wait_s,
        )
        link = self.link.start()
        heartbeat: asyncio.Task[None] | None = None
        try:
            if self.config.warm_workers:
                await self._warm_up()
            self.started = True  # only now is the node up, and judged by its heartbeats
            if self.link.connected.is_set():
                await self._announce(self.link)
            heartbeat = asyncio.create_task(self._heartbeats())
            await _until_stopped(self._stop, link)
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
            for worker in list(self.workers.values()):
                _kill(worker)
            await runner.cleanup()  # first: the master believes "gone" once nothing answers
            self.link.publish(
                self.topics.state(self.config.node_id), self._state_payload("gone"), retain=True
            )
            await self.link.flush(2.0)
            await self.link.close()

    def _stopped_by(self, signum: int) -> None:
        log.warning("%s: stopping on %s", self.config.node_id, signal.Signals(signum).name)
        self._stop.set()

    def _will(self, session: int) -> aiomqtt.Will:
        """``lost`` for this connection only: the master ignores it once a newer session spoke."""
        topic = self.topics.state(self.config.node_id)
        return aiomqtt.Will(topic, self._state_payload("lost", session), qos=1, retain=True)

    async def _start_http(self) -> web.AppRunner:
        identity = {"node": self.config.node_id, "incarnation": self.incarnation}
        blocks = self.config.data_dir / "blocks"
        app = make_app(blocks, self.config.node_key, self._on_block_received, identity, self.limits)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, self.config.listen, self.config.port, reuse_address=True)
        try:
            await site.start()
        except OSError as exc:  # a port taken or not ours to bind: nothing to retry
            await runner.cleanup()
            where = f"{self.config.listen}:{self.config.port}"
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise ListenFailed(f"cannot serve blocks on {where}: {reason}") from None
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return runner

    async def _warm_up(self) -> None:
        """Start the task forkserver and fork one worker from it, off the loop: the forkserver
        preloads numpy and the workloads (seconds of CPU on a busy machine), which would
        otherwise delay this node's first task, or its heartbeats once it is up."""
        process = _forkserver.Process(target=warmed, daemon=True)
        try:
            await start_worker(process, self.config.cgroup)
            await asyncio.to_thread(process.join)
        except (OSError, EOFError) as exc:  # the first task will try again
            log.warning("could not warm the task forkserver: %s", exc)

    async def _on_connect(self, link: MqttLink) -> None:
        await link.subscribe(self.topics.command(self.config.node_id))
        if self.started:  # else it announces itself once started
            await self._announce(link)

    async def _announce(self, link: MqttLink) -> None:
        state = self._state_payload(self.core.state)
        link.publish(self.topics.state(self.config.node_id), state, retain=True)

    async def _heartbeats(self) -> None:
        topic = self.topics.heartbeat(self.config.node_id)
        while True:
            due = self.core.handle(HeartbeatDue(self._scores()))
            interval = self.config.heartbeat_interval
            for beat in (action.beat for action in due if isinstance(action, SendHeartbeat)):
                await self.link.publish_now(topic, self.codec.encode(beat), timeout=interval)
            await asyncio.sleep(interval)

    def _scores(self) -> dict[str, float]:
        """Each running attempt's latest progress score, of those whose spec asks it reported."""
        scores = {}
        for task_id, attempt in self.running.items():
            worker = self.workers.get(attempt.key)
            if worker is not None and worker.score is not None:
                scores[task_id] = min(1.0, max(0.0, worker.score.value))
        return scores

    # ------------------------------------------------------------------ inputs and actions

    def _on_message(self, topic: str, payload: bytes) -> None:
        message = self.codec.decode(payload)
        if message is None:
            log.warning("dropped a malformed message on %s (%d so far)", topic, self.codec.malformed)
            return
        self._handle(message)

    def _handle(self, event: core.Input) -> None:
        """Hand ``event`` to the core and carry out what it answers."""
        for action in self.core.handle(event):
            _ACTIONS[type(action)](self, action)

    def _start_worker(self, action: core.StartWorker) -> None:
        worker = RunningAttempt(action.spec, None)
        self.workers[worker.key] = worker
        asyncio.get_running_loop().create_task(self._run_attempt_or_fail(worker))

    def _kill_worker(self, action: core.Kill) -> None:
        worker = self.workers.get((action.task_id, action.attempt))
        if worker is not None:
            _kill(worker)

    def _feed_inputs(self, action: core.FeedInputs) -> None:
        worker = self.workers.get((action.task_id, action.attempt))
        if worker is not None:
            asyncio.get_running_loop().create_task(self._feed(worker, action.inputs))

    def _publish_report(self, action: core.PublishReport) -> None:
        self.link.publish(self.topics.task_updates(self.config.node_id), self.codec.encode(action.report))

    def _start_push(self, action: core.Push) -> None:
        asyncio.get_running_loop().create_task(self._push(action))

    def _start_aggregate(self, action: core.Aggregate) -> None:
        asyncio.get_running_loop().create_task(self._aggregate(action.flush))

    def _delete_cached(self, action: core.DeleteCached) -> None:
        for key in action.keys:
            (self.config.data_dir / "cache" / key).unlink(missing_ok=True)

    def _announce_state(self, action: core.AnnounceState) -> None:
        self.link.publish(
            self.topics.state(self.config.node_id), self._state_payload(action.state), retain=True
        )

    def _log(self, action: core.Log) -> None:
        log.log(logging.WARNING if action.level == "warning" else logging.ERROR, "%s", action.text)

    def _publish_update(self, update: TaskUpdate) -> None:
        self.link.publish(self.topics.task_updates(self.config.node_id), self.codec.encode(update))

    # ------------------------------------------------------------------ workers

    async def _run_attempt_or_fail(self, worker: RunningAttempt) -> None:
        """Whatever goes wrong, the attempt ends with an outcome the master hears of."""
        spec = worker.spec
        try:
            await self._run_attempt(worker)
        except Exception as exc:
            log.exception("the attempt %s/%d failed in the agent", spec.task_id, spec.attempt)
            self._handle(core.AgentFailed(spec.task_id, spec.attempt, f"agent error: {exc!r}"))
        finally:
            self._free_slot(worker)
            if self.workers.get(worker.key) is worker:
                del self.workers[worker.key]

    def _slot_group(self, attempt: RunningAttempt) -> str | None:
        """The CPU group of a free task slot, taken by ``attempt``. None without per-slot groups,
        or when every slot's worker is still exiting: the worker then stays in the agent's group,
        under the node's quota alone."""
        if self.config.cgroup is None or not self.free_slots:
            return None
        attempt.slot = min(self.free_slots)
        self.free_slots.discard(attempt.slot)
        return str(slot_group(self.config.cgroup, attempt.slot))

    def _free_slot(self, attempt: RunningAttempt) -> None:
        if attempt.slot is not None:
            self.free_slots.add(attempt.slot)
            attempt.slot = None

    async def _run_attempt(self, worker: RunningAttempt) -> None:
        spec = worker.spec
        if worker.cancelled:
            self._handle(core.WorkerFinished(spec.task_id, spec.attempt, {}))
            return
        receiver, sender = _forkserver.Pipe(duplex=False)
        feed_out, feed_in = _forkserver.Pipe(duplex=False) if spec.streamed else (None, None)
        if spec.report_progress:
            worker.score = _forkserver.RawValue("d", 0.0)
        worker.process = _forkserver.Process(
            target=run_in_worker,
            args=(
                spec.model_dump(),
                str(self.config.data_dir),
                self.url,
                sender,
                self.config.task_memory_limit_mb,
                feed_out,
                self._slot_group(worker),
                worker.score,
            ),
            daemon=True,
        )
        try:
            await start_worker(worker.process, self.config.cgroup)
        except (OSError, EOFError) as exc:
            log.error("cannot start a worker for %s: %s", spec.task_id, exc)
            worker.process = None
            receiver.close()
            if feed_in is not None:
                feed_in.close()
            error = f"cannot start a worker process: {exc}"
            self._handle(core.WorkerFinished(spec.task_id, spec.attempt, {}, error))
            return
        finally:
            sender.close()
            if feed_out is not None:
                feed_out.close()
        worker.feed = feed_in
        self._handle(core.WorkerStarted(spec.task_id, spec.attempt))  # killed if cancelled meanwhile
        try:
            outcome = await receive_outcome(receiver, worker.process, self.config.cgroup)
            self._free_slot(worker)  # the worker is gone: the slot is free before the master hears so
            self._handle(core.WorkerFinished(spec.task_id, spec.attempt, outcome))
        finally:
            if feed_in is not None:
                async with worker.feeding:
                    worker.feed = None
                    feed_in.close()

    async def _feed(self, worker: RunningAttempt, inputs: TaskInputs) -> None:
        """Write ``inputs`` to the worker's feed, off the loop: a busy worker may leave the pipe
        full. Not sent if the worker is gone (its outcome says why)."""
        async with worker.feeding:
            sent = worker.feed is not None
            if sent:
                try:
                    await asyncio.to_thread(worker.feed.send, inputs.model_dump(mode="python"))
                except (OSError, ValueError):
                    sent = False
        self._handle(core.InputsFed(worker.spec.task_id, worker.spec.attempt, inputs, sent))

    # ------------------------------------------------------------------ pushes, aggregates, replicas

    async def _push(self, push: core.Push) -> None:
        """Copy a stored block to every push target; the core then asks the master to commit."""
        blocks, block, rate = self.config.data_dir / "blocks", push.block, push.rate
        delivered: dict[str, tuple[PushedPart, ...]] = {}
        failed, errors = [], []
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_read=60)) as session:
            results = await asyncio.gather(
                *(
                    push_block(session, blocks, block, t.url, t.partitions, t.token, rate, self.limits)
                    for t in push.targets
                ),
                return_exceptions=True,
            )
        for target, result in zip(push.targets, results, strict=True):
            if isinstance(result, BaseException):
                failed.append(target.node_id)
                errors.append(f"{target.node_id}: {result}")
            else:
                delivered[target.node_id] = result
        error = "; ".join(errors)
        self._handle(core.PushDone(block, push.task_id, push.attempt, delivered, tuple(failed), error))

    async def _aggregate(self, flush: FlushAggregate) -> None:
        """Pado's partial aggregation: merge the held outputs into one block in a worker
        process (the op's combiner); the core then has it pushed."""
        receiver, sender = _forkserver.Pipe(duplex=False)
        args = (flush.op, list(flush.members), flush.block, flush.partitions, str(self.config.data_dir))
        process = _forkserver.Process(target=combine_in_worker, args=(*args, sender), daemon=True)
        try:
            await start_worker(process, self.config.cgroup)
        except (OSError, EOFError) as exc:
            receiver.close()
            outcome = {"state": "failed", "error": f"cannot start a worker process: {exc}"}
        else:
            sender.close()  # so that the worker's death reads as end of file
            outcome = await receive_outcome(receiver, process, self.config.cgroup)
        finally:
            sender.close()
        self._handle(core.AggregateDone(flush, outcome))

    def _store_replicas(self, action: core.StoreReplicas) -> None:
        """Copy the splits this node holds into its replica blocks, off the loop; each is locked
        as being stored at once, so a map launched meanwhile waits for its copy."""
        blocks = self.config.data_dir / "blocks"
        locks = [(split.block, hold_storing(blocks, split.block)) for split in action.splits]

        async def store() -> None:
            try:
                await asyncio.to_thread(store_replicas, self.config.data_dir, list(action.splits))
            except OSError as exc:  # its maps fetch from another holder or read the source
                log.warning("cannot store the input replicas of %s: %s", action.job_id, exc)
            finally:
                for block, fd in locks:
                    release_storing(blocks, block, fd)
                self._handle(core.ReplicasStored(tuple(block for block, _ in locks)))

        asyncio.get_running_loop().create_task(store())

    def _on_block_received(self, block: str, parts: tuple[PushedPart, ...]) -> None:
        self._handle(core.BlockArrived(block, parts))


_ACTIONS: dict[type, Any] = {
    core.StartWorker: Agent._start_worker,
    core.Kill: Agent._kill_worker,
    core.FeedInputs: Agent._feed_inputs,
    core.PublishUpdate: lambda agent, action: agent._publish_update(action.update),
    core.PublishReport: Agent._publish_report,
    core.Push: Agent._start_push,
    core.Aggregate: Agent._start_aggregate,
    core.StoreReplicas: Agent._store_replicas,
    core.DeleteCached: Agent._delete_cached,
    core.AnnounceState: Agent._announce_state,
    core.Log: Agent._log,
}
"""How the shell carries out each action of the core (a heartbeat is sent by its timer's loop)."""


class ListenFailed(RuntimeError):
    """The agent cannot open its data-plane port (exit 1, one line)."""


async def _until_stopped(stop: asyncio.Event, link: asyncio.Task[None]) -> None:
    """Until ``stop`` is set; raises what ended the broker link first (it gave up), if it did."""
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait([stopping, link], return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopping.cancel()
    if link.done() and not stop.is_set():
        link.result()
        raise RuntimeError("the broker link ended")  # it never returns but when closed


def _kill(attempt: RunningAttempt) -> None:
    """Cancel the attempt; SIGKILL its worker if it has one yet (a start may be under way)."""
    attempt.cancelled = True
    if attempt.process is not None and attempt.process.pid is not None:
        attempt.process.kill()
