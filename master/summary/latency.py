"""summary.json's latency figures: a median and a 99th percentile per quantity, in seconds
(``placement_latency_*`` from ``master.core.turns``, ``solver_time_*`` from the rounds' times).

``RoundTimes``: what each scheduling round took, both shells'. A round (one that asks the
scheduler: none is timed while nothing is pending) is its snapshot, the scheduler's decision
and their application (Firmament's update, solve and extraction: Gog 2017, Fig. 6.1). In
the simulator its time is the scheduler's model of it (``Scheduler.modelled_round_s``) where
it has one, else the CPU seconds the round took (``time.thread_time``): a model keeps a
charged run (``simulation.charge_policy_time``) the same from rerun to rerun, a measured time
does not; uncharged, a round's time is recorded only. A real master's rounds are timed by
their CPU seconds (the real shell gives no model).
"""

from __future__ import annotations

from typing import Any

from master.summary.coaster import percentile


def latency_fields(name: str, seconds: list[float]) -> dict[str, float | None]:
    """``<name>_p50_s`` and ``<name>_p99_s`` (to the microsecond; None without samples)."""
    return {f"{name}_p{q}_s": _micro(percentile(seconds, q)) for q in (50, 99)}


def _micro(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


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
