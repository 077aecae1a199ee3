"""The window of ready tasks before it was indexed (reference, verbatim): O(nodes) per task."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from master.schedulers.window import FreeNode
from testbed.api.policy import NodeClass


class PendingWindow:
    def __init__(self, nodes: Iterable[FreeNode]) -> None:
        self.nodes = [n for n in nodes if n.free_slots > 0]
        self.room: Counter[str] = Counter()
        for node in self.nodes:
            self.room[node.node_class] += node.free_slots

    @property
    def full(self) -> bool:
        return all(left <= 0 for left in self.room.values())

    def admits(self, allowed: frozenset[NodeClass], excluded: frozenset[str], memory_mb: int) -> bool:
        """Whether the task goes in the window (it then takes a place in every class it
        could start in now)."""
        usable = {
            n.node_class
            for n in self.nodes
            if n.node_class in allowed and n.node_id not in excluded and n.free_memory_mb >= memory_mb
        }
        if not any(self.room[c] > 0 for c in usable):
            return False
        for node_class in usable:
            self.room[node_class] -= 1
        return True
