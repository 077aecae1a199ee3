"""Price over time: a node class's price per hour as a step function of trace time
(docs/chaos.md, "Price over time").

``cluster.<class>.price`` is one of::

    {steps: [[0, 0.30], [2h, 0.90], [3h, 0.35]]}     # (from, price per hour), the first from 0
    {trace: prices.csv}                               # the same as ``time,price`` rows
    {walk: {start: 0.30, every: 1h, sigma: 0.2, floor: 0.1, cap: 1.0}}

``walk`` is a seeded model of spot price steps: every ``every`` the price is multiplied
by exp(N(0, sigma)) and clipped to [floor, cap]; step k is drawn from its own generator
keyed by (seed, class, k). A node's cost is the integral of the price over the trace
time it was up: cost = (1/3600) x sum over the steps it overlaps of price x overlap.
"""

from __future__ import annotations

import bisect
import csv
import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.chaosmodels.lifetime_model import format_seconds
from testbed.chaosmodels.lifetimes import MAX_SIGMA, rng_for
from testbed.limits import data_path, read_data_file, scenario_time

PRICE_STREAM = 5
MAX_STEPS = 100_000
"""Price steps one class may have (a testbed limit)."""
_EXAMPLE = "{steps: [[0, 0.3], [2h, 0.9]]}"
_WALK = ("start", "every", "sigma", "floor", "cap")


@dataclass
class PriceCurve:
    """A step function: ``prices[i]`` per hour from ``times[i]`` (trace seconds) to the next."""

    times: list[float]
    prices: list[float]
    walk: dict[str, float] | None = None
    """A random walk's parameters: steps are drawn as far as they are asked for."""
    seed: int = 0
    node_class: str = "transient"
    """The class's name, that messages give."""
    class_index: int = 1
    """The class's position in the scenario's node classes: its random stream (``lifetime_for``)."""
    source: str = ""
    _drawn_until: float = field(default=math.inf)

    def __post_init__(self) -> None:
        if self.walk is not None:
            self._drawn_until = 0.0

    def price_at(self, t: float) -> float:
        self._draw_until(t)
        return self.prices[max(0, bisect.bisect_right(self.times, t) - 1)]

    def integral(self, start: float, end: float) -> float:
        """The integral of the price per hour over [start, end) trace seconds, in price x seconds."""
        if end <= start:
            return 0.0
        self._draw_until(end)
        total = 0.0
        i = max(0, bisect.bisect_right(self.times, start) - 1)
        while i < len(self.times) and self.times[i] < end:
            upper = self.times[i + 1] if i + 1 < len(self.times) else math.inf
            total += self.prices[i] * max(0.0, min(end, upper) - max(start, self.times[i]))
            i += 1
        return total

    def describe(self) -> str:
        if self.walk is not None:
            w = self.walk
            return (
                f"random walk from {w['start']:g} every {format_seconds(w['every'])}, sigma {w['sigma']:g}, "
                f"within [{w['floor']:g}, {w['cap']:g}]"
            )
        low, high = min(self.prices), max(self.prices)
        return f"{self.source or 'steps'}: {len(self.times)} steps, {low:g} to {high:g}/h"

    def _draw_until(self, t: float) -> None:
        if self.walk is None:
            return
        every = self.walk["every"]
        while self._drawn_until <= t:
            k = len(self.times)
            if k >= MAX_STEPS:
                raise ValueError(
                    f"price of {self.node_class}: more than {MAX_STEPS:,} steps (a testbed limit)"
                )
            if k == 0:
                price = self.walk["start"]
            else:
                rng = rng_for(self.seed, PRICE_STREAM, self.class_index, k)
                price = self.prices[-1] * math.exp(float(rng.normal(0.0, self.walk["sigma"])))
            self.times.append(k * every)
            self.prices.append(min(self.walk["cap"], max(self.walk["floor"], price)))
            self._drawn_until = (k + 1) * every


def parse_price(
    value: Any,
    seed: int = 0,
    node_class: str = "transient",
    base_dir: str | Path | None = None,
    class_index: int = 1,
) -> PriceCurve:
    """The price curve a scenario's ``price`` value names, for the class ``node_class`` at
    ``class_index`` in the scenario's node classes; ``ValueError`` says what is wrong."""
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError(f"expected one of steps, trace or walk, such as {_EXAMPLE}; found {value!r}")
    kind, spec = next(iter(value.items()))
    if kind == "steps":
        times, prices = _steps(spec)
        return PriceCurve(times, prices, seed=seed, node_class=node_class, class_index=class_index)
    if kind == "trace":
        path = data_path(spec, base_dir, "trace")
        times, prices = _read_trace(path)
        return PriceCurve(
            times, prices, seed=seed, node_class=node_class, class_index=class_index, source=str(path)
        )
    if kind == "walk":
        return PriceCurve([], [], walk=_walk(spec), seed=seed, node_class=node_class, class_index=class_index)
    raise ValueError(f"unknown price model {kind!r}; expected steps, trace or walk, such as {_EXAMPLE}")


def _price(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
        raise ValueError(f"{what}: expected a price per hour >= 0; found {value!r}")
    return float(value)


def _time(value: Any, what: str) -> float:
    return scenario_time(value, what, "0, 90m or 2h")


def _steps(spec: Any) -> tuple[list[float], list[float]]:
    if (
        not isinstance(spec, list)
        or not spec
        or any(not isinstance(s, list | tuple) or len(s) != 2 for s in spec)
    ):
        raise ValueError(f"steps: expected a list of [from, price per hour] pairs, such as {_EXAMPLE}")
    times = [_time(s[0], f"steps {i} from") for i, s in enumerate(spec)]
    prices = [_price(s[1], f"steps {i} price") for i, s in enumerate(spec)]
    _check_order(times, "steps")
    return times, prices


def _check_order(times: list[float], where: str) -> None:
    if times[0] != 0.0:
        raise ValueError(f"{where}: the first step must start at 0 (the run's start); found {times[0]:g}s")
    if any(b <= a for a, b in itertools.pairwise(times)):
        raise ValueError(f"{where}: step times must increase")
    if len(times) > MAX_STEPS:
        raise ValueError(f"{where}: more than {MAX_STEPS:,} steps (a testbed limit)")


def _read_trace(path: Path) -> tuple[list[float], list[float]]:
    """``time,price`` rows (a header, blank rows and ``#`` comments skipped)."""
    text = read_data_file(path, "price trace")
    times: list[float] = []
    prices: list[float] = []
    for line, row in enumerate(csv.reader(text.splitlines()), start=1):
        if not row or not any(c.strip() for c in row) or row[0].lstrip().startswith("#"):
            continue
        if not times and not any(c.isdigit() for c in "".join(row)):
            continue  # a header such as "time,price"
        if len(row) != 2:
            raise ValueError(f"price trace {path} line {line}: expected time,price such as 2h,0.45")
        try:
            price = float(row[1])
        except ValueError:
            price = math.nan
        times.append(_time(row[0].strip(), f"price trace {path} line {line}: time"))
        prices.append(
            _price(price if math.isfinite(price) else row[1], f"price trace {path} line {line}: price")
        )
    if not times:
        raise ValueError(f"price trace {path}: no prices in the file")
    _check_order(times, f"price trace {path}")
    return times, prices


def _walk(spec: Any) -> dict[str, float]:
    if not isinstance(spec, dict) or set(spec) != set(_WALK):
        example = "{start: 0.3, every: 1h, sigma: 0.2, floor: 0.1, cap: 1}"
        raise ValueError(f"walk: expected {', '.join(_WALK)}, such as {example}; found {spec!r}")
    walk = {key: _price(spec[key], f"walk {key}") for key in ("start", "sigma", "floor", "cap")}
    walk["every"] = _time(spec["every"], "walk every")
    if walk["every"] <= 0:
        raise ValueError("walk every: must be longer than 0s")
    if walk["sigma"] > MAX_SIGMA:
        raise ValueError(
            f"walk sigma: must be at most {MAX_SIGMA:g} (a testbed limit); found {walk['sigma']:g}"
        )
    if not walk["floor"] <= walk["start"] <= walk["cap"]:
        raise ValueError("walk: need floor <= start <= cap")
    return walk
