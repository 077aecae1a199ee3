"""Every node's agent as the master sees it over MQTT, without processes: for driving the
master's scheduling, strategies and commits on a virtual clock.

The master is a real one that was never started (attach mode: the nodes ask for their
names and announce themselves as compose agents do). What it sends to the nodes (launches, cancels,
Pado's flushes and receiver feeds) is taken where the shell would publish it and handed to each
node's agent core (``agents.core.AgentCore``, the real agent's decisions: which launch runs, what
a cancel kills, which outcome a re-sent launch repeats, which feed and flush count); what the
core answers (task updates, push receipts and commit requests) goes in through
``Master._on_message``, encoded like the real messages. A task finishes once its inputs
are all there: at the next step for an ordinary task, once its last feed arrived for one of
Pado's incremental receivers (so a receiver holds its slot until its producers have
pushed, as it does for real). A final task's output is staged where its upload lands.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agents import core
from agents.core import (
    Action,
    AgentCore,
    AggregateDone,
    BlockArrived,
    InputsFed,
    PushDone,
    ReplicasStored,
    WorkerFinished,
    WorkerStarted,
)
from master.shell.master import Master
from testbed.wire.protocol import (
    Codec,
    FlushAggregate,
    Message,
    NameRequest,
    NodeNamed,
    NodeState,
    PushedPart,
    TaskSpec,
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
    """(node, task, attempt) -> the attempt its core started and has not seen end, in launch order."""
    flushes: list[tuple[str, FlushAggregate]] = field(default_factory=list)
    """The flushes the cores asked merged (``Aggregate``), pushed at the next step."""
    cores: dict[str, AgentCore] = field(default_factory=dict)
    """Each announced node's agent core."""
    states: dict[str, NodeState] = field(default_factory=dict)
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
        self.cores[node_id] = AgentCore(node_id, state.incarnation)
        self.states[node_id] = state
        self._answer(node_id, state)

    def _command(self, node_id: str, message: Message) -> None:
        if isinstance(message, NodeNamed):
            self.names[message.host] = message.node_id
        elif node_id in self.cores:
            self._handle(node_id, message)

    def _handle(self, node_id: str, event: core.Input) -> None:
        """Hand ``event`` to the node's core and carry out what it answers."""
        actions: list[Action] = self.cores[node_id].handle(event)
        for action in actions:
            _ACTIONS[type(action)](self, node_id, action)

    def _start_worker(self, node_id: str, spec: TaskSpec) -> None:
        self.running[(node_id, spec.task_id, spec.attempt)] = Attempt(spec)
        self._handle(node_id, WorkerStarted(spec.task_id, spec.attempt))

    def _kill(self, node_id: str, task_id: str, attempt: int) -> None:
        """The worker is gone at once: the core reports it cancelled."""
        if self.running.pop((node_id, task_id, attempt), None) is not None:
            self._handle(node_id, WorkerFinished(task_id, attempt, {}))

    def _feed(self, node_id: str, action: core.FeedInputs) -> None:
        attempt = self.running.get((node_id, action.task_id, action.attempt))
        if attempt is not None and action.inputs.last:
            attempt.closed.add(action.inputs.dependency)
        self._handle(node_id, InputsFed(action.task_id, action.attempt, action.inputs, attempt is not None))

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
            self._handle(node_id, AggregateDone(flush, {"state": "succeeded"}))
        return bool(done or flushes)

    def _finish(self, node_id: str, spec: TaskSpec) -> None:
        """The worker succeeded: its core reports it, then pushes its block (``Push``)."""
        if spec.final:
            staged = self.master.api._staged_path(spec.job_id, spec.index, spec.attempt)
            staged.write_bytes(b"")
            self.master.output_staged(spec.job_id, spec.index, spec.attempt)
        partitions = () if spec.final else (1,) * spec.partitions
        outcome = {"state": "succeeded", "partition_bytes": partitions}
        self._handle(node_id, WorkerFinished(spec.task_id, spec.attempt, outcome))

    def _push(self, node_id: str, push: core.Push) -> None:
        """The core's ``Push``: each receiver's core reports its verified block, then the
        pusher's its commit request."""
        delivered = {}
        for target in push.targets:
            parts = tuple(PushedPart(partition=p, nbytes=1, crc32=p) for p in target.partitions)
            delivered[target.node_id] = parts
            if target.node_id in self.cores:
                self._handle(target.node_id, BlockArrived(push.block, parts))
        self._handle(node_id, PushDone(push.block, push.task_id, push.attempt, delivered, (), ""))

    def _announce_state(self, node_id: str, action: core.AnnounceState) -> None:
        self._answer(node_id, self.states[node_id].model_copy(update={"state": action.state}))

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


def _ignore(agents: StandInAgents, node_id: str, action: Any) -> None:
    """No cache files, no agent log, no heartbeats (the master's offline: it watches none)."""


_ACTIONS: dict[type, Callable[[StandInAgents, str, Any], None]] = {
    core.StartWorker: lambda agents, node_id, a: agents._start_worker(node_id, a.spec),
    core.Kill: lambda agents, node_id, a: agents._kill(node_id, a.task_id, a.attempt),
    core.FeedInputs: StandInAgents._feed,
    core.PublishUpdate: lambda agents, node_id, a: agents._answer(node_id, a.update),
    core.PublishReport: lambda agents, node_id, a: agents._answer(node_id, a.report),
    core.Push: StandInAgents._push,
    core.Aggregate: lambda agents, node_id, a: agents.flushes.append((node_id, a.flush)),
    core.StoreReplicas: lambda agents, node_id, a: agents._handle(
        node_id, ReplicasStored(tuple(split.block for split in a.splits))
    ),
    core.AnnounceState: StandInAgents._announce_state,
    core.DeleteCached: _ignore,
    core.Log: _ignore,
    core.SendHeartbeat: _ignore,
}
"""How the stand-in carries out each action of a node's core."""
