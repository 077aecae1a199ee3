"""A round's machines as arrays, built once per round and shared by every request class.

A request class's arcs into the machines where its tasks fit are then numpy operations over
this table (which machines its node classes allow, how many of its tasks fit by slots and
memory, which aggregator feeds each), and a cost model's per-machine costs are computed once
per round for each distinct input they depend on (``memo``: the transient model's risk per
duration bucket), not once per request class: a round of 12,500 nodes and 30 request classes
had walked the nodes 30 times in Python.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from testbed.api.policy import NodeClass, NodeView

Rack = tuple[NodeClass, str | None]


@dataclass
class MachineTable:
    views: list[NodeView]
    """The machines, in the table's order."""
    now: float
    slots: np.ndarray
    """Free slots of each (with its movable tasks' slots)."""
    memory: np.ndarray
    """Free memory (MB) of each."""
    running: np.ndarray
    """Tasks running on each."""
    launched: np.ndarray
    rebalance: np.ndarray
    """Whether each has a rebalance recommendation."""
    racks: list[Rack]
    """The distinct (node class, zone) pairs, in first-seen order."""
    rack: np.ndarray
    """Each machine's index into ``racks``."""
    position: dict[str, int] = field(default_factory=dict)
    """Each machine's position, by node id."""
    memo: dict[object, np.ndarray] = field(default_factory=dict)
    """A cost model's per-machine arrays for this round, by its own key."""

    @classmethod
    def of(cls, views: Iterable[NodeView], now: float, movable: frozenset[str] = frozenset()) -> MachineTable:
        """``movable``: running tasks whose slots count as free (they are in the network under
        preemption, and may leave); their memory does not (see ``network``)."""
        views = list(views)
        used = [sum(t.memory_mb for t in v.running) for v in views]
        pinned = [sum(t.task_id not in movable for t in v.running) for v in views]
        racks: dict[Rack, int] = {}
        rack = [racks.setdefault((v.node_class, v.zone), len(racks)) for v in views]
        return cls(
            views,
            now,
            np.array([v.slots - busy for v, busy in zip(views, pinned, strict=True)], dtype=np.int64),
            np.array([v.memory_mb - u for v, u in zip(views, used, strict=True)], dtype=np.int64),
            np.array([len(v.running) for v in views], dtype=np.int64),
            np.array([v.launched for v in views], dtype=float),
            np.array([v.rebalance for v in views], dtype=bool),
            list(racks),
            np.array(rack, dtype=np.int64),
            {v.node_id: p for p, v in enumerate(views)},
        )

    def __len__(self) -> int:
        return len(self.views)

    def of_classes(self, classes: Iterable[NodeClass]) -> np.ndarray:
        """A mask of the machines whose node class is one of ``classes``."""
        allowed = np.array([r[0] in set(classes) for r in self.racks], dtype=bool)
        return allowed[self.rack] if len(self.racks) else np.zeros(len(self), dtype=bool)
