"""Eagle's scheduling round before it was made cheaper per task (reference, verbatim).

Its pure helpers (partitions, backlog, the copy target) are unchanged: imported.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

from master.policies.base import (
    Assign,
    ClusterSnapshot,
    Decision,
    Dequeue,
    Enqueue,
    NodeView,
    PendingTask,
    Scheduler,
)
from master.policies.eagle import backlog_s, long_node_ids, node_ordinal, on_demand_copy_target, pending_by_id

QueueOrder = Literal["fifo", "srpt"]


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


class _Round:
    """The mutable bookkeeping of one ``schedule`` call over an immutable snapshot."""

    def __init__(self, snapshot: ClusterSnapshot) -> None:
        self.pending = pending_by_id(snapshot)
        long_ids = long_node_ids(snapshot)
        self.nodes = {
            n.node_id: _NodeState(
                view=n,
                free_slots=n.free_slots,
                free_memory_mb=n.free_memory_mb,
                backlog_s=backlog_s(n, self.pending, snapshot.now),
                queue_length=sum(q in self.pending for q in n.queued),
                long=n.node_id in long_ids,
            )
            for n in sorted(snapshot.nodes, key=lambda n: node_ordinal(n.node_id))
        }
        self.queued_on: dict[str, list[str]] = {}
        for state in self.nodes.values():
            for task_id in state.view.queued:
                if task_id in self.pending:
                    self.queued_on.setdefault(task_id, []).append(state.view.node_id)
        jobs = sorted(snapshot.jobs, key=lambda j: (j.submitted, j.job_id))
        self.in_job_order = [task for job in jobs for task in job.pending]
        self.job_work_s = {j.job_id: sum(t.est_duration_s for t in j.pending) for j in jobs}
        self.started: set[str] = set()

    def placeable(self, task: PendingTask) -> list[_NodeState]:
        """Nodes that may take a new task: not draining, of a class the task allows."""
        return [
            s
            for s in self.nodes.values()
            if not s.view.draining and s.view.node_class in task.allowed_classes
        ]

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
        state.long = state.long or task.long
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


def _assign(task: PendingTask, node_id: str) -> Assign:
    return Assign(task.task_id, node_id, task.ideal_memory_mb, predicted_duration_s=task.est_duration_s)


def _probe_rank(seed: int, task_id: str, node_id: str) -> int:
    """A stable pseudo-random rank: the first ``probes`` nodes by rank are a task's sample."""
    digest = hashlib.blake2b(f"{seed}/{task_id}/{node_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


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
        candidates = [s for s in round_.placeable(task) if s.view.partition == "general"]
        if not candidates:
            return []
        best = min(
            candidates,
            key=lambda s: (s.wait_s(), -s.free_slots, node_ordinal(s.view.node_id)),
        )
        return [round_.place(task, best)]

    def _place_short(self, round_: _Round, task: PendingTask) -> list[Decision]:
        """Probe ``probes`` nodes whose long bit is clear; take the least estimated wait."""
        candidates = round_.placeable(task)
        clear = [s for s in candidates if not s.long] or candidates
        ranked = sorted(clear, key=lambda s: _probe_rank(self.seed, task.task_id, s.view.node_id))
        probed = ranked[: self.probes]
        if not probed:
            return []
        best = min(
            probed,
            key=lambda s: (s.wait_s(), s.queue_length, node_ordinal(s.view.node_id)),
        )
        if self.on_demand_copies and best.view.node_class == "transient" and not best.can_start(task):
            return self._queue_with_copy(round_, task, best, candidates)
        return [round_.place(task, best)]

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
