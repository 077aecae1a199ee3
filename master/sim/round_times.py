"""What each scheduling round of a simulated run took: summary.json's ``solver_time_p50_s``
and ``_p99_s``, and, with ``simulation.charge_policy_time``, the virtual seconds it is charged.

A round (one that asks the scheduler: none is timed while nothing is pending) is its
snapshot, the scheduler's decision and their application (Firmament's update, solve and
extraction: Gog 2017, Fig. 6.1). Its time is the scheduler's model of it
(``Scheduler.modelled_round_s``) where it has one, else the CPU seconds the round took here
(``time.thread_time``): a model keeps a charged run the same from rerun to rerun, a measured
time does not. Uncharged, a round's time is recorded only: the clock does not move.
"""

from __future__ import annotations

from typing import Any

from master.summary.latency import latency_fields


class RoundTimes:
    def __init__(self, charged: bool) -> None:
        self.charged = charged
        self.seconds: list[float] = []
        """Each round's time, in round order."""
        self.modelled = 0
        """Rounds timed by the scheduler's model (the others measured)."""

    def add(self, measured_s: float, modelled_s: float | None) -> float:
        """A round's time: the model's if there is one, else ``measured_s`` (CPU seconds)."""
        spent = measured_s if modelled_s is None else modelled_s
        self.modelled += modelled_s is not None
        self.seconds.append(spent)
        return spent

    def summary(self, latencies: list[float]) -> dict[str, Any]:
        """summary.json's fields: placement latency (``master.core.turns``) and round time."""
        return {
            **latency_fields("placement_latency", latencies),
            **latency_fields("solver_time", self.seconds),
            "solver_time_source": self._source(),
            "policy_time_charged": self.charged,
        }

    def _source(self) -> str:
        """Where the rounds' times came from: ``model``, ``measured_cpu``, both, or ``none``."""
        if not self.seconds:
            return "none"
        if self.modelled == len(self.seconds):
            return "model"
        return "measured_cpu" if not self.modelled else "model_and_measured_cpu"
