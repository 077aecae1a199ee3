"""One block's push on the simulator's clock (Pado's pushes, spark-checkpoint's copies): the
block's partitions copied to every target at once, as the real agent does (one upload per
target, each at most ``rate`` bytes/s), all of them on the sender's NIC link and each on its
receiver's; each receiver's agent core reports its verified copy (``BlockReceived``), then the sender's asks
the master to commit (``PushDelivered``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from agents.core import Action, BlockArrived, PushDone
from master.event_heap import EventHeap
from master.execution_model import ExecutionModel
from master.sim.clock import DELIVER
from master.sim.nodes import ModelNode
from testbed.wire.protocol import PushedPart, PushTarget


class Agents(Protocol):
    """What a push uses of ``agents.ModelAgents``."""

    nodes: dict[str, ModelNode]
    model: ExecutionModel
    heap: EventHeap
    moved: int
    """Bumped whenever a node gains or loses a block (a reader's holders are then looked up again)."""

    def act(self, node: ModelNode, actions: list[Action]) -> None:
        """The model carries out what the node's core answered (its reports reach the master)."""

    def agent_work(self, node: ModelNode, mb_cpu_s: float, done: Callable[[], None]) -> None: ...


class Push:
    """The copies of ``block`` from ``node``: each lands (received, or failed) after its link
    time and the sender's CPU for the uploads, then its receiver's CPU for the copy."""

    def __init__(
        self,
        agents: Agents,
        node: ModelNode,
        block: str,
        origin: tuple[str, int],
        targets: tuple[PushTarget, ...],
    ) -> None:
        self.agents, self.node, self.block = agents, node, block
        self.task_id, self.attempt = origin
        parts = node.blocks.get(block, ())
        self.copies = [
            (
                target,
                tuple(
                    PushedPart(partition=p, nbytes=parts[p] if p < len(parts) else 0, crc32=0)
                    for p in target.partitions
                ),
            )
            for target in targets
        ]
        self.sizes = [sum(part.nbytes for part in pushed) for _, pushed in self.copies]
        self.receivers = [agents.nodes.get(target.node_id) for target, _ in self.copies]
        self.delivered: dict[str, tuple[PushedPart, ...]] = {}
        self.failed: list[str] = []
        self.left = len(self.copies)
        """Copies not yet landed (received, or failed)."""
        self.waiting: list[int] = []
        """Copies through their links before the sender's CPU for the uploads is."""
        self.sent = False

    def start(self, rate: float | None) -> None:
        agents, node = self.agents, self.node
        links = [(r.links, r.node_class) if r is not None and r.alive else None for r in self.receivers]
        ends = agents.model.push_s(self.sizes, agents.heap.now, (node.links, node.node_class), links, rate)
        if not self.copies:
            agents.heap.after(0.0, DELIVER, self._request)
            return
        for i, end in enumerate(ends):
            agents.heap.after(end, DELIVER, lambda i=i: self._through(i))
        agents.agent_work(node, sum(self.sizes) * agents.model.spec.copy_send_cpu_s_per_mb, self._uploaded)

    def _through(self, i: int) -> None:
        """Copy ``i``'s link time is over."""
        if self.sent:
            self._receive(i)
        else:
            self.waiting.append(i)

    def _uploaded(self) -> None:
        self.sent = True
        for i in self.waiting:
            self._receive(i)

    def _receive(self, i: int) -> None:
        """Copy ``i`` is sent whole: its receiver stages, checks and commits it."""
        receiver = self.receivers[i]
        if receiver is None or not receiver.alive or not self.node.alive:
            self._land(i)
        else:
            cpu = self.sizes[i] * self.agents.model.spec.copy_receive_cpu_s_per_mb
            self.agents.agent_work(receiver, cpu, lambda: self._land(i))

    def _land(self, i: int) -> None:
        self._arrive(*self.copies[i])
        self.left -= 1
        if not self.left:
            self.agents.heap.after(0.0, DELIVER, self._request)

    def _arrive(self, target: PushTarget, parts: tuple[PushedPart, ...]) -> None:
        agents = self.agents
        receiver = agents.nodes.get(target.node_id)
        if not self.node.alive:
            return
        if receiver is None or not receiver.alive:
            self.failed.append(target.node_id)
            return
        held = dict(enumerate(receiver.blocks.get(self.block, ())))
        held.update((part.partition, part.nbytes) for part in parts)
        receiver.blocks[self.block] = tuple(held.get(p, 0) for p in range(max(held) + 1))
        agents.moved += 1
        self.delivered[target.node_id] = parts
        agents.act(receiver, receiver.core.handle(BlockArrived(self.block, parts)))

    def _request(self) -> None:
        """The sender asks the master to commit what landed."""
        node = self.node
        if not node.alive:
            return
        error = f"receivers gone: {', '.join(self.failed)}" if self.failed else ""
        delivered, failed = dict(self.delivered), tuple(self.failed)
        done = PushDone(self.block, self.task_id, self.attempt, delivered, failed, error)
        self.agents.act(node, node.core.handle(done))
