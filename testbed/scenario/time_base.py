"""A run's clocks: trace seconds to the run's (wall, or emulated) seconds, and its heartbeats.

The scenario's ``time_scale`` compresses trace time, the dilation stretches every run second;
heartbeats and their timeout are not compressed, only stretched. ``Scenario.time_base`` makes
one, and ``Scenario.trace`` is its ``trace``: one arithmetic, so a run's times are the same to
the bit wherever they are computed (the core takes it from ``RunSettings.time``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TimeBase:
    time_scale: float
    dilation: float
    heartbeat_interval_s: float
    heartbeat_timeout_s: float

    @property
    def wall_per_trace(self) -> float:
        return self.dilation / self.time_scale

    @property
    def trace_per_wall(self) -> float:
        """Trace seconds per run second (the chaos rules' clock)."""
        return self.time_scale / self.dilation

    def trace(self, seconds: float) -> float:
        """Run seconds for a trace-time duration (divided by time_scale, stretched by the dilation)."""
        return seconds * self.wall_per_trace


def divided(value: Any, dilation: float) -> Any:
    """A wall time ``value`` in emulated seconds (``/ dilation``, to 4 decimals); a number
    given as text (a CSV cell) stays text, anything else is returned as it is."""
    if isinstance(value, bool) or value is None or dilation == 1.0:
        return value
    if isinstance(value, int | float):
        return round(value / dilation, 4)
    if isinstance(value, str) and value.strip():
        try:
            return repr(round(float(value) / dilation, 4))
        except ValueError:
            return value
    return value
