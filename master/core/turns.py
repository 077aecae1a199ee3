"""Placement latency: from a ready task's turn to its placement (summary.json's
``placement_latency_p50_s`` and ``_p99_s``, for every scheduler).

A task's turn is when the round that first shows it pending was asked for: the first news
(``Outbox.want_round``) since the round before it, else that round's own time; never before
its job's submission. A task that
became ready while a round was being decided (``simulation.charge_policy_time``) so waits for
the round in flight and the next one, as in Firmament (Gog 2017, Fig. 6.1). The first news is the
earliest that could have made a task ready, so a latency is never understated (it may be
overstated by the time from that news to the one that made the task ready). A task placed
again after an eviction or a failure has a turn (and a latency) per placement.
"""

from __future__ import annotations

from testbed.api.policy import ClusterSnapshot


class PlacementTurns:
    def __init__(self) -> None:
        self.turns: dict[str, float] = {}
        """Each task shown pending and not placed since: its turn (run seconds)."""
        self.latencies: list[float] = []
        """Seconds from turn to placement, one per placement, in placement order."""

    def seen(self, snapshot: ClusterSnapshot, news: float | None) -> None:
        """A scheduling round's snapshot: the tasks it shows for the first time have their
        turn at ``news`` (the first news since the last round), else at the round's time."""
        now = snapshot.now
        turn = now if news is None else min(news, now)
        turns = self.turns
        for job in snapshot.jobs:
            if job.pending:
                job_turn = max(turn, min(job.submitted, now))
                for task in job.pending:
                    turns.setdefault(task.task_id, job_turn)

    def placed(self, task_id: str, now: float) -> None:
        turn = self.turns.pop(task_id, None)
        if turn is not None:
            self.latencies.append(now - turn)
