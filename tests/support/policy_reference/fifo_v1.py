"""``scheduler: fifo`` before its round was indexed (reference, verbatim): O(nodes) per task."""

from __future__ import annotations

from testbed.api.policy import Assign, ClusterSnapshot, Decision, NodeView, PendingTask, Scheduler


class FifoScheduler(Scheduler):
    needs_all_pending = False
    """It places tasks in order until the cluster is full: the head of the queue is enough."""

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        nodes = [n for n in snapshot.nodes if not n.draining and n.free_slots > 0]
        free = {n.node_id: [n.free_slots, n.free_memory_mb] for n in nodes}
        slots_left = sum(n.free_slots for n in nodes)
        decisions: list[Decision] = []
        for job in sorted(snapshot.jobs, key=lambda j: (j.submitted, j.job_id)):
            for task in job.pending:
                if slots_left == 0:  # the cluster is full: nothing else can start this round
                    return decisions
                node = _pick(task, nodes, free)
                if node is None:
                    continue
                free[node.node_id][0] -= 1
                free[node.node_id][1] -= task.ideal_memory_mb
                slots_left -= 1
                decisions.append(Assign(task.task_id, node.node_id, task.ideal_memory_mb))
        return decisions


def _pick(task: PendingTask, nodes: list[NodeView], free: dict[str, list[int]]) -> NodeView | None:
    fits = [
        n
        for n in nodes
        if n.node_class in task.allowed_classes
        and n.node_id not in task.excluded_nodes
        and free[n.node_id][0] > 0
        and free[n.node_id][1] >= task.ideal_memory_mb
    ]
    if not fits:
        return None
    preferred = [n for n in fits if n.node_id in task.preferred_nodes]
    return max(preferred or fits, key=lambda n: (free[n.node_id][0], n.node_id))
