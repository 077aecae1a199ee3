"""Capacity that can run out: when a class's nodes cannot be launched (docs/chaos.md, "Capacity").

A scenario gives a class an availability model (``chaos.<class>.capacity``)::

    capacity:
      available: {exponential: {mean: 2h}}     # how long capacity lasts (any lifetime model)
      unavailable: {gamma: {shape: 2, scale: 5m}}  # how long it stays out
      max_wait: 30m                            # a launch waiting longer is refused (default: waits)

    capacity: {trace: outages.csv, max_wait: 30m}   # unavailable windows ``from,to`` from a file

The periods alternate, available first (the initial cluster was obtained): period k
(k = 0, 1, ...) is drawn from its own generator keyed by (seed, class, k), so the
windows are a pure function of the scenario, the same in a plan and in a run. This is
SkyPilot's spot simulator's model: alternating alive/unavailable periods from two
exponentials or two gammas.
"""

from __future__ import annotations

import bisect
import csv
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.chaosmodels.lifetime_model import LifetimeModel, format_seconds
from testbed.chaosmodels.lifetimes import parse_lifetime, rng_for
from testbed.durations import parse_duration
from testbed.limits import MAX_DURATION_S, data_path, read_data_file, scenario_time

CAPACITY_STREAM = 4
MAX_WINDOWS = 100_000
"""Unavailable windows one class may have within a run's horizon (a testbed limit)."""
_KEYS = ("available", "unavailable", "trace", "max_wait")
_EXAMPLE = "{available: {exponential: {mean: 2h}}, unavailable: {exponential: {mean: 10m}}}"


@dataclass(frozen=True)
class CapacityModel:
    """Alternating periods from two models, or the fixed windows of a trace."""

    available: LifetimeModel | None = None
    unavailable: LifetimeModel | None = None
    windows: tuple[tuple[float, float], ...] = ()
    """A trace's unavailable windows [from, to), sorted and disjoint (empty for a model)."""
    source: str | None = None
    max_wait: float | None = None
    """A launch that would wait longer than this is refused (None: it waits)."""

    def describe(self) -> str:
        wait = "waits" if self.max_wait is None else f"refused after {format_seconds(self.max_wait)}"
        if self.source is not None:
            return f"capacity trace {self.source} ({len(self.windows)} windows); a launch {wait}"
        assert self.available is not None and self.unavailable is not None
        return (
            f"capacity available {self.available.describe()}, unavailable "
            f"{self.unavailable.describe()}; a launch {wait}"
        )


def parse_capacity(value: Any, base_dir: str | Path | None = None) -> CapacityModel | None:
    """The capacity model a scenario's ``capacity`` value names (None: never runs out);
    ``ValueError`` says what is wrong and how to write it."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping such as {_EXAMPLE} or {{trace: outages.csv}}; found {value!r}")
    unknown = sorted(set(value) - set(_KEYS))
    if unknown:
        raise ValueError(
            f"unknown key {unknown[0]!r}; expected available and unavailable, or trace; max_wait"
        )
    max_wait = _max_wait(value.get("max_wait"))
    if "trace" in value:
        if "available" in value or "unavailable" in value:
            raise ValueError("give either trace or available/unavailable, not both")
        path = data_path(value["trace"], base_dir, "trace")
        return CapacityModel(windows=load_windows(path), source=str(path), max_wait=max_wait)
    if "available" not in value or "unavailable" not in value:
        raise ValueError(f"give both available and unavailable (lifetime models), e.g. {_EXAMPLE}")
    return CapacityModel(
        available=_period_model(value["available"], "available", base_dir),
        unavailable=_period_model(value["unavailable"], "unavailable", base_dir),
        max_wait=max_wait,
    )


def _period_model(value: Any, what: str, base_dir: str | Path | None) -> LifetimeModel:
    try:
        model = parse_lifetime(value, base_dir)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None
    if not model.evicts:
        raise ValueError(
            f"{what}: a period model must end; give a distribution such as {{exponential: {{mean: 1h}}}}"
        )
    return model


def _max_wait(value: Any) -> float | None:
    return None if value is None else scenario_time(value, "max_wait")


def load_windows(path: Path) -> tuple[tuple[float, float], ...]:
    """Unavailable windows from a CSV of ``from,to`` rows (trace seconds or durations; a
    header row, blank rows and ``#`` comments are skipped); sorted, none overlapping."""
    text = read_data_file(path, "capacity trace")
    windows: list[tuple[float, float]] = []
    rows = [
        (line, row)
        for line, row in enumerate(csv.reader(text.splitlines()), start=1)
        if row and any(c.strip() for c in row) and not row[0].lstrip().startswith("#")
    ]
    for index, (line, row) in enumerate(rows):
        try:
            start, end = (parse_duration(cell.strip()) for cell in row)
        except (ValueError, TypeError):
            if index == 0 and not any(c.isdigit() for c in "".join(row)):
                continue  # a header such as "from,to"
            raise ValueError(
                f"capacity trace {path} line {line}: expected from,to such as 1h,90m; found {','.join(row)!r}"
            ) from None
        if end <= start or (windows and start < windows[-1][1]):
            raise ValueError(
                f"capacity trace {path} line {line}: windows must have to > from and come in "
                "order without overlapping"
            )
        windows.append((start, end))
    if len(windows) > MAX_WINDOWS:
        raise ValueError(f"capacity trace {path}: more than {MAX_WINDOWS:,} windows (a testbed limit)")
    return tuple(windows)


@dataclass
class CapacitySchedule:
    """A class's unavailable windows, drawn lazily (a pure function of model, seed and class)."""

    model: CapacityModel
    seed: int
    node_class: str
    """The class's name, that messages give."""
    class_index: int
    """The class's position in the scenario's node classes: its random stream (``lifetime_for``)."""
    _starts: list[float] = field(default_factory=list)
    _ends: list[float] = field(default_factory=list)
    _drawn_until: float = 0.0
    _period: int = 0

    def __post_init__(self) -> None:
        if self.model.source is not None:
            self._starts = [w[0] for w in self.model.windows]
            self._ends = [w[1] for w in self.model.windows]
            self._drawn_until = math.inf

    def outage_at(self, t: float) -> tuple[float, float] | None:
        """The unavailable window [from, to) holding trace time ``t``, or None."""
        self._draw_until(t)
        i = bisect.bisect_right(self._starts, t) - 1
        return (self._starts[i], self._ends[i]) if i >= 0 and t < self._ends[i] else None

    def next_change(self, t: float) -> float:
        """The first window edge after ``t`` (inf: none)."""
        outage = self.outage_at(t)
        if outage is not None:
            return outage[1]
        while True:
            i = bisect.bisect_right(self._starts, t)
            if i < len(self._starts):
                return self._starts[i]
            if self._drawn_until == math.inf:
                return math.inf
            self._draw_period()

    def windows_until(self, t: float) -> list[tuple[float, float]]:
        """Every window starting before ``t``."""
        self._draw_until(t)
        return [(s, e) for s, e in zip(self._starts, self._ends, strict=True) if s < t]

    def _draw_until(self, t: float) -> None:
        while self._drawn_until <= t:
            self._draw_period()

    def _draw_period(self) -> None:
        """Draw the next available period and the unavailable one after it."""
        if self._drawn_until == math.inf:
            return
        if len(self._starts) >= MAX_WINDOWS:
            raise ValueError(
                f"capacity of {self.node_class}: more than {MAX_WINDOWS:,} unavailable windows "
                "(a testbed limit); lengthen the available periods"
            )
        up = self._draw(self.model.available)
        down = self._draw(self.model.unavailable)
        start = self._drawn_until + up
        self._starts.append(start)
        self._ends.append(start + max(down, 0.0))
        self._drawn_until = start + max(down, 0.0)

    def _draw(self, model: LifetimeModel | None) -> float:
        assert model is not None
        rng = rng_for(self.seed, CAPACITY_STREAM, self.class_index, self._period)
        self._period += 1
        value = float(model.sample(rng, 1)[0])
        return value if math.isfinite(value) else MAX_DURATION_S
