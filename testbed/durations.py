"""Durations and sizes as people write them in scenarios: ``30s``, ``5m``, ``2h``, ``250ms``, ``1.5``."""

from __future__ import annotations

import math
import re

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
_PATTERN = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(ms|s|min|m|h|d)?\s*$")


def parse_duration(value: str | float | int) -> float:
    """Seconds from a number (already seconds) or a string with a unit suffix."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    else:
        match = _PATTERN.match(value) if isinstance(value, str) else None
        if not match:
            raise ValueError(f"expected a duration such as 30s, 5m or 2h, found {value!r}")
        number, unit = match.groups()
        seconds = float(number) * _UNITS[unit or "s"]
    if not math.isfinite(seconds):
        raise ValueError(f"a duration must be a finite number of seconds, found {value!r}")
    if seconds < 0:
        raise ValueError("a duration cannot be negative")
    return seconds


def parse_rate(value: str | float | int) -> float:
    """Events per second from ``2/min``, ``0.5/s``, ``10/h`` or a bare number (per second)."""
    rate = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        rate = float(value)
    elif isinstance(value, str) and "/" in value:
        count, _, per = value.partition("/")
        try:
            rate = float(count) / parse_duration("1" + per.strip() if per.strip().isalpha() else per)
        except (ValueError, ZeroDivisionError):
            rate = None
    if rate is None or not math.isfinite(rate):
        raise ValueError(f"expected a rate such as 2/min or 0.5/s, found {value!r}")
    return rate
