"""summary.json's latency figures: a median and a 99th percentile per quantity, in seconds
(``placement_latency_*`` from ``master.core.turns``, ``solver_time_*`` from the rounds' times)."""

from __future__ import annotations

from master.summary.coaster import percentile


def latency_fields(name: str, seconds: list[float]) -> dict[str, float | None]:
    """``<name>_p50_s`` and ``<name>_p99_s`` (to the microsecond; None without samples)."""
    return {f"{name}_p{q}_s": _micro(percentile(seconds, q)) for q in (50, 99)}


def _micro(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
