"""The node agent: one asyncio process per emulated node.

It announces itself on MQTT (retained state, Last Will ``lost``), sends
heartbeats, runs the tasks the master sends it, each in a worker process, and
serves its node-local blocks over HTTP. Everything it stores lives under its
own node directory, which an eviction destroys.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp
import aiomqtt
from aiohttp import web

from agents.push import push_block
from agents.shuffle import make_app
from agents.worker_main import combine_in_worker, run_in_worker, warmed
from agents.worker_process import receive_outcome, start_worker
from testbed.node.bandwidth import UNLIMITED, NodeLimits
from testbed.node.cgroups import slot_group
from testbed.node.lru import LruCache
from testbed.wire.mqtt import BrokerAddress, MqttLink
from testbed.wire.protocol import (
    INLINE_NOOP,
    BlockReceived,
    CachedInput,
    CancelTask,
    Codec,
    EvictionNotice,
    FlushAggregate,
    Heartbeat,
    LaunchTask,
    NodeState,
    PushDelivered,
    PushedPart,
    PushTarget,
    Resync,
    StoreInputs,
    TaskInputs,
    TaskMetrics,
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
    spec: TaskSpec
    process: Any  # None until the worker process has started
    cancelled: bool = False
    feed: Any = None
    """The writing end of the worker's input feed (streamed dependencies), once it runs."""
    unsent: dict[int, TaskInputs] = field(default_factory=dict)
    """The latest TaskInputs of each streamed dependency not yet written to the feed."""
    complete: set[int] = field(default_factory=set)
    """Streamed dependencies whose last TaskInputs the worker has (later ones are dropped)."""
    feeding: asyncio.Lock = field(default_factory=asyncio.Lock)
    slot: int | None = None
    """The task slot whose CPU group its worker joined, until the worker is gone."""
    score: Any = None
    """The progress score its worker writes (a shared double), if its spec asks it reported."""


class Agent:
    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.topics = Topics(config.run_id)
        self.codec = Codec()
        self.incarnation = os.urandom(6).hex()
        self.running: dict[str, RunningAttempt] = {}
        self.finished: dict[tuple[str, int], TaskUpdate] = {}
        self.flushed: set[str] = set()
        """Aggregate blocks already being made (a redelivered flush is ignored)."""
        self.push_reports: dict[tuple[str, str], bytes] = {}
        """(kind, block) -> each push report made (``PushDelivered``, ``BlockReceived``), encoded,
        repeated on ``Resync``."""
        self.port = config.port
        self.input_cache = LruCache(0)
        """Pado's task input cache (section 3.2.7): the files under ``cache/``, bounded in bytes."""
        self.storing: set[str] = set()
        """Input replica blocks being copied (``StoreInputs``)."""
        self.free_slots = set(range(config.slots)) if config.cgroup is not None else set()
        """Task slots whose CPU group no worker is in (none without per-slot groups)."""
        self.state = "up"
        self.started = False
        """Announced (retained state ``up``) only once its task forkserver is warm."""
        self.limits = UNLIMITED
        self.link: MqttLink
        self._stop = asyncio.Event()

    @property
    def url(self) -> str:
        return f"http://{self.config.advertise}:{self.port}"

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
            for attempt in list(self.running.values()):
                _kill(attempt)
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
        link.publish(self.topics.state(self.config.node_id), self._state_payload(self.state), retain=True)

    async def _heartbeats(self) -> None:
        seq = 0
        topic = self.topics.heartbeat(self.config.node_id)
        while True:
            seq += 1
            beat = Heartbeat(
                node_id=self.config.node_id,
                incarnation=self.incarnation,
                seq=seq,
                running=tuple(self.running),
                attempts={task_id: a.spec.attempt for task_id, a in self.running.items()},
                cached_inputs=self._cached_inputs(),
                progress=self._scores(),
            )
            interval = self.config.heartbeat_interval
            await self.link.publish_now(topic, self.codec.encode(beat), timeout=interval)
            await asyncio.sleep(interval)

    def _scores(self) -> dict[str, float]:
        """Each running attempt's latest progress score, of those whose spec asks it reported."""
        return {
            task_id: min(1.0, max(0.0, a.score.value))
            for task_id, a in self.running.items()
            if a.score is not None
        }

    # ------------------------------------------------------------------ commands

    def _on_message(self, topic: str, payload: bytes) -> None:
        message = self.codec.decode(payload)
        if isinstance(message, LaunchTask):
            self._launch(message.task)
        elif isinstance(message, FlushAggregate):
            if message.block not in self.flushed:
                self.flushed.add(message.block)
                asyncio.get_running_loop().create_task(self._aggregate_and_push(message))
        elif isinstance(message, TaskInputs):
            self._more_inputs(message)
        elif isinstance(message, StoreInputs):
            self._store_inputs(message)
        elif isinstance(message, Resync):
            for payload in self.push_reports.values():
                self.link.publish(self.topics.task_updates(self.config.node_id), payload)
        elif isinstance(message, CancelTask):
            self._cancel(message.task_id, message.attempt)
        elif isinstance(message, EvictionNotice):
            log.warning("eviction notice: %.1fs left", message.seconds)
            self.state = "draining"
            self.link.publish(
                self.topics.state(self.config.node_id), self._state_payload("draining"), retain=True
            )
        elif message is None:
            log.warning("dropped a malformed message on %s (%d so far)", topic, self.codec.malformed)

    def _launch(self, spec: TaskSpec) -> None:
        key = (spec.task_id, spec.attempt)
        if key in self.finished:  # a redelivered launch: repeat the outcome, run nothing
            self._publish_update(self.finished[key])
            return
        current = self.running.get(spec.task_id)
        if current is not None and current.spec.attempt >= spec.attempt:
            return
        if spec.op == INLINE_NOOP:  # an empty task: the control plane's own cost, measured alone
            update = self._update(spec, "succeeded")
            self.finished[key] = update
            self._publish_update(update)
            return
        if spec.input_cache_mb:
            self.input_cache = replace(self.input_cache, capacity_bytes=spec.input_cache_mb << 20)
        attempt = RunningAttempt(spec, None)
        self.running[spec.task_id] = attempt
        self._publish_update(self._update(spec, "running"))
        asyncio.get_running_loop().create_task(self._run_attempt_or_fail(attempt))

    async def _run_attempt_or_fail(self, attempt: RunningAttempt) -> None:
        """Whatever goes wrong, the attempt ends with an outcome the master hears of."""
        try:
            await self._run_attempt(attempt)
        except Exception as exc:
            log.exception("the attempt %s/%d failed in the agent", attempt.spec.task_id, attempt.spec.attempt)
            if self.running.get(attempt.spec.task_id) is attempt:
                self._finish(attempt, {}, error=f"agent error: {exc!r}")
        finally:
            self._free_slot(attempt)

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

    async def _run_attempt(self, attempt: RunningAttempt) -> None:
        spec = attempt.spec
        if attempt.cancelled:
            self._finish(attempt, {})
            return
        receiver, sender = _forkserver.Pipe(duplex=False)
        feed_out, feed_in = _forkserver.Pipe(duplex=False) if spec.streamed else (None, None)
        if spec.report_progress:
            attempt.score = _forkserver.RawValue("d", 0.0)
        attempt.process = _forkserver.Process(
            target=run_in_worker,
            args=(
                spec.model_dump(),
                str(self.config.data_dir),
                self.url,
                sender,
                self.config.task_memory_limit_mb,
                feed_out,
                self._slot_group(attempt),
                attempt.score,
            ),
            daemon=True,
        )
        try:
            await start_worker(attempt.process, self.config.cgroup)
        except (OSError, EOFError) as exc:
            log.error("cannot start a worker for %s: %s", spec.task_id, exc)
            attempt.process = None
            receiver.close()
            if feed_in is not None:
                feed_in.close()
            self._finish(attempt, {}, error=f"cannot start a worker process: {exc}")
            return
        finally:
            sender.close()
            if feed_out is not None:
                feed_out.close()
        if attempt.cancelled:  # while its start was under way
            _kill(attempt)
        if feed_in is not None:
            attempt.feed = feed_in
            asyncio.get_running_loop().create_task(self._feed(attempt))
        try:
            outcome = await receive_outcome(receiver, attempt.process, self.config.cgroup)
            self._free_slot(attempt)  # the worker is gone: the slot is free before the master hears so
            self._finish(attempt, outcome)
        finally:
            if feed_in is not None:
                async with attempt.feeding:
                    attempt.feed = None
                    feed_in.close()

    def _finish(self, attempt: RunningAttempt, outcome: dict[str, Any], error: str = "") -> None:
        """Report the attempt's end: its worker's ``outcome`` ({} if it had none), or ``error``.
        It leaves ``running`` only if it is still the task's attempt there: a cancelled attempt
        ending after its task's next attempt started here must not take that one's place (the
        heartbeats would stop showing it, and the master's re-sent launch would start it twice)."""
        spec = attempt.spec
        if outcome.get("cache"):
            self._cache_accessed(outcome["cache"]["key"], outcome["cache"]["nbytes"])
        if self.running.get(spec.task_id) is attempt:
            del self.running[spec.task_id]
        if error:
            outcome = {"state": "failed", "failure": "error", "error": error}
        elif attempt.cancelled:
            outcome = {"state": "failed", "failure": "cancelled", "error": "cancelled by the master"}
        update = self._update(
            spec,
            outcome["state"],
            metrics=TaskMetrics(**outcome.get("metrics", {})),
            partition_bytes=tuple(outcome.get("partition_bytes", ())),
            result=outcome.get("result") or {},
            failure=outcome.get("failure"),
            error=outcome.get("error"),
            lost_blocks=tuple(outcome.get("lost_blocks", ())),
            input_reads=outcome.get("input_reads"),
        )
        if update.failure == "data":  # bad input or a workload plugin's error: the traceback, for its author
            log.error("task %s failed for good: %s", spec.task_id, update.error)
        self.finished[(spec.task_id, spec.attempt)] = update
        self._publish_update(update)
        if update.state == "succeeded" and spec.push:  # the slot is free already; the push goes on
            push = self._push(spec.block_id, spec.push, spec.push_rate_bytes_s, spec.task_id, spec.attempt)
            asyncio.get_running_loop().create_task(push)

    async def _push(
        self,
        block: str,
        targets: tuple[PushTarget, ...],
        rate: float | None,
        task_id: str,
        attempt: int,
    ) -> None:
        """Copy a stored block to every push target, then ask the master to commit."""
        blocks = self.config.data_dir / "blocks"
        delivered: dict[str, tuple[PushedPart, ...]] = {}
        failed, errors = [], []
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=None, sock_read=60)) as session:
            results = await asyncio.gather(
                *(
                    push_block(session, blocks, block, t.url, t.partitions, t.token, rate, self.limits)
                    for t in targets
                ),
                return_exceptions=True,
            )
        for target, result in zip(targets, results, strict=True):
            if isinstance(result, BaseException):
                failed.append(target.node_id)
                errors.append(f"{target.node_id}: {result}")
            else:
                delivered[target.node_id] = result
        self._push_delivered(block, task_id, attempt, delivered, failed, "; ".join(errors))

    def _push_delivered(
        self,
        block: str,
        task_id: str,
        attempt: int,
        delivered: dict[str, tuple[PushedPart, ...]],
        failed: list[str],
        error: str,
    ) -> None:
        message = PushDelivered(
            node_id=self.config.node_id,
            task_id=task_id,
            attempt=attempt,
            block=block,
            delivered=delivered,
            failed=tuple(failed),
            error=error[:2000] or None,
        )
        self._report(message)

    async def _aggregate_and_push(self, flush: FlushAggregate) -> None:
        """Pado's partial aggregation: merge the held outputs into one block in a worker
        process (the op's combiner), then push it and ask the master to commit it."""
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
        if outcome["state"] != "succeeded":
            failed = [t.node_id for t in flush.push]
            self._push_delivered(flush.block, flush.block, 0, {}, failed, f"aggregation: {outcome['error']}")
            return
        await self._push(flush.block, flush.push, flush.push_rate_bytes_s, flush.block, 0)

    def _store_inputs(self, message: StoreInputs) -> None:
        """Copy the splits this node holds into its replica blocks, off the loop; the splits are
        marked as being stored at once, so a map launched meanwhile waits for its copy."""
        blocks = self.config.data_dir / "blocks"
        splits = [split for split in message.splits if split.block not in self.storing]  # not redelivered
        locks = [(split.block, hold_storing(blocks, split.block)) for split in splits]
        self.storing.update(block for block, _ in locks)

        async def store() -> None:
            try:
                await asyncio.to_thread(store_replicas, self.config.data_dir, splits)
            except OSError as exc:  # its maps fetch from another holder or read the source
                log.warning("cannot store the input replicas of %s: %s", message.job_id, exc)
            finally:
                for block, fd in locks:
                    release_storing(blocks, block, fd)
                    self.storing.discard(block)

        asyncio.get_running_loop().create_task(store())

    def _cache_accessed(self, key: str, nbytes: int) -> None:
        """A task read ``key`` through the input cache: the LRU learns it and the files it
        no longer keeps (least recently used, or this one if it cannot fit) are deleted."""
        before = {k for k, _ in self.input_cache.entries} | {key}
        self.input_cache, _ = self.input_cache.access(key, nbytes)
        for gone in before - {k for k, _ in self.input_cache.entries}:
            (self.config.data_dir / "cache" / gone).unlink(missing_ok=True)

    def _cached_inputs(self) -> tuple[CachedInput, ...]:
        return tuple(CachedInput(key=k, nbytes=n) for k, n in self.input_cache.entries)

    def _on_block_received(self, block: str, parts: tuple[PushedPart, ...]) -> None:
        self._report(BlockReceived(node_id=self.config.node_id, block=block, parts=parts))

    def _report(self, message: PushDelivered | BlockReceived) -> None:
        payload = self.codec.encode(message)
        self.push_reports[(message.kind, message.block)] = payload
        self.link.publish(self.topics.task_updates(self.config.node_id), payload)

    def _more_inputs(self, message: TaskInputs) -> None:
        """Blocks committed to a running receiver (Pado's incremental receivers): handed to
        its worker, the latest per dependency (each message names all blocks so far)."""
        current = self.running.get(message.task_id)
        if (
            current is None
            or current.spec.attempt != message.attempt
            or message.dependency in current.complete
        ):
            return
        current.unsent[message.dependency] = message
        if current.feed is not None:
            asyncio.get_running_loop().create_task(self._feed(current))

    async def _feed(self, attempt: RunningAttempt) -> None:
        async with attempt.feeding:
            while attempt.unsent and attempt.feed is not None:
                dependency, message = attempt.unsent.popitem()
                if dependency in attempt.complete:
                    continue
                try:  # off the loop: a busy worker may leave the pipe full
                    await asyncio.to_thread(attempt.feed.send, message.model_dump(mode="python"))
                except (OSError, ValueError):  # the worker is gone; its outcome says why
                    return
                if message.last:
                    attempt.complete.add(dependency)

    def _cancel(self, task_id: str, attempt: int) -> None:
        current = self.running.get(task_id)
        if current is not None and current.spec.attempt == attempt:
            _kill(current)

    def _update(self, spec: TaskSpec, state: str, **fields: Any) -> TaskUpdate:
        return TaskUpdate(
            node_id=self.config.node_id,
            task_id=spec.task_id,
            attempt=spec.attempt,
            state=state,  # type: ignore[arg-type]
            cached_inputs=self._cached_inputs(),
            **fields,
        )

    def _publish_update(self, update: TaskUpdate) -> None:
        self.link.publish(self.topics.task_updates(self.config.node_id), self.codec.encode(update))


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
