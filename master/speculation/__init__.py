"""Speculative execution, the fourth policy axis: the built-in speculators by name, with
their options checked once (a bad one is a ``ValueError`` naming it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from master.speculation.rules import HadoopSpeculator, LateSpeculator, SparkSpeculator
from testbed.api.speculation import Speculate, SpeculationSnapshot, Speculator
from testbed.durations import parse_duration
from testbed.scenario.schema import SPECULATORS

_OPTIONS: dict[str, dict[str, str]] = {
    "hadoop": {"gap": "fraction", "lag": "duration"},
    "late": {"cap": "fraction", "slow_node": "fraction", "slow_task": "fraction", "min_runtime": "duration"},
    "spark": {
        "multiplier": "positive",
        "quantile": "fraction",
        "min_runtime": "duration",
        "decommission": "bool",
    },
}
"""Each speculator's options and their kind; a duration is trace time."""

_DEFAULT_DURATIONS = {"hadoop": {"lag": 60.0}, "late": {"min_runtime": 60.0}, "spark": {"min_runtime": 0.1}}
"""The durations' defaults (trace seconds), converted to wall seconds as given ones are."""


_FIELDS = {"lag": "lag_s", "min_runtime": "min_runtime_s"}


class NoSpeculation:
    name = "none"

    def speculate(self, snapshot: SpeculationSnapshot) -> list[Speculate]:
        return []


__all__ = ["SPECULATORS", "NoSpeculation", "build_speculator"]


def build_speculator(name: str, options: dict[str, Any], wall: Callable[[float], float]) -> Speculator:
    """The built-in ``name`` with ``options``; ``wall(trace_s)``: a trace-time duration in wall
    seconds (divided by ``time_scale``, stretched by the dilation)."""
    if name == "none":
        if options:
            raise ValueError(f"none takes no options, found {sorted(options)}")
        return NoSpeculation()
    known = _OPTIONS[name]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"unknown option {unknown[0]!r}: {name} takes {', '.join(sorted(known))}")
    given = {**_DEFAULT_DURATIONS[name], **options}
    knobs = {key: _checked(key, kind, given[key], wall) for key, kind in known.items() if key in given}
    renamed = {_FIELDS.get(key, key): value for key, value in knobs.items()}
    if name == "hadoop":
        return HadoopSpeculator(**renamed)
    if name == "late":
        return LateSpeculator(**renamed)
    return SparkSpeculator(**renamed)


def _checked(key: str, kind: str, value: Any, wall: Callable[[float], float]) -> Any:
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{key} must be true or false, got {value!r}")
        return value
    if kind == "duration":
        return wall(parse_duration(value))
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{key} must be a number, got {value!r}")
    if kind == "fraction" and not 0 < value <= 1:
        raise ValueError(f"{key} must be in (0, 1], got {value}")
    if kind == "positive" and value <= 0:
        raise ValueError(f"{key} must be > 0, got {value}")
    return float(value)
