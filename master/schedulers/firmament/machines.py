"""A round's machines as arrays, built once per round and shared by every request class.

A request class's arcs into the machines where its tasks fit are then numpy operations over
this table (which machines its node classes allow, how many of its tasks fit by slots and
memory, which aggregator feeds each), and a cost model's per-machine costs are computed once
per round for each distinct input they depend on (``memo``: the transient model's risk per
duration bucket), not once per request class: a round of 12,500 nodes and 30 request classes
had walked the nodes 30 times in Python. The scheduler's table comes from
:class:`MachineColumns`, every node's row kept from round to round and recomputed only where
its view changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from testbed.api.policy import NodeClass, NodeView

Rack = tuple[NodeClass, str | None]


@dataclass
class MachineTable:
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
        return len(self.slots)

    def of_classes(self, classes: Iterable[NodeClass]) -> np.ndarray:
        """A mask of the machines whose node class is one of ``classes``."""
        allowed = np.array([r[0] in set(classes) for r in self.racks], dtype=bool)
        return allowed[self.rack] if len(self.racks) else np.zeros(len(self), dtype=bool)


class MachineColumns:
    """Every node a snapshot shows, as columns kept from round to round.

    The master hands a round the same ``NodeView`` object for a node whose view did not change
    (``master/core/node_views.py``), so a round matches this snapshot's views to the last
    one's by identity (numpy over their ids) and computes a row only for a view it has not
    seen: a node joined, or one whose tasks, status or marks changed. A round's
    :class:`MachineTable` is then a mask over the columns."""

    def __init__(self) -> None:
        self.views: tuple[NodeView, ...] = ()
        """The last snapshot's views (held, so that no new view can take one's id)."""
        self.ids = np.zeros(0, dtype=np.int64)
        self.node_ids = np.zeros(0, dtype=object)
        self.slots = np.zeros(0, dtype=np.int64)
        self.busy = np.zeros(0, dtype=np.int64)
        """Tasks running on each."""
        self.memory = np.zeros(0, dtype=np.int64)
        """Free memory (MB) of each."""
        self.launched = np.zeros(0, dtype=float)
        self.rebalance = np.zeros(0, dtype=bool)
        self.draining = np.zeros(0, dtype=bool)
        self.rack = np.zeros(0, dtype=np.int64)
        self.racks: list[Rack] = []
        """Every (node class, zone) pair seen, in first-seen order (codes never change)."""
        self._codes: dict[Rack, int] = {}
        self.placed: dict[str, Rack] = {}
        """The nodes up or draining but not draining: node id -> its rack (the cost models'
        ``racks``); a new mapping whenever a node joins, leaves or drains, else the same one."""

    def update(self, nodes: tuple[NodeView, ...]) -> None:
        """Take ``nodes`` (a snapshot's), computing rows only for the views not seen last time."""
        ids = np.fromiter(map(id, nodes), dtype=np.int64, count=len(nodes))
        if np.array_equal(ids, self.ids):
            self.views = nodes
            return
        known, source = self._match(ids)
        lost = np.ones(len(self.ids), dtype=bool)
        lost[source[known]] = False
        before = sorted(zip(self.node_ids[lost].tolist(), self.draining[lost].tolist(), strict=True))
        fresh = np.flatnonzero(~known)
        views = [nodes[p] for p in fresh.tolist()]
        rows = self._rows(views)
        for name, values in rows.items():
            column = getattr(self, name)
            taken = np.zeros(len(nodes), dtype=column.dtype)
            taken[known] = column[source[known]]
            taken[fresh] = values
            setattr(self, name, taken)
        self.ids, self.views = ids, nodes
        if before != sorted(zip(rows["node_ids"], rows["draining"], strict=True)):
            up = np.flatnonzero(~self.draining)
            racks = [self.racks[code] for code in self.rack[up].tolist()]
            self.placed = dict(zip(self.node_ids[up].tolist(), racks, strict=True))

    def _match(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``ids`` were seen last time, and at which of the last round's positions."""
        if not len(self.ids):
            return np.zeros(len(ids), dtype=bool), np.zeros(len(ids), dtype=np.int64)
        order = np.argsort(self.ids)
        at = np.minimum(np.searchsorted(self.ids[order], ids), len(order) - 1)
        return self.ids[order][at] == ids, order[at]

    def _rows(self, views: list[NodeView]) -> dict[str, list]:  # type: ignore[type-arg]
        """The columns' values for ``views``."""
        return {
            "node_ids": [v.node_id for v in views],
            "slots": [v.slots for v in views],
            "busy": [len(v.running) for v in views],
            "memory": [v.memory_mb - sum(t.memory_mb for t in v.running) for v in views],
            "launched": [v.launched for v in views],
            "rebalance": [v.rebalance for v in views],
            "draining": [v.draining for v in views],
            "rack": [self._code((v.node_class, v.zone)) for v in views],
        }

    def _code(self, rack: Rack) -> int:
        code = self._codes.get(rack)
        if code is None:
            code = self._codes[rack] = len(self.racks)
            self.racks.append(rack)
        return code

    def table(self, now: float, preemption: bool) -> MachineTable:
        """The round's machines: the nodes not draining with a free slot (under preemption,
        or a task running: its slots count as free, ``MachineTable.of``'s ``movable``)."""
        free = self.slots - self.busy
        up = ~self.draining & ((free > 0) | (self.busy > 0) if preemption else free > 0)
        node_ids = self.node_ids[up].tolist()
        return MachineTable(
            now,
            self.slots[up] if preemption else free[up],
            self.memory[up],
            self.busy[up],
            self.launched[up],
            self.rebalance[up],
            self.racks,
            self.rack[up],
            dict(zip(node_ids, range(len(node_ids)), strict=True)),
        )
