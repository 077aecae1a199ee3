"""Curves over the allocated fraction of a task's ideal memory: its runtime penalty and its spill.

The YARN-ME task model (``testbed.workloads.task_model``) is built from them;
they live here because a scenario's inline task models are validated with them
(``testbed.scenario.schema``), and ``testbed`` imports nothing of ``master``.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import pairwise
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class FractionCurve:
    """A value as a function of the allocated fraction of ideal memory (base of the curves).

    ``points`` are ``(fraction, value)`` pairs with fractions in (0, 1],
    non-decreasing. Between points the value is linearly interpolated; below
    the first point and above the last it is held constant. A fraction may
    appear twice to express a jump (a step): exactly at that fraction the
    later point applies. At or above a fraction of 1.0 the task is well-sized
    and the value is ``WELL_SIZED``, whatever the points say.
    """

    KIND: ClassVar[str] = "curve"
    VALUE: ClassVar[str] = "value"
    LEAST: ClassVar[float] = 0.0
    WELL_SIZED: ClassVar[float] = 0.0

    points: tuple[tuple[float, float], ...]
    _fractions: tuple[float, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        points = tuple((float(f), float(v)) for f, v in self.points)
        self._validate(points)
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "_fractions", tuple(f for f, _ in points))

    def at(self, fraction: float) -> float:
        if fraction >= 1.0:
            return self.WELL_SIZED
        right = bisect_right(self._fractions, fraction)
        if right == 0:
            return self.points[0][1]
        if right == len(self.points):
            return self.points[-1][1]
        (f0, v0), (f1, v1) = self.points[right - 1], self.points[right]
        if f1 == f0:
            return v1
        return v0 + (v1 - v0) * (fraction - f0) / (f1 - f0)

    @classmethod
    def _validate(cls, points: tuple[tuple[float, float], ...]) -> None:
        if not points:
            raise ValueError(f"a {cls.KIND} curve needs at least one (fraction, {cls.VALUE}) point")
        for fraction, value in points:
            if not 0.0 < fraction <= 1.0:
                raise ValueError(f"{cls.KIND} fraction {fraction} is outside (0, 1]")
            if not (math.isfinite(value) and value >= cls.LEAST):
                raise ValueError(f"{cls.KIND} {cls.VALUE} {value} must be finite and >= {cls.LEAST:g}")
        fractions = [f for f, _ in points]
        if any(b < a for a, b in pairwise(fractions)):
            raise ValueError(f"{cls.KIND} fractions must be non-decreasing, got {fractions}")
        if any(a == b == c for a, b, c in zip(fractions, fractions[1:], fractions[2:], strict=False)):
            raise ValueError(f"a fraction may appear at most twice (a jump) in a {cls.KIND} curve")


@dataclass(frozen=True, slots=True)
class PenaltyCurve(FractionCurve):
    """Runtime multiplier (>= 1) by allocated fraction of ideal memory; 1.0 when well-sized."""

    KIND: ClassVar[str] = "penalty"
    VALUE: ClassVar[str] = "multiplier"
    LEAST: ClassVar[float] = 1.0
    WELL_SIZED: ClassVar[float] = 1.0

    @classmethod
    def step(cls, multiplier: float) -> PenaltyCurve:
        """Any under-sized allocation costs ``multiplier`` (the paper's model of a mapper)."""
        return cls(((0.1, multiplier), (1.0, multiplier), (1.0, 1.0)))

    @classmethod
    def none(cls) -> PenaltyCurve:
        """No penalty at all: memory does not matter to this task."""
        return cls(((1.0, 1.0),))

    def multiplier(self, fraction: float) -> float:
        return self.at(fraction)


@dataclass(frozen=True, slots=True)
class SpillCurve(FractionCurve):
    """Megabytes spilled (>= 0) by allocated fraction of ideal memory; none when well-sized."""

    KIND: ClassVar[str] = "spill"
    VALUE: ClassVar[str] = "MB"

    def spilled_mb(self, fraction: float) -> float:
        return self.at(fraction)

    def scaled(self, factor: float) -> SpillCurve:
        return SpillCurve(tuple((f, mb * factor) for f, mb in self.points))
