"""``scheduler: eagle``: a hybrid long/short scheduler after Eagle (SoCC'16).

CloudCoaster builds on Eagle; this is the scheduler under both the static
baseline and the CloudCoaster autoscaler. Whether a task is long is decided
upstream from its job's estimated task duration against a cutoff
(``testbed.arrivals.generate.is_long``); here it is the ``long`` flag of the task.

- The reserved nodes are split into a general partition and a short-only
  partition (``split_partitions``); transient servers join the short-only one.
- Long tasks are placed centrally on the general partition only: on the node
  with the least estimated wait, started at once on a free slot, else queued.
- Short tasks are placed by probing: ``probes`` candidate nodes per task (the
  power of d choices), drawn uniformly at random among the nodes whose "runs
  long" bit is clear (Eagle's succinct state sharing), from a hash of (seed,
  task id, draw number); the task goes to the probed node with the least
  estimated wait.
- A node with a free slot starts its queued tasks, FIFO or SRPT.
- A short task queued on a transient node also gets a copy queued on an
  on-demand node (CloudCoaster, section 3.3), so a revocation never loses it;
  the first copy to start cancels the others (``Dequeue``).

The sampling is a pure function of the snapshot: the same snapshot always gets
the same decisions, and no global random state is touched.
"""

from __future__ import annotations

import hashlib
import heapq
import math
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from master.options import PolicyOptions
from master.schedulers.eagle_kept import Entry, KeptNodes, LongKey
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

if TYPE_CHECKING:  # only typed by it (the core reaches node_ordinal, and imports no schema)
    from testbed.scenario.schema import Scenario

Partition = Literal["general", "short"]
DEFAULT_SHORT_FRACTION = 0.1
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


def short_fraction_of(options: Mapping[str, object]) -> float:
    """``policy.options.eagle.short_fraction``: the reserved nodes' share in the short-only
    partition (a ValueError unless a number in [0, 1))."""
    value = options.get("short_fraction", DEFAULT_SHORT_FRACTION)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"short_fraction must be a number in [0, 1), got {value!r}")
    short_partition_size(1, value)  # raises ValueError outside [0, 1)
    return float(value)


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
    return frozenset(n.node_id for n in snapshot.nodes if holds_long(n, pending))


def holds_long(node: NodeView, pending: Mapping[str, PendingTask]) -> bool:
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
    queue_length: int
    long: bool
    pending: Mapping[str, PendingTask]
    now: float
    _backlog: float | None = None

    @property
    def backlog_s(self) -> float:
        """Estimated work ahead (``backlog_s``), computed when first asked: most nodes'
        never is in a round."""
        if self._backlog is None:
            self._backlog = backlog_s(self.view, self.pending, self.now)
        return self._backlog

    @backlog_s.setter
    def backlog_s(self, value: float) -> None:
        self._backlog = value

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


class _States(dict[str, _NodeState]):
    """The round's node states by id, each built when first asked for (``_Round.state``)."""

    def __init__(self, views: Mapping[str, NodeView], pending: Mapping[str, PendingTask], now: float) -> None:
        """Not the round itself: a reference back to it would make each round a reference
        cycle, freed only by the cycle collector, which a simulation runs once in 2^20 events
        (``master.sim.shell.COLLECT_EVERY``): gigabytes of rounds over a simulated day."""
        super().__init__()
        self.views = views
        self.pending = pending
        self.now = now

    def __missing__(self, node_id: str) -> _NodeState:
        view = self.views[node_id]
        pending = self.pending
        state = _NodeState(
            view=view,
            free_slots=view.free_slots,
            free_memory_mb=view.free_memory_mb,
            queue_length=sum(q in pending for q in view.queued) if view.queued else 0,
            long=holds_long(view, pending),
            pending=pending,
            now=self.now,
        )
        self[node_id] = state
        return state


_LongKey = LongKey


class _Round:
    """The mutable bookkeeping of one ``schedule`` call over an immutable snapshot."""

    def __init__(self, snapshot: ClusterSnapshot, kept: KeptNodes) -> None:
        """What a round needs of every node is only its view: a node's state (its backlog,
        queue length, long bit) is built when the round first asks about the node (``nodes``),
        so a round whose tasks are all queued costs O(nodes with a queue), not O(nodes).
        ``kept``: the nodes as of this snapshot (``KeptNodes.update``), kept across rounds."""
        self.snapshot = snapshot
        self.now = snapshot.now
        self.pending = pending_by_id(snapshot)
        self.nodes = _States(kept.views, self.pending, self.now)
        self.kept = kept
        self.queueing = kept.queueing_in_order()
        """The nodes with a queue, in ordinal order."""
        self.queued_on: dict[str, list[str]] = {}
        for view in self.queueing:
            for task_id in view.queued:
                if task_id in self.pending:
                    self.queued_on.setdefault(task_id, []).append(view.node_id)
        jobs = sorted(snapshot.jobs, key=lambda j: (j.submitted, j.job_id))
        self.in_job_order = [task for job in jobs for task in job.pending]
        self.job_work_s = {j.job_id: sum(t.est_duration_s for t in j.pending) for j in jobs}
        self.started: set[str] = set()
        self._placeable: dict[frozenset[str], list[_NodeState]] = {}
        self._general: dict[frozenset[str], list[tuple[_LongKey, int, str]]] = {}
        self._busy: dict[frozenset[str], list[tuple[NodeView, int]]] = {}

    def placeable_views(self, task: PendingTask) -> list[NodeView]:
        """Nodes that may take a new task: not draining, of a class the task allows (in
        ordinal order; one list per set of allowed classes, kept across rounds)."""
        return self.kept.placeable_of(task.allowed_classes)

    def placeable(self, task: PendingTask) -> list[_NodeState]:
        """The states of :meth:`placeable_views`' nodes (what a long task or a copy weighs)."""
        found = self._placeable.get(task.allowed_classes)
        if found is None:
            states = self.nodes
            found = [states[n.node_id] for n in self.placeable_views(task)]
            self._placeable[task.allowed_classes] = found
        return found

    def long(self, view: NodeView) -> bool:
        """The node's long bit: its state's, once it has one (a placement may set it)."""
        state = self.nodes.get(view.node_id)
        return state.long if state is not None else holds_long(view, self.pending)

    def is_clear(self, view: NodeView) -> bool:
        """Whether the node's long bit is clear (what a short task's probe asks of a node)."""
        return not self.long(view)

    def least_wait_general(self, task: PendingTask) -> _NodeState | None:
        """The placeable node of the general partition with the least estimated wait, then the
        most free slots, then the lowest ordinal: ``min`` over them, in O(log nodes) per long
        task. A heap of their keys, built on the round's first long task: once the queued
        tasks have started (``EagleScheduler.schedule`` starts them first), a placement only
        makes its node's key worse, so a stale top is pushed back down with its key now.

        The heap holds node ids, and only the nodes it pops get a state. A node the round has
        not touched has no queue (the queues start first): with a free slot its key is
        ``(0.0, -free slots, ordinal)``; without, ``(wait, 0, ordinal)``, which no key with a
        free slot and no wait can lose to. So those busy nodes' keys (their running tasks'
        remainders) are computed only once the heap's top is no longer such a key."""
        heap = self._general.get(task.allowed_classes)
        if heap is None:
            heap, busy = self._general_keys(task)
            heapq.heapify(heap)
            self._general[task.allowed_classes] = heap
            self._busy[task.allowed_classes] = busy
        busy = self._busy[task.allowed_classes]
        states = self.nodes
        while True:
            if busy and (not heap or heap[0][0][:2] >= (0.0, 0)):
                for view, i in busy:
                    heapq.heappush(heap, self._busy_entry(view, i))
                busy.clear()
            if not heap:
                return None
            key, i, node_id = heap[0]
            state = states[node_id]
            now = _long_key(state)
            if now == key:
                return state
            heapq.heapreplace(heap, (now, i, node_id))

    def _general_keys(self, task: PendingTask) -> tuple[list[Entry], list[tuple[NodeView, int]]]:
        """The heap's entries of the general partition's placeable nodes (``least_wait_general``),
        and the busy nodes whose keys wait until needed, from what Eagle keeps across rounds.
        A node the round has touched since its view keeps its view's entry: the heap's top is
        checked against the node's key now, and a placement only makes a key worse, so an
        entry is never better than its node; a busy node's key is never below ``(0.0, 0)``."""
        general = self.kept.general_of(task.allowed_classes)
        states = self.nodes
        heap = list(general.free.values())
        heap += [(_long_key(states[node_id]), 0, node_id) for node_id in general.queued]
        return heap, [(view, 0) for view in general.busy.values()]

    def _busy_entry(self, view: NodeView, i: int) -> tuple[_LongKey, int, str]:
        """A busy node's heap entry: its state's key if the round has touched it since."""
        node_id = view.node_id
        state = self.nodes.get(node_id)
        if state is not None:
            return (_long_key(state), i, node_id)
        return ((backlog_s(view, self.pending, self.now) / view.slots, 0, node_ordinal(node_id)), i, node_id)

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
        if task.long:
            state.long = True
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


_MAX_DRAWS = 64
"""Draws per probe before a short task lists the clear nodes (``_probed``): a draw costs about
a microsecond, a list of every clear node about a millisecond at 4,000 servers."""


def _probed(
    seed: int, task_id: str, nodes: list[NodeView], probes: int, clear: Callable[[NodeView], bool]
) -> list[NodeView]:
    """A task's sample: ``probes`` distinct nodes drawn uniformly at random among ``nodes``
    whose long bit is clear (``clear``), else among all of them if none is clear; all of them if
    there are no more than ``probes``. Eagle's own rule (its simulator's ``find_workers_random``
    draws probe targets uniformly among the nodes the succinct state shows free of long tasks).

    Draw ``i`` is node ``h_i mod len(nodes)``, ``h_i`` the 8-byte BLAKE2b digest of
    ``seed/task_id/i``: a node already drawn or with its long bit set is drawn again
    (rejection: the nodes kept are uniform over the clear ones), so a probe costs O(probes /
    share of clear nodes), not O(nodes). After ``_MAX_DRAWS`` draws per probe (few clear
    nodes) the remaining picks are drawn the same way from the list of the clear nodes not yet
    picked. Pure: the same snapshot gets the same sample."""
    prefix = hashlib.blake2b(f"{seed}/{task_id}/".encode(), digest_size=8)
    draw = 0

    def index(size: int) -> int:
        nonlocal draw
        hashed = prefix.copy()
        hashed.update(str(draw).encode())
        draw += 1
        return int.from_bytes(hashed.digest(), "big") % size

    size = len(nodes)
    picked: dict[int, None] = {}
    while len(picked) < probes and draw < _MAX_DRAWS * probes and size > 0:
        i = index(size)
        if i not in picked and clear(nodes[i]):
            picked[i] = None
    if len(picked) < probes:
        rest = [i for i in range(size) if i not in picked and clear(nodes[i])]
        if not rest and not picked:
            rest = list(range(size))
        while len(picked) < probes and rest:
            picked[rest.pop(index(len(rest)))] = None
    return [nodes[i] for i in picked]


class EagleScheduler(Scheduler):
    """Eagle's hybrid placement over a partitioned cluster, with node-side queues.

    ``probes``: nodes sampled per short task (Eagle and Sparrow use 2).
    ``queue_order``: ``fifo`` starts queued tasks in arrival order; ``srpt``
    starts first the task whose job has the least estimated work left (Eagle's
    SRPT queues), ties in arrival order.
    ``seed``: salts the probe sampling.
    ``on_demand_copies``: CloudCoaster's copy rule for tasks queued on transients.
    """

    needs_free_index = False
    """Its nodes are kept across rounds (``master.schedulers.eagle_kept``), not read off
    ``ClusterSnapshot.free``."""
    needs_exposure = False

    class Options(PolicyOptions):
        """``policy.options.eagle``; ``short_fraction`` partitions the on-demand nodes (the shell's)."""

        short_fraction: float = DEFAULT_SHORT_FRACTION
        probes: int = 2
        queue_order: QueueOrder = "fifo"
        on_demand_copies: bool = True

    def __init__(
        self,
        *,
        probes: int = 2,
        queue_order: QueueOrder = "fifo",
        seed: int = 0,
        on_demand_copies: bool = True,
        short_fraction: float = DEFAULT_SHORT_FRACTION,
    ) -> None:
        if probes < 1:
            raise ValueError(f"probes must be >= 1, got {probes}")
        if queue_order not in ("fifo", "srpt"):
            raise ValueError(f"queue_order must be 'fifo' or 'srpt', got {queue_order!r}")
        self.probes = probes
        self.queue_order = queue_order
        self.seed = seed
        self.on_demand_copies = on_demand_copies
        self.short_fraction = short_fraction_of({"short_fraction": short_fraction})
        self._kept = KeptNodes(node_ordinal)

    @classmethod
    def from_scenario(cls, options: Mapping[str, Any], scenario: Scenario) -> EagleScheduler:
        """``policy.options.eagle``, probing with the scenario's seed."""
        return cls(seed=scenario.seed, **options)

    def reserved_partitions(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The on-demand nodes' partitions: ``short_fraction`` of them short-only."""
        return dict(split_partitions(node_ids, self.short_fraction))

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        self._kept.update(snapshot.nodes)
        round_ = _Round(snapshot, self._kept)
        decisions: list[Decision] = []
        for view in round_.queueing:
            decisions += self._start_queued(round_, round_.nodes[view.node_id])
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
        probed = self._sample(round_, task)
        if not probed:
            return []
        best = min(
            probed,
            key=lambda s: (s.wait_s(), s.queue_length, node_ordinal(s.view.node_id)),
        )
        if self.on_demand_copies and best.view.node_class == "transient" and not best.can_start(task):
            return self._queue_with_copy(round_, task, best, round_.placeable(task))
        return [round_.place(task, best)]

    def _sample(self, round_: _Round, task: PendingTask) -> list[_NodeState]:
        """The nodes a short task probes."""
        views = round_.placeable_views(task)
        probed = _probed(self.seed, task.task_id, views, self.probes, round_.is_clear)
        return [round_.nodes[view.node_id] for view in probed]

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
