"""``scheduler: fifo``: jobs in submission order, each task on the first node with room.

A task goes to a node with a free slot and its full ideal memory, preferring
its preferred nodes (data locality), then the node with the most free slots
(ties: the greatest node id).

A round places from the master's own index of the nodes with a free slot
(``ClusterSnapshot.free``, kept from round to round: :class:`KeptIndex`), in O(log nodes)
per task where the node with the most free slots fits (the usual case), with nothing built
over every node. A snapshot without it (made by hand) costs O(nodes with a free slot) to
set up, then O(log nodes) per task (:class:`FreeIndex`). Both take the same decisions
(tests/policies/test_fifo_index.py).
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Iterable

from pydantic import BaseModel

from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    Decision,
    FreeNodes,
    NodeView,
    PendingTask,
    Scheduler,
)

_NONE = -math.inf
"""A leaf whose node is not in the tree's bucket (or has left it)."""


class FifoScheduler(Scheduler):
    class Options(BaseModel, extra="forbid"):
        """``policy.options.fifo``: it takes none."""

    needs_all_pending = False
    """It places tasks in order until the cluster is full: the head of the queue is enough."""
    needs_node_views = False
    """It places from the round's free-node index (``ClusterSnapshot.free``) alone."""
    needs_exposure = False

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        index: FreeIndex | KeptIndex
        if snapshot.free is not None:  # the master's round: its nodes may not be in the snapshot
            index = KeptIndex(snapshot.free)
        else:
            index = FreeIndex(n for n in snapshot.nodes if not n.draining and n.free_slots > 0)
        decisions: list[Decision] = []
        for job in sorted(snapshot.jobs, key=lambda j: (j.submitted, j.job_id)):
            for task in job.pending:
                if index.slots_left == 0:  # the cluster is full: nothing else can start this round
                    return decisions
                node_id = index.pick(task)
                if node_id is None:
                    continue
                index.take(node_id, task.ideal_memory_mb)
                decisions.append(Assign(task.task_id, node_id, task.ideal_memory_mb))
        return decisions


class _ClassNodes:
    """One node class's nodes in id order, with a max-tree of free memory per number of free
    slots (built on first use): the greatest id in a bucket with enough memory in O(log n)."""

    def __init__(self, nodes: list[NodeView]) -> None:
        self.ids = sorted(n.node_id for n in nodes)
        self.position = {node_id: i for i, node_id in enumerate(self.ids)}
        by_id = {n.node_id: n for n in nodes}
        self.slots = [by_id[i].free_slots for i in self.ids]
        self.memory = [by_id[i].free_memory_mb for i in self.ids]
        self.count: dict[int, int] = {}
        for slots in self.slots:
            self.count[slots] = self.count.get(slots, 0) + 1
        self.size = 1 << max(0, len(self.ids) - 1).bit_length()
        self._trees: dict[int, list[float]] = {}

    def best(self, memory_mb: int, excluded: frozenset[str], at_least: int) -> tuple[int, str] | None:
        """(free slots, id) of the node with the most free slots, then the greatest id, among
        those with ``memory_mb`` free, not excluded, and at least ``at_least`` free slots."""
        for slots in sorted((s for s, n in self.count.items() if n and s >= at_least), reverse=True):
            tree = self._tree(slots)
            found = _rightmost(tree, self.size, self.size, memory_mb)  # the padding leaves never fit
            while found >= 0 and self.ids[found] in excluded:
                found = _rightmost(tree, self.size, found, memory_mb)
            if found >= 0:
                return slots, self.ids[found]
        return None

    def take(self, position: int, memory_mb: int) -> None:
        slots = self.slots[position]
        self.slots[position] = slots - 1
        self.memory[position] -= memory_mb
        self.count[slots] -= 1
        self.count[slots - 1] = self.count.get(slots - 1, 0) + 1
        if slots in self._trees:
            _set(self._trees[slots], self.size + position, _NONE)
        if slots - 1 in self._trees:
            _set(self._trees[slots - 1], self.size + position, self.memory[position])

    def _tree(self, slots: int) -> list[float]:
        tree = self._trees.get(slots)
        if tree is None:
            tree = [_NONE] * (2 * self.size)
            for i, (free, memory) in enumerate(zip(self.slots, self.memory, strict=True)):
                if free == slots:
                    tree[self.size + i] = memory
            for k in range(self.size - 1, 0, -1):
                tree[k] = max(tree[2 * k], tree[2 * k + 1])
            self._trees[slots] = tree
        return tree


class FreeIndex:
    """The round's nodes with a free slot: what is left of each, and FIFO's pick."""

    def __init__(self, nodes: Iterable[NodeView]) -> None:
        by_class: dict[str, list[NodeView]] = {}
        for node in nodes:
            by_class.setdefault(node.node_class, []).append(node)
        self._classes = {c: _ClassNodes(members) for c, members in by_class.items()}
        self._home = {i: c for c, members in self._classes.items() for i in members.ids}
        self.slots_left = sum(sum(c.slots) for c in self._classes.values())

    def pick(self, task: PendingTask) -> str | None:
        """A preferred node that fits, else any node that fits: the most free slots, then the
        greatest id. ``None`` if no node fits."""
        preferred = [p for p in task.preferred_nodes if self._fits(task, p)]
        if preferred:
            return max(preferred, key=lambda p: (self._free_slots(p), p))
        best: tuple[int, str] | None = None
        for node_class in task.allowed_classes:
            members = self._classes.get(node_class)
            if members is None:
                continue
            found = members.best(task.ideal_memory_mb, task.excluded_nodes, best[0] if best else 1)
            if found is not None and (best is None or found > best):
                best = found
        return best[1] if best else None

    def take(self, node_id: str, memory_mb: int) -> None:
        members = self._classes[self._home[node_id]]
        members.take(members.position[node_id], memory_mb)
        self.slots_left -= 1

    def _fits(self, task: PendingTask, node_id: str) -> bool:
        node_class = self._home.get(node_id)
        if node_class is None or node_class not in task.allowed_classes or node_id in task.excluded_nodes:
            return False
        members = self._classes[node_class]
        position = members.position[node_id]
        return members.slots[position] > 0 and members.memory[position] >= task.ideal_memory_mb

    def _free_slots(self, node_id: str) -> int:
        members = self._classes[self._home[node_id]]
        return members.slots[members.position[node_id]]


class KeptIndex:
    """FIFO's pick over the master's index of the nodes with a free slot (``FreeNodes``): per
    class and number of free slots, the ids in order; a bucket is copied (C speed) the first
    time this round's placements change it, and the nodes placed on are tracked here."""

    def __init__(self, free: FreeNodes) -> None:
        self._nodes = free.nodes
        self._kept = free.by_slots
        self._buckets: dict[tuple[str, int], list[str]] = {}
        """The buckets this round changed (copies of the kept ones)."""
        self._left: dict[str, tuple[int, int]] = {}
        """Free slots and memory of the nodes placed on this round."""
        self._most = {c: s for c, s in sorted(free.by_slots)}  # sorted: the greatest count last
        self.slots_left = sum(slots * len(ids) for (_, slots), ids in free.by_slots.items())

    def pick(self, task: PendingTask) -> str | None:
        """As :meth:`FreeIndex.pick`: a preferred node that fits, else the node that fits with
        the most free slots, then the greatest id."""
        preferred = [p for p in task.preferred_nodes if self._fits(task, p)]
        if preferred:
            return max(preferred, key=lambda p: (self._free(p)[0], p))
        best: tuple[int, str] | None = None
        for node_class in task.allowed_classes:
            found = self._best(node_class, task.ideal_memory_mb, task.excluded_nodes, best[0] if best else 1)
            if found is not None and (best is None or found > best):
                best = found
        return best[1] if best else None

    def take(self, node_id: str, memory_mb: int) -> None:
        node_class = self._nodes[node_id].node_class
        slots, memory = self._free(node_id)
        bucket = self._bucket(node_class, slots, copy=True)
        del bucket[bisect_left(bucket, node_id)]
        if slots > 1:
            insort(self._bucket(node_class, slots - 1, copy=True), node_id)
        self._left[node_id] = (slots - 1, memory - memory_mb)
        self.slots_left -= 1

    def _best(
        self, node_class: str, memory_mb: int, excluded: frozenset[str], at_least: int
    ) -> tuple[int, str] | None:
        """(free slots, id) of the node of the class with the most free slots, then the greatest
        id, among those with ``memory_mb`` free, not excluded, and at least ``at_least`` free slots."""
        for slots in range(self._most.get(node_class, 0), at_least - 1, -1):
            for node_id in reversed(self._bucket(node_class, slots)):
                if self._free(node_id)[1] >= memory_mb and node_id not in excluded:
                    return slots, node_id
        return None

    def _fits(self, task: PendingTask, node_id: str) -> bool:
        node = self._nodes.get(node_id)
        if node is None or node.node_class not in task.allowed_classes or node_id in task.excluded_nodes:
            return False
        slots, memory = self._free(node_id)
        return slots > 0 and memory >= task.ideal_memory_mb

    def _free(self, node_id: str) -> tuple[int, int]:
        left = self._left.get(node_id)
        if left is not None:
            return left
        node = self._nodes[node_id]
        return node.free_slots, node.free_memory_mb

    def _bucket(self, node_class: str, slots: int, copy: bool = False) -> list[str] | tuple[str, ...]:
        key = (node_class, slots)
        bucket = self._buckets.get(key)
        if bucket is not None:
            return bucket
        kept = self._kept.get(key, ())  # type: ignore[call-overload]
        if not copy:
            return kept
        bucket = self._buckets[key] = list(kept)
        return bucket


def _rightmost(tree: list[float], size: int, bound: int, need: float) -> int:
    """The greatest leaf index below ``bound`` whose value is at least ``need``, or -1."""
    if tree[1] < need:
        return -1
    if bound >= size:  # no bound: straight down, the right child first
        node = 1
        while node < size:
            node = 2 * node + 1 if tree[2 * node + 1] >= need else 2 * node
        return node - size
    stack = [(1, 0, size)]
    while stack:
        node, low, high = stack.pop()
        if low >= bound or tree[node] < need:
            continue
        if node >= size:
            return low
        middle = (low + high) // 2
        stack.append((2 * node, low, middle))
        stack.append((2 * node + 1, middle, high))  # popped first: the right half first
    return -1


def _set(tree: list[float], leaf: int, value: float) -> None:
    tree[leaf] = value
    leaf //= 2
    while leaf:
        tree[leaf] = max(tree[2 * leaf], tree[2 * leaf + 1])
        leaf //= 2
