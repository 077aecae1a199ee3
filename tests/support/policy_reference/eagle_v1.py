"""Eagle's round before it was made cheaper per task (reference): the parts that changed,
verbatim; the rest of the round is ``eagle_v2``'s (the round before node states were lazy).

Before, every task filtered the nodes afresh (placeable, then long-clear) and ranked the
clear ones by a BLAKE2b digest of the whole ``seed/task_id/node_id`` each, sorted.
"""

from __future__ import annotations

import hashlib

from testbed.api.policy import ClusterSnapshot, Decision, PendingTask
from tests.support.policy_reference import eagle_v2 as eagle


class _Round(eagle._Round):
    def placeable(self, task: PendingTask) -> list[eagle._NodeState]:
        return [
            s
            for s in self.nodes.values()
            if not s.view.draining and s.view.node_class in task.allowed_classes
        ]

    def clear(self, task: PendingTask) -> list[eagle._NodeState]:
        candidates = self.placeable(task)
        return [s for s in candidates if not s.long] or candidates


def _probe_rank(seed: int, task_id: str, node_id: str) -> int:
    """A stable pseudo-random rank: the first ``probes`` nodes by rank are a task's sample."""
    digest = hashlib.blake2b(f"{seed}/{task_id}/{node_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class EagleScheduler(eagle.EagleScheduler):
    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        """The current round with the previous per-task filters (not thread-safe: a reference)."""
        current = eagle._Round
        eagle._Round = _Round  # type: ignore[misc]
        try:
            return super().schedule(snapshot)
        finally:
            eagle._Round = current  # type: ignore[misc]

    def _sample(self, round_: eagle._Round, task: PendingTask) -> list[eagle._NodeState]:
        ranked = sorted(
            round_.clear(task), key=lambda s: _probe_rank(self.seed, task.task_id, s.view.node_id)
        )
        return ranked[: self.probes]
