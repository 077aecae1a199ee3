"""A driver for ``MasterCore`` in tests: events in at chosen times, the commands kept.

No broker, no process, no file: the nodes are the driver's answers (``NodeState``,
``TaskUpdate``), their launches read from the ``Send`` commands, and time is
whatever the test says. Every command the core returns is kept in ``log``.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable
from typing import Any

from master.core import commands as cmd
from master.core.events import Begin, Event, FromNode, OutputStaged, ProbeAnswered, Round
from master.core.machine import MasterCore
from testbed.scenario.schema import Scenario
from testbed.settings.resolve import POLICY_FIELDS
from testbed.testing.recording import RecordingShell
from testbed.wire.protocol import (
    BlockReceived,
    FlushAggregate,
    LaunchTask,
    NodeState,
    PushDelivered,
    PushedPart,
    PushTarget,
    TaskInputs,
    TaskSpec,
    TaskUpdate,
)
from tests.support.masters import core_act
from tests.support.settings import settings_of


class Driver(RecordingShell):
    def __init__(self, scenario: Scenario, **options: Any) -> None:
        """``options``: the core's (``attach``, ``start_window``, ``resume``) and any built policy
        replaced by a test's own (``scheduler``, ``strategy``, ``autoscaler``, ``speculator``)."""
        policies = {name: options.pop(name) for name in POLICY_FIELDS if name in options}
        super().__init__(MasterCore(settings_of(scenario, **policies), "core-test", **options))

    def do(self, event: Event, at: float | None = None) -> list[cmd.Command]:
        """Handle ``event`` at ``at`` (default: now); a due Wake runs first, as a shell's timer would."""
        if at is not None:
            self.advance(at)
        return self.handle(event)

    def act(self, operation: Any, *args: Any, at: float | None = None) -> Any:
        """Apply one of the core's operations at ``at`` (default: now) from outside ``handle`` (a
        test reaching into a part), keeping its commands; its result."""
        if at is not None:
            self.advance(at)
        result, out = core_act(self.core, self.now, operation, *args)
        self.execute(out)
        return result

    def boot(self) -> None:
        """Start the cluster, every node announcing itself at once, and begin the run."""
        self.execute(self.core.start(self.now))
        for command in list(self.log):
            if isinstance(command, cmd.StartNode):
                self.do(FromNode(command.node_id, up(command.node_id, command.node_class, self.core)))
        assert any(isinstance(c, cmd.ClusterUp) for c in self.log), "the cluster did not come up"
        if self.core.resume is None:  # time 0 is now: the clock's origin moves by now
            self.do(Begin(self.now))
            self.now = 0.0
        else:  # a resumed run's clock goes on from its crash (the test set now to it)
            self.do(Begin(0.0))
        self.advance(self.now)

    def running(self) -> dict[tuple[str, int], tuple[str, TaskSpec]]:
        """(task, attempt) -> (node, spec) of every launch the core has not seen end."""
        launched: dict[tuple[str, int], tuple[str, TaskSpec]] = {}
        for node in self.core.nodes.values():
            for task_id, launch in node.launches.items():
                launched[(task_id, launch.task.attempt)] = (node.node_id, launch.task)
        return launched

    def finish(
        self, node_id: str, spec: TaskSpec, state: str = "succeeded", **fields: Any
    ) -> list[cmd.Command]:
        """The node reports the attempt's outcome (a final task's output staged first)."""
        out = []
        if spec.final and state == "succeeded":
            out += self.do(OutputStaged(spec.job_id, spec.index, spec.attempt))
        partitions = () if spec.final else (10,) * spec.partitions
        update = TaskUpdate(
            node_id=node_id,
            task_id=spec.task_id,
            attempt=spec.attempt,
            state=state,  # type: ignore[arg-type]
            partition_bytes=partitions if state == "succeeded" else (),
            **fields,
        )
        return out + self.do(FromNode(node_id, update))

    def push(self, node_id: str, spec: TaskSpec) -> list[cmd.Command]:
        """What a pushing agent and its receivers report after the attempt's success (Pado):
        each receiver's verified block, then the pusher's commit request."""
        return self.push_block(
            node_id, f"{spec.task_id}.a{spec.attempt}", spec.task_id, spec.attempt, spec.push
        )

    def push_block(
        self, node_id: str, block: str, task_id: str, attempt: int, targets: tuple[PushTarget, ...]
    ) -> list[cmd.Command]:
        out: list[cmd.Command] = []
        delivered = {}
        for target in targets:
            parts = tuple(PushedPart(partition=p, nbytes=1, crc32=p) for p in target.partitions)
            delivered[target.node_id] = parts
            received = BlockReceived(node_id=target.node_id, block=block, parts=parts)
            out += self.do(FromNode(target.node_id, received))
        request = PushDelivered(
            node_id=node_id, task_id=task_id, attempt=attempt, block=block, delivered=delivered
        )
        return out + self.do(FromNode(node_id, request))

    def ready(self, spec: TaskSpec) -> bool:
        """Whether the attempt has every streamed input it waits for (Pado's receivers)."""
        closed = {
            m.dependency
            for c in self.log
            if isinstance(c, cmd.Send)
            and isinstance(m := c.message, TaskInputs)
            and (m.task_id, m.attempt) == (spec.task_id, spec.attempt)
            and m.last
        }
        return set(spec.streamed) <= closed

    def run_to_end(self, limit: int = 500) -> None:
        """Finish every running task that has its inputs, pushing what it pushes, round after
        round, until nothing runs."""
        flushed = 0
        for _ in range(limit):
            self.advance(self.now + 0.5)
            self.do(Round())
            launched = [(n, s) for n, s in self.running().values() if self.ready(s)]
            flushes = [(c.node_id, c.message) for c in self.log if isinstance(c, cmd.Send)]
            flushes = [(n, m) for n, m in flushes if isinstance(m, FlushAggregate)][flushed:]
            flushed += len(flushes)
            if not self.running() and not flushes:
                return
            for node_id, spec in launched:
                self.finish(node_id, spec)
                if spec.push:
                    self.push(node_id, spec)
            for node_id, flush in flushes:
                self.push_block(node_id, flush.block, flush.block, 0, flush.push)
        raise AssertionError("the run did not settle")

    def events(self, kind: str) -> list[dict[str, Any]]:
        return self.events_of(self.log, kind)

    @staticmethod
    def events_of(commands: Iterable[cmd.Command], kind: str) -> list[dict[str, Any]]:
        return [c.fields for c in commands if isinstance(c, cmd.Journal) and c.kind == kind]


def up(node_id: str, node_class: str, core: MasterCore, session: int = 1) -> NodeState:
    spec = core.settings.cluster[node_class]
    return NodeState(
        node_id=node_id,
        node_class=spec.kind,  # what an agent announces: its class's kind
        state="up",
        incarnation=f"i-{node_id}",
        session=session,
        host="127.0.0.1",
        port=1024 + zlib.crc32(node_id.encode()) % 50000,  # a URL of its own
        slots=spec.slots,
        memory_mb=spec.memory_mb,
    )


def sends(commands: Iterable[cmd.Command], kind: type) -> list[tuple[str, Any]]:
    return [
        (c.node_id, c.message) for c in commands if isinstance(c, cmd.Send) and isinstance(c.message, kind)
    ]


def launches(commands: Iterable[cmd.Command]) -> list[tuple[str, TaskSpec]]:
    return [(node_id, message.task) for node_id, message in sends(commands, LaunchTask)]


def lose(driver: Driver, node_id: str) -> list[cmd.Command]:
    """The node's Last Will (after an eviction: it is lost at once), else its agent refusing
    the probe the Will causes: it crashed."""
    core = driver.core
    will = up(node_id, core.nodes[node_id].node_class, core).model_copy(update={"state": "lost"})
    out = driver.do(FromNode(node_id, will))
    probes = [c for c in out if isinstance(c, cmd.Probe)]
    if not probes:
        return out
    return out + driver.do(ProbeAnswered(node_id, "will", "refused", probes[0].session))
