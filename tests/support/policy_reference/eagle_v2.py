"""Eagle's round before its node states were made lazily (reference, verbatim but for this
docstring): every round built a state for every node (its backlog, queue length and long bit),
sorted by ordinal, before looking at a task; now only the nodes a round asks about get one.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from heapq import nsmallest
from typing import Literal

from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    Decision,
    Dequeue,
    Enqueue,
    NodeView,
    PendingTask,
    Scheduler,
)

Partition = Literal["general", "short"]
_ORDINAL = re.compile(r"(\d+)$")
QueueOrder = Literal["fifo", "srpt"]


# ----------------------------------------------------------------- partitions


@lru_cache(maxsize=1 << 16)
def node_ordinal(node_id: str) -> tuple[int, str]:
    """Sort key of a node: the number its id ends with (``reserved-7`` -> 7), then the id."""
    match = _ORDINAL.search(node_id)
    return (int(match.group(1)) if match else -1, node_id)


def short_partition_size(reserved: int, short_fraction: float) -> int:
    """How many of ``reserved`` on-demand nodes form the short-only partition.

    The fraction of the nodes rounded half up; at least one node if the fraction
    is positive, and never the last general node (long jobs need one).
    """
    if not 0 <= short_fraction < 1:
        raise ValueError(f"short_fraction must be in [0, 1), got {short_fraction}")
    if short_fraction == 0:
        return 0
    wanted = max(1, math.floor(short_fraction * reserved + 0.5))
    return max(0, min(wanted, reserved - 1))


def split_partitions(node_ids: Iterable[str], short_fraction: float) -> dict[str, Partition]:
    """Partition of each on-demand node: the highest ordinals form the short-only partition."""
    ordered = sorted(node_ids, key=node_ordinal)
    general = len(ordered) - short_partition_size(len(ordered), short_fraction)
    return {node_id: "general" if i < general else "short" for i, node_id in enumerate(ordered)}


# ------------------------------------------------------------ cluster state


def pending_by_id(snapshot: ClusterSnapshot) -> dict[str, PendingTask]:
    """Every pending task by id; a queued task is still pending until it starts."""
    return {task.task_id: task for job in snapshot.jobs for task in job.pending}


def long_node_ids(
    snapshot: ClusterSnapshot, pending: Mapping[str, PendingTask] | None = None
) -> frozenset[str]:
    """Eagle's succinct state: the nodes whose "runs long" bit is set.

    A node's bit is set while it runs or queues a long task: a short task sent
    there could wait behind that long task. ``pending``: ``pending_by_id(snapshot)``,
    if the caller has it already.
    """
    pending = pending_by_id(snapshot) if pending is None else pending
    return frozenset(n.node_id for n in snapshot.nodes if _holds_long(n, pending))


def _holds_long(node: NodeView, pending: Mapping[str, PendingTask]) -> bool:
    # plain loops: asked of every node in every round (no generator per node)
    for task in node.running:
        if task.long:
            return True
    for task_id in node.queued:
        queued = pending.get(task_id)
        if queued is not None and queued.long:
            return True
    return False


def backlog_s(node: NodeView, pending: Mapping[str, PendingTask], now: float) -> float:
    """Estimated work ahead of a task queued now: running remainders plus queued estimates."""
    running = sum([max(0.0, t.expected_end - now) for t in node.running]) if node.running else 0
    if not node.queued:
        return running
    queued = sum(pending[q].est_duration_s for q in node.queued if q in pending)
    return running + queued


def on_demand_copy_target(
    nodes: Iterable[NodeView], waits: Mapping[str, float], long_ids: Collection[str]
) -> str | None:
    """The node that gets the on-demand copy of a short task queued on a transient node.

    A reserved node that is not draining; preferably one whose long bit is clear,
    then one of the short-only partition (the on-demand buffer the paper keeps
    for this), then the least estimated wait. ``None`` if there is no such node.
    """
    options = [n for n in nodes if n.node_class == "reserved" and not n.draining]
    if not options:
        return None
    best = min(
        options,
        key=lambda n: (
            n.node_id in long_ids,
            n.partition != "short",
            waits[n.node_id],
            node_ordinal(n.node_id),
        ),
    )
    return best.node_id


# -------------------------------------------------------------- scheduling


@dataclass(slots=True)
class _NodeState:
    """One node as seen during one scheduling round (updated as decisions are taken)."""

    view: NodeView
    free_slots: int
    free_memory_mb: int
    backlog_s: float
    queue_length: int
    long: bool

    def wait_s(self) -> float:
        """Estimated wait of a task placed here now."""
        if self.queue_length == 0 and self.free_slots > 0:
            return 0.0
        return self.backlog_s / self.view.slots

    def fits(self, task: PendingTask) -> bool:
        return self.free_slots > 0 and self.free_memory_mb >= task.ideal_memory_mb

    def can_start(self, task: PendingTask) -> bool:
        """A new task may start at once: a slot, its memory, and nobody queued ahead."""
        return self.queue_length == 0 and self.fits(task)


_LongKey = tuple[float, int, tuple[int, str]]
"""A long task's placement key (``_long_key``)."""


class _Round:
    """The mutable bookkeeping of one ``schedule`` call over an immutable snapshot."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.pending = pending_by_id(snapshot)
        long_ids = long_node_ids(snapshot, self.pending)
        self.nodes = {
            n.node_id: _NodeState(
                view=n,
                free_slots=n.free_slots,
                free_memory_mb=n.free_memory_mb,
                backlog_s=backlog_s(n, self.pending, snapshot.now),
                queue_length=sum(q in self.pending for q in n.queued) if n.queued else 0,
                long=n.node_id in long_ids,
            )
            for n in sorted(snapshot.nodes, key=lambda n: node_ordinal(n.node_id))
        }
        self.queued_on: dict[str, list[str]] = {}
        for state in self.nodes.values():
            if not state.view.queued:
                continue
            for task_id in state.view.queued:
                if task_id in self.pending:
                    self.queued_on.setdefault(task_id, []).append(state.view.node_id)
        jobs = sorted(snapshot.jobs, key=lambda j: (j.submitted, j.job_id))
        self.in_job_order = [task for job in jobs for task in job.pending]
        self.job_work_s = {j.job_id: sum(t.est_duration_s for t in j.pending) for j in jobs}
        self.started: set[str] = set()
        self._placeable: dict[frozenset[str], list[_NodeState]] = {}
        self._clear: dict[frozenset[str], list[_NodeState]] = {}
        self._general: dict[frozenset[str], list[tuple[_LongKey, int, _NodeState]]] = {}

    def placeable(self, task: PendingTask) -> list[_NodeState]:
        """Nodes that may take a new task: not draining, of a class the task allows (in
        ordinal order; one list per set of allowed classes, for the round)."""
        found = self._placeable.get(task.allowed_classes)
        if found is None:
            allowed = task.allowed_classes
            found = [s for s in self.nodes.values() if not s.view.draining and s.view.node_class in allowed]
            self._placeable[task.allowed_classes] = found
        return found

    def clear(self, task: PendingTask) -> list[_NodeState]:
        """The placeable nodes whose long bit is clear, else all placeable ones (kept for the
        round until a long bit is set: :meth:`place`)."""
        found = self._clear.get(task.allowed_classes)
        if found is None:
            candidates = self.placeable(task)
            found = [s for s in candidates if not s.long] or candidates
            self._clear[task.allowed_classes] = found
        return found

    def least_wait_general(self, task: PendingTask) -> _NodeState | None:
        """The placeable node of the general partition with the least estimated wait, then the
        most free slots, then the lowest ordinal: ``min`` over them, in O(log nodes) per long
        task. A heap of their keys, built on the round's first long task: once the queued
        tasks have started (``EagleScheduler.schedule`` starts them first), a placement only
        makes its node's key worse, so a stale top is pushed back down with its key now."""
        heap = self._general.get(task.allowed_classes)
        if heap is None:
            general = (s for s in self.placeable(task) if s.view.partition == "general")
            heap = [(_long_key(s), i, s) for i, s in enumerate(general)]
            heapq.heapify(heap)
            self._general[task.allowed_classes] = heap
        while heap:
            key, i, state = heap[0]
            now = _long_key(state)
            if now == key:
                return state
            heapq.heapreplace(heap, (now, i, state))
        return None

    def unplaced(self) -> list[PendingTask]:
        """Pending tasks neither queued anywhere nor started this round, in job order."""
        return [
            t for t in self.in_job_order if t.task_id not in self.queued_on and t.task_id not in self.started
        ]

    def start_queued(self, task: PendingTask, state: _NodeState) -> list[Decision]:
        """Start a queued task on ``state``'s node and cancel its copies elsewhere."""
        node_id = state.view.node_id
        self._take_slot(task, state)
        state.queue_length -= 1
        self.started.add(task.task_id)
        decisions: list[Decision] = [_assign(task, node_id)]
        for other in self.queued_on[task.task_id]:
            if other != node_id:
                self.nodes[other].queue_length -= 1
                self.nodes[other].backlog_s -= task.est_duration_s
                decisions.append(Dequeue(task.task_id, other, f"copy started on {node_id}"))
        return decisions

    def place(self, task: PendingTask, state: _NodeState, copy: bool = False) -> Decision:
        """Start a new task on ``state``'s node if it can start there now, else queue it."""
        node_id = state.view.node_id
        if task.long and not state.long:
            state.long = True
            self._clear.clear()
        if not copy and state.can_start(task):
            self._take_slot(task, state)
            state.backlog_s += task.est_duration_s
            self.started.add(task.task_id)
            return _assign(task, node_id)
        state.queue_length += 1
        state.backlog_s += task.est_duration_s
        self.queued_on.setdefault(task.task_id, []).append(node_id)
        return Enqueue(task.task_id, node_id, copy=copy)

    @staticmethod
    def _take_slot(task: PendingTask, state: _NodeState) -> None:
        state.free_slots -= 1
        state.free_memory_mb -= task.ideal_memory_mb


def _long_key(state: _NodeState) -> _LongKey:
    """A long task goes to the least of these: the least wait, the most free slots, the lowest ordinal."""
    return (state.wait_s(), -state.free_slots, node_ordinal(state.view.node_id))


def _assign(task: PendingTask, node_id: str) -> Assign:
    return Assign(task.task_id, node_id, task.ideal_memory_mb, predicted_duration_s=task.est_duration_s)


def _probed(seed: int, task_id: str, nodes: list[_NodeState], probes: int) -> list[_NodeState]:
    """A task's sample: the ``probes`` nodes of lowest stable pseudo-random rank, the 8-byte
    BLAKE2b digest of ``seed/task_id/node_id`` (ties: the earlier node). The common prefix
    is hashed once; hashing every node is what a short task costs."""
    prefix = hashlib.blake2b(f"{seed}/{task_id}/".encode(), digest_size=8)
    ranks = []
    for state in nodes:
        hashed = prefix.copy()
        hashed.update(state.view.node_id.encode())
        ranks.append(hashed.digest())
    order = nsmallest(probes, range(len(nodes)), key=ranks.__getitem__)
    return [nodes[i] for i in order]


class EagleScheduler(Scheduler):
    """Eagle's hybrid placement over a partitioned cluster, with node-side queues.

    ``probes``: nodes sampled per short task (Eagle and Sparrow use 2).
    ``queue_order``: ``fifo`` starts queued tasks in arrival order; ``srpt``
    starts first the task whose job has the least estimated work left (Eagle's
    SRPT queues), ties in arrival order.
    ``seed``: salts the probe sampling.
    ``on_demand_copies``: CloudCoaster's copy rule for tasks queued on transients.
    """

    def __init__(
        self,
        *,
        probes: int = 2,
        queue_order: QueueOrder = "fifo",
        seed: int = 0,
        on_demand_copies: bool = True,
    ) -> None:
        if probes < 1:
            raise ValueError(f"probes must be >= 1, got {probes}")
        if queue_order not in ("fifo", "srpt"):
            raise ValueError(f"queue_order must be 'fifo' or 'srpt', got {queue_order!r}")
        self.probes = probes
        self.queue_order = queue_order
        self.seed = seed
        self.on_demand_copies = on_demand_copies

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        round_ = _Round(snapshot)
        decisions: list[Decision] = []
        for state in round_.nodes.values():
            decisions += self._start_queued(round_, state)
        for task in round_.unplaced():
            if task.long:
                decisions += self._place_long(round_, task)
            else:
                decisions += self._place_short(round_, task)
        return decisions

    def _start_queued(self, round_: _Round, state: _NodeState) -> list[Decision]:
        """Fill the node's free slots from its queue (draining nodes too: they finish it)."""
        if not state.view.queued:
            return []
        queue = [
            round_.pending[q] for q in state.view.queued if q in round_.pending and q not in round_.started
        ]
        if self.queue_order == "srpt":
            queue.sort(key=lambda t: round_.job_work_s[t.job_id])
        decisions: list[Decision] = []
        for task in queue:
            if not state.fits(task):
                break
            decisions += round_.start_queued(task, state)
        return decisions

    @staticmethod
    def _place_long(round_: _Round, task: PendingTask) -> list[Decision]:
        """Central placement on the general partition: the least estimated wait."""
        best = round_.least_wait_general(task)
        return [] if best is None else [round_.place(task, best)]

    def _place_short(self, round_: _Round, task: PendingTask) -> list[Decision]:
        """Probe ``probes`` nodes whose long bit is clear; take the least estimated wait."""
        candidates = round_.placeable(task)
        probed = self._sample(round_, task)
        if not probed:
            return []
        best = min(
            probed,
            key=lambda s: (s.wait_s(), s.queue_length, node_ordinal(s.view.node_id)),
        )
        if self.on_demand_copies and best.view.node_class == "transient" and not best.can_start(task):
            return self._queue_with_copy(round_, task, best, candidates)
        return [round_.place(task, best)]

    def _sample(self, round_: _Round, task: PendingTask) -> list[_NodeState]:
        """The nodes a short task probes."""
        return _probed(self.seed, task.task_id, round_.clear(task), self.probes)

    @staticmethod
    def _queue_with_copy(
        round_: _Round, task: PendingTask, transient: _NodeState, candidates: list[_NodeState]
    ) -> list[Decision]:
        """Queue on the transient node plus a copy on an on-demand node (or start it there)."""
        target_id = on_demand_copy_target(
            (s.view for s in candidates),
            {s.view.node_id: s.wait_s() for s in candidates},
            {s.view.node_id for s in candidates if s.long},
        )
        if target_id is None:
            return [round_.place(task, transient)]
        target = round_.nodes[target_id]
        if target.can_start(task):
            return [round_.place(task, target)]
        return [round_.place(task, transient), round_.place(task, target, copy=True)]
