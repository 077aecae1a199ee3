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
from collections.abc import Iterable
from dataclasses import dataclass
from operator import attrgetter

from master.policies.base import NodeClass


@dataclass(frozen=True, slots=True)
class FreeNode:
    node_id: str
    node_class: NodeClass
    free_slots: int
    free_memory_mb: int


_MEMORY = attrgetter("free_memory_mb")


class PendingWindow:
    """Admission costs O(excluded nodes) per node class, not O(nodes): each class's nodes
    are kept by free memory, largest first, so the first one not excluded answers."""

    def __init__(self, nodes: Iterable[FreeNode]) -> None:
        self.room: Counter[str] = Counter()
        by_class: dict[str, list[FreeNode]] = {}
        for node in nodes:
            if node.free_slots > 0:
                self.room[node.node_class] += node.free_slots
                by_class.setdefault(node.node_class, []).append(node)
        self._by_memory = {
            node_class: sorted(members, key=_MEMORY, reverse=True) for node_class, members in by_class.items()
        }

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
        for node in self._by_memory.get(node_class, ()):
            if node.free_memory_mb < memory_mb:
                return False
            if node.node_id not in excluded:
                return True
        return False
