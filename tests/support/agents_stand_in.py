"""Every node's agent as the master sees it over MQTT, without processes: for driving the
master's scheduling, strategies and commits on a virtual clock.

The master is a real one that was never started (attach mode: the nodes ask for their
names and announce themselves as compose agents do). What it sends to the nodes (launches, cancels,
Pado's flushes and receiver feeds) is taken where the shell would publish it; what the agents would
answer (task outcomes, push receipts and commit requests) goes in through
``Master._on_message``, encoded like the real messages. A task finishes once its inputs
are all there: at launch for an ordinary task, when its last feed arrived for one of
Pado's incremental receivers (so a receiver holds its slot until its producers have
pushed, as it does for real). A final task's output is staged where its upload lands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from master.shell.master import Master
from testbed.wire.protocol import (
    BlockReceived,
    CancelTask,
    Codec,
    FlushAggregate,
    LaunchTask,
    Message,
    NameRequest,
    NodeNamed,
    NodeState,
    PushDelivered,
    PushedPart,
    PushTarget,
    TaskInputs,
    TaskSpec,
    TaskUpdate,
    Topics,
)

TOPICS = Topics("stand-in")


@dataclass
class Attempt:
    spec: TaskSpec
    closed: set[int] = field(default_factory=set)
    """Streamed dependencies whose last feed arrived."""

    @property
    def ready(self) -> bool:
        return set(self.spec.streamed) <= self.closed


STAND_IN_KEY = "a-stand-in-agents-key"


def names_offline(master: Master, sink: Callable[[str, Message], None]) -> None:
    """An offline master (no event loop, no broker) names adopted agents at once, each answer
    going to ``sink(host, answer)``."""

    def answered(topic: str, payload: bytes) -> None:
        answer = Codec().decode(payload)
        assert answer is not None
        sink(Topics.node_of(topic), answer)

    master._spawn = asyncio.run  # type: ignore[method-assign]
    master.link.publish = answered  # type: ignore[method-assign]


@dataclass
class StandInAgents:
    master: Master
    clock: list[float] = field(default_factory=lambda: [0.0])
    running: dict[tuple[str, str, int], Attempt] = field(default_factory=dict)
    """(node, task, attempt) -> the attempt, in launch order."""
    flushes: list[tuple[str, FlushAggregate]] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    """hostname -> the node id the master named it."""

    def __post_init__(self) -> None:
        journal = self.master.journal
        start = journal.t0
        journal.clock = lambda: start + self.clock[0]
        self.master._publish = self._command  # type: ignore[method-assign]
        names_offline(self.master, self._command)

    def announce(self, node_id: str, node_class: str, slots: int, memory_mb: int) -> None:
        """The agent asks for a name (as ``agents.naming``: it must be ``node_id``), then is up."""
        host = f"host-of-{node_id}"
        size = {"slots": slots, "memory_mb": memory_mb}
        request = NameRequest(host=host, node_class=node_class, incarnation="n1", key=STAND_IN_KEY, **size)  # type: ignore[arg-type]
        self.master._on_message(TOPICS.name_requests(host), Codec.encode(request))
        assert self.names.get(host) == node_id, f"{host} was named {self.names.get(host)}, not {node_id}"
        state = NodeState(
            node_id=node_id,
            node_class=node_class,  # type: ignore[arg-type]
            state="up",
            incarnation=f"i-{node_id}",
            session=1,
            host="127.0.0.1",
            port=9,
            slots=slots,
            memory_mb=memory_mb,
        )
        self._answer(node_id, state)

    def _command(self, node_id: str, message: Message) -> None:
        if isinstance(message, NodeNamed):
            self.names[message.host] = message.node_id
        elif isinstance(message, LaunchTask):
            self.running[(node_id, message.task.task_id, message.task.attempt)] = Attempt(message.task)
        elif isinstance(message, CancelTask):
            self.running.pop((node_id, message.task_id, message.attempt), None)
        elif isinstance(message, TaskInputs) and message.last:
            attempt = self.running.get((node_id, message.task_id, message.attempt))
            if attempt is not None:
                attempt.closed.add(message.dependency)
        elif isinstance(message, FlushAggregate):
            self.flushes.append((node_id, message))

    def _answer(self, node_id: str, message: Message) -> None:
        self.master._on_message(TOPICS.state(node_id), Codec.encode(message))

    def step(self, seconds: float = 1.0) -> bool:
        """One scheduling round, then every attempt whose inputs are all there finishes and
        every pending flush is pushed. Whether anything happened."""
        self.clock[0] += seconds
        self.master.schedule_once()
        done = [(key, a) for key, a in self.running.items() if a.ready]
        flushes, self.flushes = self.flushes, []
        for (node_id, _, _), attempt in done:
            del self.running[(node_id, attempt.spec.task_id, attempt.spec.attempt)]
            self._finish(node_id, attempt.spec)
        for node_id, flush in flushes:
            self._push(node_id, flush.block, flush.block, 0, flush.push)
        return bool(done or flushes)

    def _finish(self, node_id: str, spec: TaskSpec) -> None:
        if spec.final:
            staged = self.master.api._staged_path(spec.job_id, spec.index, spec.attempt)
            staged.write_bytes(b"")
            self.master.output_staged(spec.job_id, spec.index, spec.attempt)
        partitions = () if spec.final else (1,) * spec.partitions
        update = TaskUpdate(
            node_id=node_id,
            task_id=spec.task_id,
            attempt=spec.attempt,
            state="succeeded",
            partition_bytes=partitions,
        )
        self._answer(node_id, update)
        if spec.push:
            self._push(node_id, f"{spec.task_id}.a{spec.attempt}", spec.task_id, spec.attempt, spec.push)

    def _push(
        self, node_id: str, block: str, task_id: str, attempt: int, targets: tuple[PushTarget, ...]
    ) -> None:
        """What the pushing agent and its receivers report: each receiver's verified block,
        then the pusher's commit request."""
        delivered = {}
        for target in targets:
            parts = tuple(PushedPart(partition=p, nbytes=1, crc32=p) for p in target.partitions)
            delivered[target.node_id] = parts
            self._answer(target.node_id, BlockReceived(node_id=target.node_id, block=block, parts=parts))
        request = PushDelivered(
            node_id=node_id, task_id=task_id, attempt=attempt, block=block, delivered=delivered
        )
        self._answer(node_id, request)

    def run(self, max_steps: int = 500) -> None:
        """Step until every job has ended, or nothing happens for 30 virtual seconds (a
        stall: Pado's aggregation waits at most a few seconds)."""
        idle = 0
        for _ in range(max_steps):
            if idle >= 30 or not self.master.jobs or self._all_ended():
                return
            idle = 0 if self.step() else idle + 1

    def _all_ended(self) -> bool:
        return all(j.status not in ("waiting", "running") for j in self.master.jobs.values())
