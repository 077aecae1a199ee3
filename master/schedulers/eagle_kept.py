"""What Eagle keeps of the nodes from one scheduling round to the next (``master.schedulers.eagle``).

A round used to walk every node in Python: the nodes by id, those with a queue, the
placeable ones in ordinal order (per set of allowed classes) and the general partition's
entries of the long heap. At 4,000 servers that was milliseconds a round, whatever changed.
Views are immutable and the master hands out the same view object for a node that did not
change (``master.core.node_views``): the snapshot's views that are not the last snapshot's
objects (one C-speed pass finds them) are the only ones looked at again, so a round's set-up
costs O(nodes changed + nodes with a free slot or a queue). What is kept is what a fresh
walk over the snapshot would give (tests/policies/test_eagle_cost.py, hypothesis).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from itertools import compress
from operator import attrgetter, is_not

from testbed.api.policy import NodeView

Ordinal = Callable[[str], tuple[int, str]]
LongKey = tuple[float, int, tuple[int, str]]
"""A long task's placement key: the least wait, the most free slots, the lowest ordinal."""
Entry = tuple[LongKey, int, str]
"""A long-heap entry: a key, 0 (keys are distinct: they end with the node's id), the node."""
_ID = attrgetter("node_id")


class GeneralNodes:
    """The placeable nodes of the general partition for one set of allowed classes, as a
    round's long heap takes them: with a queue, with a free slot (and their key), or busy."""

    def __init__(self, allowed: frozenset[str], ordinal: Ordinal, views: Iterable[NodeView]) -> None:
        self.allowed = allowed
        self.ordinal = ordinal
        self.queued: dict[str, None] = {}
        self.free: dict[str, Entry] = {}
        self.busy: dict[str, NodeView] = {}
        for view in views:
            self.put(view)

    def put(self, view: NodeView) -> None:
        node_id = view.node_id
        if view.draining or view.node_class not in self.allowed or view.partition != "general":
            return
        free = view.slots - len(view.running)
        if view.queued:
            self.queued[node_id] = None
        elif free > 0:
            self.free[node_id] = ((0.0, -free, self.ordinal(node_id)), 0, node_id)
        else:
            self.busy[node_id] = view

    def discard(self, node_id: str) -> None:
        self.queued.pop(node_id, None)
        self.free.pop(node_id, None)
        self.busy.pop(node_id, None)


class PlaceableNodes:
    """The nodes that may take a new task of one set of allowed classes (not draining, of one
    of those classes), in ordinal order: their views replaced in place as they change, the
    list sorted again only when a node joins or leaves it."""

    def __init__(self, allowed: frozenset[str], ordinal: Ordinal) -> None:
        self.allowed = allowed
        self.ordinal = ordinal
        self.views: list[NodeView] = []
        self.at: dict[str, int] = {}
        self.stale = True

    def takes(self, view: NodeView) -> bool:
        return not view.draining and view.node_class in self.allowed

    def changed(self, view: NodeView) -> None:
        i = self.at.get(view.node_id)
        if i is None:
            self.stale = self.stale or self.takes(view)
        elif self.takes(view):
            self.views[i] = view
        else:
            self.stale = True

    def gone(self, node_id: str) -> None:
        self.stale = self.stale or node_id in self.at

    def of(self, views: dict[str, NodeView]) -> list[NodeView]:
        if self.stale:
            ordinal = self.ordinal
            self.views = sorted(filter(self.takes, views.values()), key=lambda v: ordinal(v.node_id))
            self.at = {view.node_id: i for i, view in enumerate(self.views)}
            self.stale = False
        return self.views


class KeptNodes:
    """The last snapshot's nodes by id, those with a queue, and per set of allowed classes
    the placeable ones and the general partition's (see the module doc)."""

    def __init__(self, ordinal: Ordinal) -> None:
        self.ordinal = ordinal
        self.nodes: tuple[NodeView, ...] = ()
        self.views: dict[str, NodeView] = {}
        """Every node of the last snapshot, by id."""
        self.queueing: set[str] = set()
        """The nodes with a queue."""
        self.general: dict[frozenset[str], GeneralNodes] = {}
        self.placeable: dict[frozenset[str], PlaceableNodes] = {}

    def update(self, nodes: tuple[NodeView, ...]) -> None:
        previous, views, self.nodes = self.nodes, self.views, nodes
        if len(previous) == len(nodes):  # as a rule the same nodes in the same order
            changed = list(compress(nodes, map(is_not, nodes, previous)))
        else:
            changed = list(compress(nodes, map(is_not, map(views.get, map(_ID, nodes)), nodes)))
        gone: list[str] = []
        for view in changed:
            views[view.node_id] = view
            if view.queued:
                self.queueing.add(view.node_id)
            else:
                self.queueing.discard(view.node_id)
        if len(views) != len(nodes):  # nodes gone since the last snapshot
            present = set(map(_ID, nodes))
            gone = [node_id for node_id in views if node_id not in present]
            for node_id in gone:
                del views[node_id]
                self.queueing.discard(node_id)
        for general in self.general.values():
            for node_id in gone:
                general.discard(node_id)
            for view in changed:
                general.discard(view.node_id)
                general.put(view)
        for placeable in self.placeable.values():
            for node_id in gone:
                placeable.gone(node_id)
            for view in changed:
                placeable.changed(view)

    def queueing_in_order(self) -> list[NodeView]:
        """The nodes with a queue, in ordinal order."""
        views, ordinal = self.views, self.ordinal
        return sorted(map(views.__getitem__, self.queueing), key=lambda v: ordinal(v.node_id))

    def general_of(self, allowed: frozenset[str]) -> GeneralNodes:
        found = self.general.get(allowed)
        if found is None:
            found = self.general[allowed] = GeneralNodes(allowed, self.ordinal, self.nodes)
        return found

    def placeable_of(self, allowed: frozenset[str]) -> list[NodeView]:
        found = self.placeable.get(allowed)
        if found is None:
            found = self.placeable[allowed] = PlaceableNodes(allowed, self.ordinal)
        return found.of(self.views)
