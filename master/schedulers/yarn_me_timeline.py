"""YARN-ME's timeline generator: when each job would finish if its pending tasks ran regularly.

The straggler rule of ``scheduler: yarn-me`` (``master/schedulers/yarn_me.py``) asks it
whether an elastic task would end after its job would anyway. It walks, lazily, over
every node's running tasks (their expected ends) and the pending tasks that would follow
them under YARN's own rules (queue order, reservations).
"""

from __future__ import annotations

import math
from bisect import bisect_left, insort
from collections.abc import Iterable, Set
from heapq import heappop, heappush
from itertools import chain, islice, repeat
from operator import attrgetter

from master.schedulers.yarn import Demand, JobState, ModelLookup, ModelSource, Ordering
from testbed.api.policy import ClusterSnapshot, NodeView

_END = attrgetter("expected_end")
_JOB = attrgetter("job_id")
_MEMORY = attrgetter("memory_mb")

NEW_BATCH, HORIZON, EXHAUSTED = range(3)
"""How :meth:`RegularTimeline._walk` stopped."""


class RegularTimeline:
    """Per-job completion estimates if every pending task ran regularly (paper, section 3).

    Nodes free their running tasks' memory and cores at the tasks' expected ends
    (overdue tasks: now). Whenever a node has room, it is offered as YARN would:
    to the job it is reserved for, else to the jobs in queue order; that job
    takes as many of its next identical tasks as fit, or reserves the node if
    its next task does not fit. Tasks that fit no node at all never start
    (estimate: infinity). The walk is lazy: :meth:`_walk` advances only until
    the question asked is answered. Placement constraints (allowed node
    classes, locality) are ignored.
    """

    def __init__(self, snapshot: ClusterSnapshot, jobs: Iterable[JobState], ordering: Ordering):
        self.now = self.time = snapshot.now
        self._ordering = ordering
        self._jobs = [job for job in jobs if job.view.pending]
        self._index = {job.view.job_id: i for i, job in enumerate(self._jobs)}
        self._init_jobs()
        self._init_nodes(snapshot.nodes)

    # -- set-up

    def _init_jobs(self) -> None:
        count = len(self._jobs)
        self._size = [len(job.view.pending) for job in self._jobs]
        self._next = [0] * count
        self._head: list[Demand | None] = [None] * count
        self._uniform: list[bool | None] = [None] * count
        """Per job, whether all its pending tasks share one demand (found on first use)."""
        self._running = [job.view.running for job in self._jobs]
        self._batches: list[list[tuple[int, int, float]]] = [[] for _ in range(count)]
        self._reserving: list[list[int]] = [[] for _ in range(count)]
        self._shortest: dict[int, float] = {}
        self._weight = [max(job.view.weight, 1e-9) for job in self._jobs]
        self._queued = [True] * count
        """Whether the job is in the queue: it still has tasks to start."""
        self._fifo = self._ordering == "fifo"
        order = sorted(range(count), key=lambda j: (self._jobs[j].view.submitted, self._jobs[j].view.job_id))
        self._rank = [0] * count
        """Each job's place in submission order (then job id): the queue's tie-break."""
        for rank, job in enumerate(order):
            self._rank[job] = rank
        self._by_rank = order
        self._entry = [self._key(j) for j in range(count)]
        self._queue = sorted(self._entry)
        """Queued jobs' keys in queue order: (running / weight, rank) under fair share, (0, rank)
        under FIFO; ``_by_rank[key[1]]`` is the job."""

    def _init_nodes(self, nodes: tuple[NodeView, ...]) -> None:
        """Snapshot tasks end in one sorted order; the walk's own tasks end in a heap.

        Built with C-level passes only (no object per running task): this set-up
        is the fixed cost of every round that needs the timeline.
        """
        now, index = self.now, self._index
        self._usable = [not node.draining for node in nodes]
        self._free_memory = [node.memory_mb - sum(map(_MEMORY, node.running)) for node in nodes]
        self._free_slots = [node.free_slots for node in nodes]
        self._total_memory = [node.memory_mb for node in nodes]
        self._reserved = [index.get(node.reserved_for or "", -1) for node in nodes]
        for i, job in enumerate(self._reserved):
            if job >= 0:
                self._reserving[job].append(i)
        tasks = list(chain.from_iterable(node.running for node in nodes))
        owner = list(chain.from_iterable(repeat(i, len(node.running)) for i, node in enumerate(nodes)))
        ends = list(map(_END, tasks))
        order = sorted(range(len(tasks)), key=ends.__getitem__)
        by_end = list(map(tasks.__getitem__, order))
        # the snapshot's running tasks as parallel arrays in order of their ends
        self._release_end = list(map(ends.__getitem__, order))
        self._release_node = list(map(owner.__getitem__, order))
        self._release_memory = list(map(_MEMORY, by_end))
        self._release_job = list(map(index.get, map(_JOB, by_end), repeat(-1)))
        self._released = 0
        self.running_end = dict(zip(map(_JOB, by_end), self._release_end, strict=True))
        """Job id -> latest expected end of its running tasks."""
        self._events = [
            (now, i, i, 0, 0, -1) for i, node in enumerate(nodes) if node.free_slots > 0 and not node.draining
        ]
        self._seq = len(nodes)

    # -- the walk

    def _walk(self, watched: int, known: int, horizon: float) -> int:
        """Process events until the ``watched`` job has more than ``known`` batches (NEW_BATCH),
        the clock has reached ``horizon`` (HORIZON), or no event is left (EXHAUSTED).

        An event is a task end (the snapshot's, in order of their ends, or the walk's own,
        from a heap) or a node woken by a lifted reservation; after it, the node is filled
        (:meth:`_fill`). The hot loop of the policy: one function with locals.
        """
        events, batches = self._events, self._batches
        release_end, release_node = self._release_end, self._release_node
        release_memory, release_job = self._release_memory, self._release_job
        releases, released, now = len(release_end), self._released, self.now
        running, queued, queue, entry = self._running, self._queued, self._queue, self._entry
        weight, rank, fifo = self._weight, self._rank, self._fifo
        usable, fill = self._usable, self._fill
        watched_batches = batches[watched] if watched >= 0 else None
        outcome = EXHAUSTED
        while True:
            if watched_batches is not None and len(watched_batches) != known:
                outcome = NEW_BATCH
                break
            if self.time >= horizon:
                outcome = HORIZON
                break
            if released < releases and (not events or release_end[released] <= events[0][0]):
                end = release_end[released]
                self.time = end if end > now else now
                node, memory, job = release_node[released], release_memory[released], release_job[released]
                slots = 1
                released += 1
            elif events:
                self.time, _, node, memory, slots, job = heappop(events)
            else:
                break
            if job >= 0 and slots:
                count = running[job] - slots
                running[job] = count if count > 0 else 0
                if queued[job] and not fifo:  # a queued job has tasks to start: it moves up
                    del queue[bisect_left(queue, entry[job])]
                    key = entry[job] = (running[job] / weight[job], rank[job])
                    insort(queue, key)
            if usable[node]:
                fill(node, memory, slots)
        self._released = released
        return outcome

    def _fill(self, node: int, memory: int, slots: int) -> None:
        """The node got ``memory`` and ``slots`` back: offer it to its reserving job, else to
        the queue, as YARN would. The chosen job takes as many of its next identical tasks
        as fit, then moves down the queue (or leaves it, having nothing left to start)."""
        free_slots, free_memory = self._free_slots[node] + slots, self._free_memory[node] + memory
        total, head, next_, size = self._total_memory[node], self._head, self._next, self._size
        reserved, queue, entry, by_rank = self._reserved, self._queue, self._entry, self._by_rank
        while free_slots > 0:
            if reserved[node] >= 0:
                job = self._job_for(node, total)
            else:  # the first job in queue whose next task fits the node at all
                job = -1
                for _, place in queue:
                    candidate = by_rank[place]
                    if (head[candidate] or self._head_demand(candidate)).memory_mb <= total:
                        job = candidate
                        break
            if job < 0:
                break
            demand = head[job] or self._head_demand(job)
            need = demand.memory_mb
            if need > free_memory:
                if reserved[node] < 0:
                    reserved[node] = job
                    self._reserving[job].append(node)
                break
            first = next_[job]
            stop = min(first + min(free_slots, free_memory // need), size[job])
            if self._uniform[job]:
                count = stop - first
            else:
                state, count = self._jobs[job], 1
                while first + count < stop and state.demand(first + count) is demand:
                    count += 1
                head[job] = None
            free_slots -= count
            free_memory -= count * need
            end = self.time + demand.duration_s
            self._seq += 1
            heappush(self._events, (end, self._seq, node, count * need, count, job))
            self._batches[job].append((first, count, end))
            first += count
            next_[job] = first
            if reserved[node] == job:
                reserved[node] = -1
            self._running[job] += count
            if first >= size[job]:
                del queue[bisect_left(queue, entry[job])]
                self._queued[job] = False
                head[job] = None
                self._wake_reserved_nodes(job)
            elif not self._fifo:
                del queue[bisect_left(queue, entry[job])]
                key = entry[job] = (self._running[job] / self._weight[job], self._rank[job])
                insort(queue, key)
        self._free_slots[node], self._free_memory[node] = free_slots, free_memory

    def _job_for(self, node: int, total_memory: int) -> int:
        """The job the node goes to: its reserving job, else the first in queue that fits it."""
        head = self._head
        reserved = self._reserved[node]
        if reserved >= 0:
            unstarted = self._next[reserved] < self._size[reserved]
            demand = head[reserved] or (self._head_demand(reserved) if unstarted else None)
            if demand is not None and demand.memory_mb <= total_memory:
                return reserved
            self._reserved[node] = -1
        by_rank = self._by_rank
        for _, rank in self._queue:
            job = by_rank[rank]
            if (head[job] or self._head_demand(job)).memory_mb <= total_memory:
                return job
        return -1

    def _head_demand(self, job: int) -> Demand:
        """The demand of the job's next task; kept for a job whose tasks all share one."""
        demand = self._head[job]
        if demand is None:
            state = self._jobs[job]
            if self._uniform[job] is None:
                self._uniform[job] = state.uniform()
            demand = self._head[job] = state.demand(self._next[job])
        return demand

    def _wake_reserved_nodes(self, job: int) -> None:
        """A job with nothing left to start frees the nodes reserved for it."""
        for node in self._reserving[job]:
            if self._reserved[node] == job:
                self._reserved[node] = -1
                self._seq += 1
                heappush(self._events, (self.time, self._seq, node, 0, 0, -1))
        self._reserving[job].clear()

    def _key(self, job: int) -> tuple[float, int]:
        fair_share = 0.0 if self._fifo else self._running[job] / self._weight[job]
        return (fair_share, self._rank[job])

    # -- answers

    def completion_times(self) -> dict[str, float]:
        """Run the walk to its end; every job's estimated completion (inf: never)."""
        self._walk(-1, 0, math.inf)
        times = {}
        for j, job in enumerate(self._jobs):
            job_id = job.view.job_id
            if self._next[j] < self._size[j]:
                times[job_id] = math.inf
            else:
                ends = (end for _, _, end in self._batches[j])
                times[job_id] = max(self.running_end.get(job_id, -math.inf), *ends)
        return times

    def pending_end_reaches(self, job_id: str, threshold: float, excluded: Set[int]) -> tuple[bool, float]:
        """Does a pending task of the job, other than ``excluded`` positions, end at ``threshold``
        or later? Returns the answer and its evidence: an estimated end at or past the threshold,
        or the latest estimated end of those tasks (all below it).

        Walks only as far as needed: until such a task is placed, or until the walk's clock
        is so late that any task of the job still to start must end past the threshold."""
        job = self._index[job_id]
        batches, latest = self._batches[job], -math.inf
        shortest = self._shortest_duration(job)
        horizon = threshold - shortest
        checked = 0
        while True:
            for start, count, end in islice(batches, checked, None):
                if _has_unexcluded(start, count, excluded):
                    if end >= threshold:
                        return True, end
                    latest = max(latest, end)
            checked = len(batches)
            if not self._unstarted_remain(job, excluded):
                return False, latest
            outcome = self._walk(job, checked, horizon)
            if outcome == HORIZON:
                return True, self.time + shortest
            if outcome == EXHAUSTED:
                return True, math.inf

    def _unstarted_remain(self, job: int, excluded: Set[int]) -> bool:
        unstarted = self._size[job] - self._next[job]
        return unstarted > sum(1 for position in excluded if position >= self._next[job])

    def _shortest_duration(self, job: int) -> float:
        if job not in self._shortest:
            self._shortest[job] = min(demand.duration_s for demand in self._jobs[job].distinct_demands())
        return self._shortest[job]


def _has_unexcluded(start: int, count: int, excluded: Set[int]) -> bool:
    return not excluded or any(p not in excluded for p in range(start, start + count))


def estimate_completion_times(
    snapshot: ClusterSnapshot, models: ModelSource | None = None, ordering: Ordering = "fair"
) -> dict[str, float]:
    """The timeline generator as a pure function: job id -> estimated completion time.

    Jobs with no pending task are not estimated (their running tasks' expected
    ends are in the snapshot already).
    """
    lookup = ModelLookup(models)
    jobs = [JobState(job, lookup, snapshot.memory_increment_mb) for job in snapshot.jobs]
    return RegularTimeline(snapshot, jobs, ordering).completion_times()
