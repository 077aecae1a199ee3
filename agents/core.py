"""The agent's decisions, with no I/O: ``AgentCore.handle(input) -> list[Action]``.

As ``master.core`` is for the master, this is the whole node agent as a state machine; the
shell (``agents.agent``) turns what happens into inputs (the decoded command messages, and
the results of its I/O: a worker started or ended, a feed written, a push made, a block
received, replicas stored, a heartbeat due) and carries out the actions it answers with. It
holds each task's current attempt, the idempotence of a launch by (task, attempt), cancel,
the feeding of a running receiver's inputs, the flush of aggregates, the push reports that a
``Resync`` repeats, the input cache's LRU accounting and what each heartbeat lists. It imports
no asyncio, socket, process or logging, and reads no file and no clock (lint-imports): no
decision of the agent depends on the time, so no input carries it; a heartbeat is an input,
``HeartbeatDue``, which the shell's timer feeds.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from testbed.node.lru import LruCache
from testbed.wire.protocol import (
    INLINE_NOOP,
    BlockReceived,
    CachedInput,
    CancelTask,
    Codec,
    EvictionNotice,
    FlushAggregate,
    Heartbeat,
    InputSplit,
    LaunchTask,
    Message,
    PushDelivered,
    PushedPart,
    PushTarget,
    Resync,
    StoreInputs,
    TaskInputs,
    TaskMetrics,
    TaskSpec,
    TaskUpdate,
)

# ------------------------------------------------------------------ inputs: what the shell saw


@dataclass(frozen=True)
class WorkerStarted:
    """The attempt's worker process runs (its input feed, if any, is open)."""

    task_id: str
    attempt: int


@dataclass(frozen=True)
class WorkerFinished:
    """The attempt's worker ended with ``outcome`` ({} if it has none: never started), or could
    not start (``error``)."""

    task_id: str
    attempt: int
    outcome: dict[str, Any]
    error: str = ""


@dataclass(frozen=True)
class AgentFailed:
    """Running the attempt raised in the agent itself (``error``)."""

    task_id: str
    attempt: int
    error: str


@dataclass(frozen=True)
class InputsFed:
    """One ``FeedInputs`` was written to the worker's feed (``sent``), or the feed is gone."""

    task_id: str
    attempt: int
    inputs: TaskInputs
    sent: bool


@dataclass(frozen=True)
class PushDone:
    """A ``Push`` ended: the parts each target stored, and the targets it could not reach."""

    block: str
    task_id: str
    attempt: int
    delivered: dict[str, tuple[PushedPart, ...]]
    failed: tuple[str, ...]
    error: str


@dataclass(frozen=True)
class AggregateDone:
    """The combining worker of an ``Aggregate`` ended with ``outcome``."""

    flush: FlushAggregate
    outcome: dict[str, Any]


@dataclass(frozen=True)
class BlockArrived:
    """Another node pushed ``parts`` of ``block`` here, stored whole (the shuffle server)."""

    block: str
    parts: tuple[PushedPart, ...]


@dataclass(frozen=True)
class ReplicasStored:
    """A ``StoreReplicas`` ended (stored or not): its blocks are no longer being stored."""

    blocks: tuple[str, ...]


@dataclass(frozen=True)
class HeartbeatDue:
    """The heartbeat timer: ``progress`` is each running attempt's score its worker wrote."""

    progress: dict[str, float]


Input = (
    Message | WorkerStarted | WorkerFinished | AgentFailed | InputsFed | PushDone | AggregateDone
    | BlockArrived | ReplicasStored | HeartbeatDue
)

# ------------------------------------------------------------------ actions: what the shell does


@dataclass(frozen=True)
class StartWorker:
    spec: TaskSpec


@dataclass(frozen=True)
class Kill:
    """Kill the attempt's worker, or, if it is still starting, do not let it run."""

    task_id: str
    attempt: int


@dataclass(frozen=True)
class FeedInputs:
    """Write ``inputs`` to the attempt's worker feed, then say so (``InputsFed``)."""

    task_id: str
    attempt: int
    inputs: TaskInputs


@dataclass(frozen=True)
class PublishUpdate:
    update: TaskUpdate


@dataclass(frozen=True)
class PublishReport:
    report: PushDelivered | BlockReceived


@dataclass(frozen=True)
class Push:
    """Copy the stored ``block`` to every target, then say how it went (``PushDone``)."""

    block: str
    targets: tuple[PushTarget, ...]
    rate: float | None
    task_id: str
    attempt: int


@dataclass(frozen=True)
class Aggregate:
    """Merge the flush's held outputs in a worker, then say how it went (``AggregateDone``)."""

    flush: FlushAggregate


@dataclass(frozen=True)
class StoreReplicas:
    """Copy these splits into replica blocks (marked as being stored until ``ReplicasStored``)."""

    job_id: str
    splits: tuple[InputSplit, ...]


@dataclass(frozen=True)
class DeleteCached:
    """Delete the input cache's files of these keys: the LRU no longer keeps them."""

    keys: tuple[str, ...]


@dataclass(frozen=True)
class AnnounceState:
    state: Literal["up", "draining"]


@dataclass(frozen=True)
class SendHeartbeat:
    beat: Heartbeat


@dataclass(frozen=True)
class Log:
    level: Literal["warning", "error"]
    text: str


Action = (
    StartWorker | Kill | FeedInputs | PublishUpdate | PublishReport | Push | Aggregate | StoreReplicas
    | DeleteCached | AnnounceState | SendHeartbeat | Log
)


@dataclass
class Attempt:
    """A task attempt whose worker has not ended (started or still to start)."""

    spec: TaskSpec
    cancelled: bool = False
    started: bool = False
    """Its worker runs; a streamed dependency's inputs are fed to it from then on."""
    unsent: dict[int, TaskInputs] = field(default_factory=dict)
    """The latest TaskInputs of each streamed dependency not yet written to the feed."""
    complete: set[int] = field(default_factory=set)
    """Streamed dependencies whose last TaskInputs the worker has (later ones are dropped)."""
    feeding: bool = False
    """A ``FeedInputs`` is under way (one at a time, the latest per dependency)."""

    @property
    def key(self) -> tuple[str, int]:
        return (self.spec.task_id, self.spec.attempt)


class AgentCore:
    """One node agent's state and decisions; see the module's docstring."""

    def __init__(self, node_id: str, incarnation: str) -> None:
        self.node_id = node_id
        self.incarnation = incarnation
        self.running: dict[str, Attempt] = {}
        """Each task's current attempt here, in launch order (what the heartbeats list)."""
        self.live: dict[tuple[str, int], Attempt] = {}
        """Every attempt whose worker has not ended, current or not (a cancelled one may end late)."""
        self.finished: dict[tuple[str, int], bytes] = {}
        """Each ended attempt's outcome, msgpack-encoded as on the wire (a launch sent again
        repeats it): a few hundred bytes each instead of a pydantic object's kilobytes, as the
        simulator's model agents keep a million of them."""
        self._codec = Codec()
        self.flushed: set[str] = set()
        """Aggregate blocks already being made (a redelivered flush is ignored)."""
        self.push_reports: dict[tuple[str, str], bytes] = {}
        """(kind, block) -> the latest push report made, repeated on ``Resync``; msgpack-encoded
        as ``finished`` is, for the same reason: kept for the run, as a resync repeats them all."""
        self.input_cache = LruCache(0)
        """Pado's task input cache (section 3.2.7): the files under ``cache/``, bounded in bytes."""
        self.storing: set[str] = set()
        """Input replica blocks being copied (``StoreInputs``)."""
        self.state: Literal["up", "draining"] = "up"
        self.beats = 0

    def handle(self, event: Input) -> list[Action]:
        handler = _HANDLERS.get(type(event))
        return [] if handler is None else handler(self, event)

    # ------------------------------------------------------------------ commands

    def _launch(self, message: LaunchTask) -> list[Action]:
        spec = message.task
        key = (spec.task_id, spec.attempt)
        if key in self.finished:  # a redelivered launch: repeat the outcome, run nothing
            return [PublishUpdate(self._codec.decode(self.finished[key]))]
        current = self.running.get(spec.task_id)
        if key in self.live or (current is not None and current.spec.attempt >= spec.attempt):
            return []
        if spec.op == INLINE_NOOP:  # an empty task: the control plane's own cost, measured alone
            update = self._update(spec, "succeeded")
            self.finished[key] = Codec.encode(update)
            return [PublishUpdate(update)]
        if spec.input_cache_mb:
            self.input_cache = replace(self.input_cache, capacity_bytes=spec.input_cache_mb << 20)
        attempt = self.running[spec.task_id] = self.live[key] = Attempt(spec)
        return [PublishUpdate(self._update(spec, "running")), StartWorker(attempt.spec)]

    def _cancel(self, message: CancelTask) -> list[Action]:
        """The named attempt's worker is killed, whether or not a later attempt of its task
        started here since: a worker left to run past its cancel holds a slot, cores and memory
        the master has given to other tasks."""
        attempt = self.live.get((message.task_id, message.attempt))
        if attempt is None:
            return []
        attempt.cancelled = True
        return [Kill(message.task_id, message.attempt)]

    def _flush(self, message: FlushAggregate) -> list[Action]:
        if message.block in self.flushed:
            return []
        self.flushed.add(message.block)
        return [Aggregate(message)]

    def _store_inputs(self, message: StoreInputs) -> list[Action]:
        """The splits not already being stored (a redelivery) are marked at once, so that a map
        launched meanwhile waits for their copy."""
        splits = tuple(split for split in message.splits if split.block not in self.storing)
        self.storing.update(split.block for split in splits)
        return [StoreReplicas(message.job_id, splits)]

    def _resync(self, _: Resync) -> list[Action]:
        return [PublishReport(self._codec.decode(report)) for report in self.push_reports.values()]

    def _eviction_notice(self, message: EvictionNotice) -> list[Action]:
        self.state = "draining"
        return [Log("warning", f"eviction notice: {message.seconds:.1f}s left"), AnnounceState("draining")]

    # ------------------------------------------------------------------ workers

    def _worker_started(self, event: WorkerStarted) -> list[Action]:
        attempt = self.live.get((event.task_id, event.attempt))
        if attempt is None:
            return []
        actions: list[Action] = [Kill(event.task_id, event.attempt)] if attempt.cancelled else []
        if attempt.spec.streamed:
            attempt.started = True
            actions += self._next_feed(attempt)
        return actions

    def _worker_finished(self, event: WorkerFinished) -> list[Action]:
        attempt = self.live.pop((event.task_id, event.attempt), None)
        return [] if attempt is None else self._finish(attempt, event.outcome, event.error)

    def _agent_failed(self, event: AgentFailed) -> list[Action]:
        attempt = self.live.get((event.task_id, event.attempt))
        if attempt is None or self.running.get(event.task_id) is not attempt:
            return []
        del self.live[attempt.key]
        return self._finish(attempt, {}, event.error)

    def _finish(self, attempt: Attempt, outcome: dict[str, Any], error: str) -> list[Action]:
        """Report the attempt's end: its worker's ``outcome`` ({} if it had none), or ``error``.
        It leaves ``running`` only if it is still the task's attempt there: a cancelled attempt
        ending after its task's next attempt started here must not take that one's place (the
        heartbeats would stop showing it, and the master's re-sent launch would start it twice)."""
        spec = attempt.spec
        actions: list[Action] = []
        if outcome.get("cache"):
            actions += self._cache_accessed(outcome["cache"]["key"], outcome["cache"]["nbytes"])
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
            actions.append(Log("error", f"task {spec.task_id} failed for good: {update.error}"))
        self.finished[attempt.key] = Codec.encode(update)
        actions.append(PublishUpdate(update))
        if update.state == "succeeded" and spec.push:  # the slot is free already; the push goes on
            actions.append(Push(spec.block_id, spec.push, spec.push_rate_bytes_s, spec.task_id, spec.attempt))
        return actions

    # ------------------------------------------------------------------ a receiver's inputs

    def _more_inputs(self, message: TaskInputs) -> list[Action]:
        """Blocks committed to a running receiver (Pado's incremental receivers): handed to
        its worker, the latest per dependency (each message names all blocks so far)."""
        current = self.running.get(message.task_id)
        if (
            current is None
            or current.spec.attempt != message.attempt
            or message.dependency in current.complete
        ):
            return []
        current.unsent[message.dependency] = message
        return self._next_feed(current)

    def _inputs_fed(self, event: InputsFed) -> list[Action]:
        attempt = self.live.get((event.task_id, event.attempt))
        if attempt is None:
            return []
        attempt.feeding = False
        if not event.sent:  # the worker is gone; its outcome says why
            attempt.started = False
            return []
        if event.inputs.last:
            attempt.complete.add(event.inputs.dependency)
        return self._next_feed(attempt)

    def _next_feed(self, attempt: Attempt) -> list[Action]:
        """The next inputs to write to a running worker's feed, one write at a time: the most
        recently arrived dependency's latest message, skipping a dependency already complete."""
        if attempt.feeding or not attempt.started:
            return []
        while attempt.unsent:
            dependency, message = attempt.unsent.popitem()
            if dependency not in attempt.complete:
                attempt.feeding = True
                return [FeedInputs(attempt.spec.task_id, attempt.spec.attempt, message)]
        return []

    # ------------------------------------------------------------------ pushes and blocks

    def _push_done(self, event: PushDone) -> list[Action]:
        message = PushDelivered(
            node_id=self.node_id,
            task_id=event.task_id,
            attempt=event.attempt,
            block=event.block,
            delivered=event.delivered,
            failed=event.failed,
            error=event.error[:2000] or None,
        )
        return self._report(message)

    def _aggregate_done(self, event: AggregateDone) -> list[Action]:
        """Pado's partial aggregation: the merged block is pushed (then committed through the
        master); a failed merge is reported as a push that reached no target."""
        flush, outcome = event.flush, event.outcome
        if outcome["state"] != "succeeded":
            failed = tuple(t.node_id for t in flush.push)
            error = f"aggregation: {outcome['error']}"
            return self._push_done(PushDone(flush.block, flush.block, 0, {}, failed, error))
        return [Push(flush.block, flush.push, flush.push_rate_bytes_s, flush.block, 0)]

    def _block_arrived(self, event: BlockArrived) -> list[Action]:
        return self._report(BlockReceived(node_id=self.node_id, block=event.block, parts=event.parts))

    def _report(self, message: PushDelivered | BlockReceived) -> list[Action]:
        self.push_reports[(message.kind, message.block)] = Codec.encode(message)
        return [PublishReport(message)]

    def _replicas_stored(self, event: ReplicasStored) -> list[Action]:
        self.storing.difference_update(event.blocks)
        return []

    # ------------------------------------------------------------------ cache and heartbeats

    def _cache_accessed(self, key: str, nbytes: int) -> list[Action]:
        """A task read ``key`` through the input cache: the LRU learns it and the files it
        no longer keeps (least recently used, or this one if it cannot fit) are deleted."""
        before = {k for k, _ in self.input_cache.entries} | {key}
        self.input_cache, _ = self.input_cache.access(key, nbytes)
        gone = before - {k for k, _ in self.input_cache.entries}
        return [DeleteCached(tuple(sorted(gone)))] if gone else []

    def cached_inputs(self) -> tuple[CachedInput, ...]:
        return tuple(CachedInput(key=k, nbytes=n) for k, n in self.input_cache.entries)

    def _heartbeat(self, event: HeartbeatDue) -> list[Action]:
        self.beats += 1
        beat = Heartbeat(
            node_id=self.node_id,
            incarnation=self.incarnation,
            seq=self.beats,
            running=tuple(self.running),
            attempts={task_id: a.spec.attempt for task_id, a in self.running.items()},
            cached_inputs=self.cached_inputs(),
            progress=event.progress,
        )
        return [SendHeartbeat(beat)]

    def _update(self, spec: TaskSpec, state: str, **fields: Any) -> TaskUpdate:
        return TaskUpdate(
            node_id=self.node_id,
            task_id=spec.task_id,
            attempt=spec.attempt,
            state=state,  # type: ignore[arg-type]
            cached_inputs=self.cached_inputs(),
            **fields,
        )


_HANDLERS: dict[type, Any] = {
    LaunchTask: AgentCore._launch,
    CancelTask: AgentCore._cancel,
    FlushAggregate: AgentCore._flush,
    TaskInputs: AgentCore._more_inputs,
    StoreInputs: AgentCore._store_inputs,
    Resync: AgentCore._resync,
    EvictionNotice: AgentCore._eviction_notice,
    WorkerStarted: AgentCore._worker_started,
    WorkerFinished: AgentCore._worker_finished,
    AgentFailed: AgentCore._agent_failed,
    InputsFed: AgentCore._inputs_fed,
    PushDone: AgentCore._push_done,
    AggregateDone: AgentCore._aggregate_done,
    BlockArrived: AgentCore._block_arrived,
    ReplicasStored: AgentCore._replicas_stored,
    HeartbeatDue: AgentCore._heartbeat,
}
"""Each input's handler: every input of ``Input`` but the messages a master never sends an agent."""
