"""The nodes as a scheduling round sees them, kept up to date as they change.

A round used to build every node's ``NodeView`` (and its free capacity) from scratch:
O(nodes x running) per round, most of a simulated run's time at 1,000 nodes and more.
Now a node record says when something a policy sees of it changes (``NodeRecord.touch``:
its status, reservation, partition, rebalance mark, launch time, its running tasks or
its queue), and :class:`NodeViews` rebuilds only those nodes' views: a round costs
O(nodes changed since the last one), plus one C-speed pass to hand out the tuple.

The views are the ones a full rebuild gives, in the same order (``core.nodes``' order),
so the policies' decisions do not change (tests/core/test_node_views.py checks it on
random histories against a full rebuild). The nodes with a free slot are kept indexed too
(``free_index``: by class and number of free slots, ids sorted), for the round's snapshot
(``ClusterSnapshot.free``): FIFO places a task from them without walking every node.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from itertools import islice

from master.core.nodes import NodeRecord
from master.schedulers.window import FreeNode, PendingWindow
from testbed.api.policy import FreeNodes, NodeView, RunningTask
from testbed.settings.cluster import ClusterSettings

VISIBLE = ("up", "draining")
"""The statuses a snapshot shows a node in."""

RunningViews = Callable[[NodeRecord], tuple[tuple[RunningTask, ...], bool]]
"""A node's running tasks' views, and whether any of them depends on the round's time."""


class NodeViews:
    def __init__(
        self, nodes: dict[str, NodeRecord], cluster: ClusterSettings, running_views: RunningViews
    ) -> None:
        self.nodes = nodes
        self.cluster = cluster
        self.running_views = running_views
        self.changed: set[str] = set()
        """Nodes touched since their view was last built (every node record shares this set)."""
        self._views: dict[str, NodeView | None] = {}
        """Every node not yet ended, in ``nodes``' order: its view, or None while it launches."""
        self._free: dict[str, FreeNode] = {}
        """The nodes up with a free slot (what the pending window counts)."""
        self._room: Counter[str] = Counter()
        """Free slots per node class, over ``_free``."""
        self._memory: defaultdict[str, Counter[int]] = defaultdict(Counter)
        """How many nodes of ``_free`` have each amount of free memory, per node class."""
        self._by_slots: dict[tuple[str, int], list[str]] = {}
        """(class, free slots) -> the ids of ``_free``'s nodes with that many, sorted (``FreeNodes``)."""
        self._queueing: set[str] = set()
        """The nodes up or draining with a task queued."""
        self._volatile: set[str] = set()
        """Nodes whose view shows a task not yet started (its times are the round's now)."""
        self._unbuilt: set[str] = set()
        """Nodes up or draining whose view is out of date: built when views are asked for (a
        round of a scheduler that places from the free-node index alone builds none)."""
        self._known = 0
        self._tuple: tuple[NodeView, ...] = ()
        self._stale = True
        self._shown: list[NodeView] = []
        """The views of ``_views`` that are built, in its order: ``_tuple``'s contents."""
        self._at: dict[str, int] = {}
        """Each node's position in ``_shown``."""
        self._moved = True
        """Whether a node joined or left ``_shown`` since it was last laid out (else a view
        rebuilt replaces the old one at its place, and the tuple is one copy of the list)."""

    def views(self) -> tuple[NodeView, ...]:
        """The nodes up or draining, as a full rebuild would show them now."""
        self._refresh()
        self._build()
        if self._moved:
            self._shown = list(filter(None, self._views.values()))
            self._at = {view.node_id: i for i, view in enumerate(self._shown)}
            self._moved = False
            self._stale = True
        if self._stale:
            self._tuple = tuple(self._shown)
            self._stale = False
        return self._tuple

    def free_nodes(self) -> Iterator[FreeNode]:
        """The nodes up with a free slot (their free slots and memory)."""
        self._refresh()
        return iter(self._free.values())

    def free_index(self) -> FreeNodes:
        """The nodes up with a free slot, indexed as kept (copies: a snapshot does not change):
        C-speed copies of a dict and a few lists, where a scheduler's own index walked them all."""
        self._refresh()
        by_slots = {key: tuple(ids) for key, ids in self._by_slots.items() if ids}
        return FreeNodes(dict(self._free), by_slots)  # type: ignore[arg-type]

    def window(self) -> PendingWindow:
        """The pending window over the nodes up with a free slot, counted as they changed."""
        self._refresh()
        most = {c: max(amounts) for c, amounts in self._memory.items() if amounts}
        return PendingWindow.counted(self._room, most, lambda: self._free.values())

    def up(self) -> set[str]:
        """The ids of the nodes up."""
        self._refresh()
        self._build()
        return {node_id for node_id, view in self._views.items() if view is not None and not view.draining}

    def alive(self) -> list[str]:
        """The ids of the nodes launching, up or draining, in ``nodes``' order."""
        self._refresh()
        return list(self._views)

    def queueing(self) -> list[str]:
        """The nodes up or draining with a task queued (in no particular order)."""
        self._refresh()
        return list(self._queueing)

    # ------------------------------------------------------------------ keeping up

    def _refresh(self) -> None:
        if len(self.nodes) != self._known:
            self._adopt()
        if self._volatile:
            self.changed |= self._volatile
        if not self.changed:
            return
        self._stale = True
        nodes = self.nodes
        for node_id in self.changed:
            self._rebuild(nodes[node_id])
        self.changed.clear()

    def _adopt(self) -> None:
        """Nodes registered since the last round (``core.nodes`` only grows, in order): read
        from its end, so a replacement costs O(1), not a walk over every node ever launched."""
        fresh = list(islice(reversed(self.nodes.values()), len(self.nodes) - self._known))
        for node in reversed(fresh):
            node.watch(self.changed)
            self._views[node.node_id] = None
            self.changed.add(node.node_id)
        self._known = len(self.nodes)

    def _rebuild(self, node: NodeRecord) -> None:
        node_id = node.node_id
        self._forget_free(node_id)
        self._volatile.discard(node_id)
        self._queueing.discard(node_id)
        if node.status not in VISIBLE:
            self._unbuilt.discard(node_id)
            if self._views.get(node_id) is not None:
                self._moved = True
            if node.status == "launching":
                self._views[node_id] = None
            else:  # lost or gone: it never comes back
                self._views.pop(node_id, None)
            return
        self._unbuilt.add(node_id)
        if node.queued:
            self._queueing.add(node_id)
        free_slots = node.slots - len(node.running)
        if node.status == "up" and free_slots > 0:
            used = sum(job.tasks[key].memory_mb for job, key in node.running.values())
            node_class = node.node_class
            self._free[node_id] = FreeNode(node_id, node_class, free_slots, node.memory_mb - used)  # type: ignore[arg-type]
            self._room[node_class] += free_slots
            self._memory[node_class][node.memory_mb - used] += 1  # no Counter made per node rebuilt
            insort(self._by_slots.setdefault((node_class, free_slots), []), node_id)

    def _build(self) -> None:
        """The views of the nodes changed since they were last built (up or draining)."""
        if not self._unbuilt:
            return
        self._stale = True
        views, shown, at = self._views, self._shown, self._at
        for node_id in self._unbuilt:
            view = views[node_id] = self._view(self.nodes[node_id])
            if self._moved or node_id not in at:
                self._moved = True
            else:
                shown[at[node_id]] = view
        self._unbuilt.clear()

    def _view(self, node: NodeRecord) -> NodeView:
        running, volatile = self.running_views(node)
        if volatile:
            self._volatile.add(node.node_id)
        return NodeView(
            node.node_id,
            node.node_class,  # type: ignore[arg-type]
            node.slots,
            node.memory_mb,
            running,
            draining=node.status == "draining",
            launched=node.launched_t,
            reserved_for=node.reserved_for,
            partition=node.partition,
            queued=tuple(node.queued),
            rebalance=node.rebalance_at is not None,
            zone=self.cluster[node.class_name].zone_of(node.ordinal),
        )

    def _forget_free(self, node_id: str) -> None:
        free = self._free.pop(node_id, None)
        if free is None:
            return
        self._room[free.node_class] -= free.free_slots
        ids = self._by_slots[(free.node_class, free.free_slots)]
        del ids[bisect_left(ids, node_id)]
        amounts = self._memory[free.node_class]
        amounts[free.free_memory_mb] -= 1
        if not amounts[free.free_memory_mb]:
            del amounts[free.free_memory_mb]
