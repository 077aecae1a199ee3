"""What a revoked node's tasks become (CloudCoaster's copy rule: a task queued on a transient
server may have an on-demand copy elsewhere): the core journals it when a node with a queue
leaves (``master.core.rounds``). Pure: a function of the snapshot just before."""

from __future__ import annotations

from dataclasses import dataclass

from master.schedulers.eagle import node_ordinal
from testbed.api.policy import ClusterSnapshot


@dataclass(frozen=True, slots=True)
class RevocationOutcome:
    """What the revocation of a transient server does to its tasks.

    ``surviving``: (task, node) for each task queued on the revoked server whose
    on-demand copy survives; it runs there in due course, nothing to do.
    ``requeue``: tasks queued only on the revoked server (none under the copy
    rule); they are pending and unqueued, so the scheduler places them again.
    ``rerun``: tasks running on the revoked server; they are lost and must run
    again (the shell returns them to pending).
    """

    surviving: tuple[tuple[str, str], ...]
    requeue: tuple[str, ...]
    rerun: tuple[str, ...]


def revocation_outcome(snapshot: ClusterSnapshot, node_id: str) -> RevocationOutcome:
    """The fate of the tasks of ``node_id`` when it is revoked (``snapshot``: just before)."""
    revoked = next((n for n in snapshot.nodes if n.node_id == node_id), None)
    if revoked is None:
        raise ValueError(f"node {node_id!r} is not in the snapshot")
    others = sorted(
        (n for n in snapshot.nodes if n.node_id != node_id),
        key=lambda n: (n.node_class != "reserved", node_ordinal(n.node_id)),
    )
    surviving: list[tuple[str, str]] = []
    requeue: list[str] = []
    for task_id in revoked.queued:
        holder = next((n.node_id for n in others if task_id in n.queued), None)
        if holder is None:
            requeue.append(task_id)
        else:
            surviving.append((task_id, holder))
    return RevocationOutcome(tuple(surviving), tuple(requeue), tuple(t.task_id for t in revoked.running))
