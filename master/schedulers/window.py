"""Which ready tasks a scheduler that places the head of the queue (FIFO) needs to see.

Building a pending task for every ready task of a large job costs more than the
placement itself, so for such a scheduler the master stops once the window is full.
The window is counted per node class: as many tasks that could start on a free node
of a class (allowed there, not excluded from it, fitting its free memory) as that
class has free slots. Cut at the cluster's free-slot count alone, tasks confined to
one class (Pado's reserved receivers, ready first) filled the window while the other
class's slots stayed idle, its tasks out of sight: a deadlock when the receivers wait
for those very tasks (issue 23, point 9).

If any ready task can start on some free node, the window holds one that can: a task
left out found every class it could use already holding as many admitted tasks as
that class has free slots, each of which can start there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from operator import attrgetter

from testbed.api.policy import FreeNode, NodeClass

_MEMORY = attrgetter("free_memory_mb")
Listing = Callable[[], Iterable[FreeNode]]
"""Lists the nodes with a free slot, when a window needs them one by one."""


class PendingWindow:
    """Admission costs O(1) per node class for a task excluded from no node, else O(excluded
    nodes): each class's most free memory answers, or its nodes by free memory, largest
    first (sorted when first needed), the first one not excluded."""

    def __init__(self, nodes: Iterable[FreeNode]) -> None:
        free = [node for node in nodes if node.free_slots > 0]
        room: Counter[str] = Counter()
        most: dict[str, int] = {}
        for node in free:
            room[node.node_class] += node.free_slots
            most[node.node_class] = max(most.get(node.node_class, node.free_memory_mb), node.free_memory_mb)
        self._start(room, most, lambda: free)

    @classmethod
    def counted(
        cls, room: Mapping[str, int], most_memory: Mapping[str, int], nodes: Listing
    ) -> PendingWindow:
        """The window over the nodes with a free slot, counted already (kept up to date by the
        master): free slots and most free memory per class; ``nodes()`` lists them if needed."""
        window = cls.__new__(cls)
        window._start(Counter(room), dict(most_memory), nodes)
        return window

    def _start(self, room: Counter[str], most: dict[str, int], nodes: Listing) -> None:
        self.room = room
        self._most = most
        self._nodes = nodes
        self._by_memory: dict[str, list[FreeNode]] | None = None

    @property
    def full(self) -> bool:
        return all(left <= 0 for left in self.room.values())

    def admits(self, allowed: frozenset[NodeClass], excluded: frozenset[str], memory_mb: int) -> bool:
        """Whether the task goes in the window (it then takes a place in every class it
        could start in now)."""
        usable = [c for c in allowed if self._fits(c, excluded, memory_mb)]
        if not any(self.room[c] > 0 for c in usable):
            return False
        for node_class in usable:
            self.room[node_class] -= 1
        return True

    def _fits(self, node_class: str, excluded: frozenset[str], memory_mb: int) -> bool:
        """Has the class a node with ``memory_mb`` free that the task is not excluded from?"""
        if self._most.get(node_class, -1) < memory_mb:
            return False
        if not excluded:
            return True
        for node in self._sorted().get(node_class, ()):
            if node.free_memory_mb < memory_mb:
                return False
            if node.node_id not in excluded:
                return True
        return False

    def _sorted(self) -> dict[str, list[FreeNode]]:
        if self._by_memory is None:
            by_class: dict[str, list[FreeNode]] = {}
            for node in self._nodes():
                if node.free_slots > 0:
                    by_class.setdefault(node.node_class, []).append(node)
            self._by_memory = {c: sorted(nodes, key=_MEMORY, reverse=True) for c, nodes in by_class.items()}
        return self._by_memory
