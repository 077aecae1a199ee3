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

Each figure names its clock (README, "The run directory"): ``solver_time_p50_s`` and
``_p99_s`` are over the rounds the model timed (the run's clock), ``solver_time_p50_cpu_s``
and ``_p99_cpu_s`` over the rounds timed by their CPU seconds on this machine (neither
emulated nor dilated). Before the split (an older summary.json) every round's time went into
``solver_time_*_s`` whatever its source: ``testbed.journal.tables.clock_named`` reads such a
summary under today's names.
"""

from __future__ import annotations

from typing import Any

from master.summary.coaster import percentile


def latency_fields(name: str, seconds: list[float], unit: str = "s") -> dict[str, float | None]:
    """``<name>_p50_<unit>`` and ``<name>_p99_<unit>`` (to the microsecond; None without samples)."""
    return {f"{name}_p{q}_{unit}": _micro(percentile(seconds, q)) for q in (50, 99)}


def _micro(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


class RoundTimes:
    def __init__(self, charged: bool) -> None:
        self.charged = charged
        self.modelled: list[float] = []
        """The times of the rounds the scheduler's model timed, in round order."""
        self.measured_cpu: list[float] = []
        """The CPU seconds of the rounds without a model's time, in round order."""

    def add(self, measured_s: float, modelled_s: float | None) -> float:
        """A round's time: the model's if there is one, else ``measured_s`` (CPU seconds)."""
        if modelled_s is None:
            self.measured_cpu.append(measured_s)
            return measured_s
        self.modelled.append(modelled_s)
        return modelled_s

    def summary(self, latencies: list[float]) -> dict[str, Any]:
        """summary.json's fields: placement latency (``master.core.turns``) and round time."""
        return {
            **latency_fields("placement_latency", latencies),
            **latency_fields("solver_time", self.modelled),
            **latency_fields("solver_time", self.measured_cpu, "cpu_s"),
            "solver_time_source": self._source(),
            "policy_time_charged": self.charged,
        }

    def _source(self) -> str:
        """Where the rounds' times came from: ``model``, ``measured_cpu``, both, or ``none``."""
        sources = (("model", self.modelled), ("measured_cpu", self.measured_cpu))
        return "_and_".join(name for name, times in sources if times) or "none"

