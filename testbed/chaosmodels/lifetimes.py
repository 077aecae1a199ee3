"""Node lifetime models: how long a node lives before the chaos controller evicts it.

A scenario names a model per node class (``chaos.transient.lifetime``)::

    none                                   never evicted by lifetime
    low | medium | high                    Pado's three eviction rates (docs/chaos.md)
    spot                                   hours-scale spot revocations, 2-minute notice
    aws-spot | gcp-spot | gcp-preemptible | azure-spot
                                           provider presets: their notices (and AWS's
                                           rebalance recommendation, GCP preemptible's 24 h cap)
    {exponential: {mean: 10m}}
    {weibull: {shape: 0.7, scale: 20m}}
    {gamma: {shape: 2, scale: 5m}}          mean shape x scale
    {lognormal: {mu: 6.4, sigma: 1.0}}     mu and sigma of ln(lifetime in seconds)
    {uniform: {a: 1m, b: 10m}}
    {fixed: 5m}
    {empirical: lifetimes.csv}             observed lifetimes, or ``lifetime,cdf`` points
    {trace: interruptions.csv}             a real interruption trace (``testbed.chaosmodels.traces``)

All durations are trace seconds. Every node draws its lifetime from its own
generator, derived from (scenario seed, node class, node ordinal), so the n-th
transient node gets the same lifetime whatever else happens in the run.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from testbed.chaosmodels.lifetime_model import LifetimeModel, format_seconds
from testbed.chaosmodels.traces import trace_model
from testbed.durations import parse_duration
from testbed.limits import MAX_DURATION_S, data_path, read_data_file, within_max_duration
from testbed.wire.protocol import NodeClass

_erf = np.vectorize(math.erf, otypes=[float])

NODE_CLASSES: tuple[NodeClass, ...] = ("reserved", "transient")

# Domains keep the random streams of different purposes apart for one seed.
LIFETIME_STREAM = 0
STORM_WINDOW_STREAM = 1
STORM_VICTIM_STREAM = 2
REBALANCE_STREAM = 3
EPISODE_STREAM = 6
"""(4 is ``capacity``'s, 5 ``prices``'.)"""


def rng_for(seed: int, *key: int) -> np.random.Generator:
    """An independent generator for (seed, key...): same inputs, same stream, always."""
    entropy = seed % 2**64  # SeedSequence wants a non-negative integer
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key))


@dataclass(frozen=True)
class NoLifetime(LifetimeModel):
    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, np.inf)

    def describe(self) -> str:
        return "none"

    def cdf_at(self, seconds: np.ndarray) -> np.ndarray:
        return np.zeros_like(seconds, dtype=float)

    @property
    def evicts(self) -> bool:
        return False


@dataclass(frozen=True)
class Exponential(LifetimeModel):
    mean: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.exponential(self.mean, n)

    def describe(self) -> str:
        return f"exponential(mean={format_seconds(self.mean)})"

    def cdf_at(self, seconds: np.ndarray) -> np.ndarray:
        return -np.expm1(-np.maximum(seconds, 0.0) / self.mean)


@dataclass(frozen=True)
class Weibull(LifetimeModel):
    shape: float
    scale: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.scale * rng.weibull(self.shape, n)

    def describe(self) -> str:
        return f"weibull(shape={self.shape:g}, scale={format_seconds(self.scale)})"

    def cdf_at(self, seconds: np.ndarray) -> np.ndarray:
        return -np.expm1(-((np.maximum(seconds, 0.0) / self.scale) ** self.shape))


@dataclass(frozen=True)
class Gamma(LifetimeModel):
    """Gamma with ``shape`` k and ``scale`` theta: mean k * theta (SkyPilot's two-gamma model)."""

    shape: float
    scale: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.gamma(self.shape, self.scale, n)

    def describe(self) -> str:
        return f"gamma(shape={self.shape:g}, scale={format_seconds(self.scale)})"

    def cdf_at(self, seconds: np.ndarray) -> np.ndarray:
        from scipy.special import gammainc  # here: scipy costs every CLI start 0.2 s of CPU

        return gammainc(self.shape, np.maximum(seconds, 0.0) / self.scale)


@dataclass(frozen=True)
class LogNormal(LifetimeModel):
    """ln(lifetime in seconds) is normal with mean ``mu`` and deviation ``sigma``."""

    mu: float
    sigma: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.lognormal(self.mu, self.sigma, n)

    def describe(self) -> str:
        median = format_seconds(math.exp(self.mu))
        return f"lognormal(mu={self.mu:g}, sigma={self.sigma:g}; median {median})"

    def cdf_at(self, seconds: np.ndarray) -> np.ndarray:
        logs = np.log(np.maximum(seconds, 1e-300))
        return 0.5 * (1.0 + _erf((logs - self.mu) / (self.sigma * math.sqrt(2.0))))


@dataclass(frozen=True)
class Uniform(LifetimeModel):
    a: float
    b: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return rng.uniform(self.a, self.b, n)

    def describe(self) -> str:
        return f"uniform({format_seconds(self.a)}, {format_seconds(self.b)})"

    def cdf_at(self, seconds: np.ndarray) -> np.ndarray:
        return np.clip((seconds - self.a) / (self.b - self.a), 0.0, 1.0)


@dataclass(frozen=True)
class Fixed(LifetimeModel):
    seconds: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.full(n, self.seconds)

    def describe(self) -> str:
        return f"fixed({format_seconds(self.seconds)})"

    def cdf_at(self, seconds: np.ndarray) -> np.ndarray:
        return (np.asarray(seconds) >= self.seconds).astype(float)

    def cdf_before(self, seconds: np.ndarray) -> np.ndarray:
        return (np.asarray(seconds) > self.seconds).astype(float)


@dataclass(frozen=True)
class Empirical(LifetimeModel):
    """Inverse-transform sampling from a piecewise-linear CDF through ``points``.

    ``lifetimes`` is non-decreasing and ``cdf`` rises from 0 to 1; a uniform draw
    ``u`` maps to the lifetime where the interpolated CDF reaches ``u``.
    """

    source: str
    lifetimes: tuple[float, ...]
    cdf: tuple[float, ...]

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.interp(rng.uniform(0.0, 1.0, n), self.cdf, self.lifetimes)

    def describe(self) -> str:
        median = float(np.interp(0.5, self.cdf, self.lifetimes))
        return f"empirical({self.source}; {len(self.cdf)} points, median {format_seconds(median)})"

    def cdf_at(self, seconds: np.ndarray) -> np.ndarray:
        """The piecewise-linear CDF (at a jump, numpy's interpolation picks a side)."""
        return np.interp(seconds, self.lifetimes, self.cdf, left=0.0, right=1.0)


@dataclass(frozen=True)
class Capped(LifetimeModel):
    """``model``'s lifetimes, none longer than ``cap`` (a provider's maximum run time)."""

    model: LifetimeModel
    cap: float

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return np.minimum(self.model.sample(rng, n), self.cap)

    def describe(self) -> str:
        return f"{self.model.describe()} capped at {format_seconds(self.cap)}"

    def cdf_at(self, seconds: np.ndarray) -> np.ndarray:
        return np.where(np.asarray(seconds) >= self.cap, 1.0, self.model.cdf_at(seconds))

    def cdf_before(self, seconds: np.ndarray) -> np.ndarray:
        return np.where(np.asarray(seconds) > self.cap, 1.0, self.model.cdf_before(seconds))


@dataclass(frozen=True)
class Rebalance:
    """A best-effort early warning before the eviction notice (AWS's rebalance recommendation).

    A node whose lifetime ends in a notice gets one with ``probability``, ``lead`` seconds
    before its notice, ``lead`` uniform on [0, ``max_lead``] (docs/chaos.md says why).
    """

    probability: float
    max_lead: float

    def describe(self) -> str:
        return f"rebalance recommendation p={self.probability:g}, up to {format_seconds(self.max_lead)} ahead"


@dataclass(frozen=True)
class Preset(LifetimeModel):
    """A named model; docs/chaos.md explains how each one's parameters were chosen."""

    name: str
    model: LifetimeModel
    default_notice: float = 0.0
    rebalance: Rebalance | None = None

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        return self.model.sample(rng, n)

    def describe(self) -> str:
        notice = f", notice {format_seconds(self.default_notice)}" if self.default_notice else ""
        rebalance = f", {self.rebalance.describe()}" if self.rebalance else ""
        return f"{self.name} = {self.model.describe()}{notice}{rebalance}"

    def cdf_at(self, seconds: np.ndarray) -> np.ndarray:
        return self.model.cdf_at(seconds)

    def cdf_before(self, seconds: np.ndarray) -> np.ndarray:
        return self.model.cdf_before(seconds)


SPOT_MEAN_S = 18 * 3600
"""CloudCoaster's mean time to revocation of Amazon's and Google's transient servers."""


PRESETS: dict[str, LifetimeModel] = {
    "none": NoLifetime(),
    # Pado's eviction rates: one Weibull shape, the scale anchored at the half-hour mark.
    "low": Preset("low", Weibull(shape=0.7, scale=100 * 60)),
    "medium": Preset("medium", Weibull(shape=0.7, scale=50 * 60)),
    "high": Preset("high", Weibull(shape=0.7, scale=15 * 60)),
    # Spot revocations: memoryless, mean time to revocation 18 h, 2-minute notice.
    "spot": Preset("spot", Exponential(mean=SPOT_MEAN_S), default_notice=120.0),
    # Provider presets: the spot lifetime; what differs is what the vendors document,
    # their notices, AWS's rebalance recommendation and the preemptible 24 h cap.
    "aws-spot": Preset(
        "aws-spot",
        Exponential(mean=SPOT_MEAN_S),
        default_notice=120.0,
        rebalance=Rebalance(probability=0.5, max_lead=10 * 60),
    ),
    "gcp-spot": Preset("gcp-spot", Exponential(mean=SPOT_MEAN_S), default_notice=30.0),
    "gcp-preemptible": Preset(
        "gcp-preemptible", Capped(Exponential(mean=SPOT_MEAN_S), cap=24 * 3600), default_notice=30.0
    ),
    "azure-spot": Preset("azure-spot", Exponential(mean=SPOT_MEAN_S), default_notice=30.0),
}

_EXAMPLE = "{weibull: {shape: 0.7, scale: 20m}}"
_PARAMETERS: dict[str, tuple[str, ...]] = {
    "exponential": ("mean",),
    "weibull": ("shape", "scale"),
    "gamma": ("shape", "scale"),
    "lognormal": ("mu", "sigma"),
    "uniform": ("a", "b"),
}
_FAMILIES = (*_PARAMETERS, "fixed", "empirical", "trace")
MAX_LOG_SECONDS = 20.0
"""Bound of a lognormal ``mu``: e^20 s is 15 years, beyond any run."""
MAX_SIGMA = 10.0


def parse_lifetime(value: Any, base_dir: str | Path | None = None) -> LifetimeModel:
    """The model a scenario's ``lifetime`` value names; ``ValueError`` says what is wrong.

    ``base_dir`` anchors a relative ``empirical`` path (the scenario file's folder);
    without it the path is relative to the working directory.
    """
    if isinstance(value, str):
        if value in PRESETS:
            return PRESETS[value]
        raise ValueError(
            f"unknown lifetime model {value!r}; expected one of {', '.join(PRESETS)}, "
            f"or a mapping such as {_EXAMPLE}"
        )
    if not isinstance(value, dict) or len(value) != 1:
        raise ValueError(
            f"a lifetime model is a preset name ({', '.join(PRESETS)}) or a mapping with "
            f"one family ({', '.join(_FAMILIES)}), such as {_EXAMPLE}; found {value!r}"
        )
    family, params = next(iter(value.items()))
    if family == "fixed":
        return Fixed(_duration(params, "fixed", positive=True))
    if family == "empirical":
        return load_empirical(_empirical_path(params, base_dir))
    if family == "trace":
        return trace_model(params, base_dir)
    if family not in _PARAMETERS:
        raise ValueError(f"unknown lifetime family {family!r}; expected one of {', '.join(_FAMILIES)}")
    return _parametric(family, _params(family, params))


def _params(family: str, params: Any) -> dict[str, Any]:
    names = _PARAMETERS[family]
    expected = ", ".join(names)
    if not isinstance(params, dict):
        raise ValueError(f"{family}: expected a mapping of {expected}; found {params!r}")
    unknown = sorted(set(params) - set(names))
    missing = [name for name in names if name not in params]
    if unknown:
        raise ValueError(f"{family}: unknown parameter {unknown[0]!r}; expected {expected}")
    if missing:
        raise ValueError(f"{family}: missing parameter {missing[0]!r}; expected {expected}")
    return params


def _parametric(family: str, params: dict[str, Any]) -> LifetimeModel:
    if family == "exponential":
        return Exponential(_duration(params["mean"], "exponential mean", positive=True))
    if family == "weibull":
        return Weibull(
            _number(params["shape"], "weibull shape", positive=True),
            _duration(params["scale"], "weibull scale", positive=True),
        )
    if family == "gamma":
        return Gamma(
            _number(params["shape"], "gamma shape", positive=True, bound=MAX_SIGMA * 100),
            _duration(params["scale"], "gamma scale", positive=True),
        )
    if family == "lognormal":
        return LogNormal(
            _number(params["mu"], "lognormal mu (log-seconds)", bound=MAX_LOG_SECONDS),
            _number(params["sigma"], "lognormal sigma", positive=True, bound=MAX_SIGMA),
        )
    low = _duration(params["a"], "uniform a")
    high = _duration(params["b"], "uniform b")
    if high <= low:
        raise ValueError(f"uniform: b ({format_seconds(high)}) must exceed a ({format_seconds(low)})")
    return Uniform(low, high)


def _duration(value: Any, what: str, positive: bool = False) -> float:
    try:
        seconds = parse_duration(value)
    except (ValueError, TypeError):
        raise ValueError(f"{what}: expected a duration such as 30s, 5m or 2h; found {value!r}") from None
    if positive and seconds <= 0:
        raise ValueError(f"{what}: must be longer than 0s; found {value!r}")
    try:
        return within_max_duration(seconds)
    except ValueError as exc:
        raise ValueError(f"{what}: {exc}") from None


def _number(value: Any, what: str, positive: bool = False, bound: float = math.inf) -> float:
    """A finite number, > 0 if ``positive``, within [-bound, bound]."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{what}: expected a number; found {value!r}")
    if positive and value <= 0:
        raise ValueError(f"{what}: must be greater than 0; found {value!r}")
    if abs(value) > bound:
        raise ValueError(f"{what}: must be within [-{bound:g}, {bound:g}] (a testbed limit); found {value!r}")
    return float(value)


def _empirical_path(value: Any, base_dir: str | Path | None) -> Path:
    return data_path(value, base_dir, "empirical")


# ------------------------------------------------------------------ empirical CSV


def load_empirical(path: Path) -> Empirical:
    """An empirical model from a CSV of observed lifetimes or of ``lifetime,cdf`` points.

    One column: observed lifetimes; the model interpolates between order statistics
    (the i-th smallest of n sits at cumulative probability i/(n-1)), so draws stay
    within the observed range. Two columns: CDF points, linearly interpolated; a
    point (0s, 0) is implied when the first CDF value is above 0. Lifetimes may be
    seconds or durations (``5m``); a first row that is not numeric is a header;
    blank rows and rows starting with ``#`` are skipped.
    """
    rows = _read_rows(path)
    widths = {len(row) for _, row in rows}
    if widths == {1}:
        return _from_observations(path, rows)
    if widths == {2}:
        return _from_cdf_points(path, rows)
    raise ValueError(
        f"empirical {path}: every row must have one column (observed lifetimes) "
        "or every row two (lifetime,cdf); found a mix"
    )


def _read_rows(path: Path) -> list[tuple[int, list[str]]]:
    text = read_data_file(path, "empirical")
    rows = [
        (number, [cell.strip() for cell in row])
        for number, row in enumerate(csv.reader(text.splitlines()), start=1)
        if row and any(cell.strip() for cell in row) and not row[0].lstrip().startswith("#")
    ]
    if rows and not _numeric(rows[0][1][0]):
        rows = rows[1:]  # a header such as "lifetime" or "lifetime,cdf"
    if not rows:
        raise ValueError(f"empirical {path}: no lifetimes in the file")
    return rows


def _numeric(cell: str) -> bool:
    try:
        parse_duration(cell)
    except ValueError:
        return False
    return True


def _cell_duration(path: Path, line: int, cell: str) -> float:
    try:
        return parse_duration(cell)
    except ValueError:
        raise ValueError(
            f"empirical {path} line {line}: expected a lifetime such as 300 or 5m; found {cell!r}"
        ) from None


def _from_observations(path: Path, rows: list[tuple[int, list[str]]]) -> Empirical:
    observed = sorted(_cell_duration(path, line, row[0]) for line, row in rows)
    if len(observed) == 1:
        return Empirical(str(path), (observed[0], observed[0]), (0.0, 1.0))
    cdf = tuple(i / (len(observed) - 1) for i in range(len(observed)))
    return Empirical(str(path), tuple(observed), cdf)


def _from_cdf_points(path: Path, rows: list[tuple[int, list[str]]]) -> Empirical:
    lifetimes: list[float] = []
    cdf: list[float] = []
    for line, (lifetime_cell, cdf_cell) in rows:
        lifetime = _cell_duration(path, line, lifetime_cell)
        probability = _cdf_value(path, line, cdf_cell)
        if lifetimes and (lifetime < lifetimes[-1] or probability < cdf[-1]):
            raise ValueError(
                f"empirical {path} line {line}: lifetimes and cdf values must both be "
                "non-decreasing down the file"
            )
        lifetimes.append(lifetime)
        cdf.append(probability)
    if cdf[-1] != 1.0:
        raise ValueError(
            f"empirical {path}: the last cdf value must be 1 (every node is evicted by the "
            f"largest lifetime); found {cdf[-1]:g}"
        )
    if cdf[0] > 0.0:
        lifetimes.insert(0, 0.0)
        cdf.insert(0, 0.0)
    return Empirical(str(path), tuple(lifetimes), tuple(cdf))


def _cdf_value(path: Path, line: int, cell: str) -> float:
    try:
        value = float(cell)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        hint = " (give fractions, not percentages)" if 1.0 < value <= 100.0 else ""
        raise ValueError(
            f"empirical {path} line {line}: cdf must be a number in [0, 1]{hint}; found {cell!r}"
        )
    return value


# ------------------------------------------------------------------ per node


def lifetime_for(model: LifetimeModel, seed: int, class_index: int, ordinal: int) -> float | None:
    """The lifetime of the ``ordinal``-th node (0-based) of the class at ``class_index`` in the
    scenario's node classes (the shorthand's ``reserved`` is 0, ``transient`` 1), or None.

    Drawn from a generator of its own, keyed by (seed, class, ordinal): independent
    of launch order and of every other random draw in the run.
    """
    if not model.evicts:
        return None
    if class_index < 0 or ordinal < 0:
        raise ValueError(f"no node {ordinal} of class {class_index}: both count from 0")
    rng = rng_for(seed, LIFETIME_STREAM, class_index, ordinal)
    lifetime = model.lifetime_of(rng, ordinal)
    return lifetime if lifetime <= MAX_DURATION_S else None  # beyond a year and a day: never


def effective_notice(notice: float, notice_set: bool, model: LifetimeModel) -> float:
    """The warning period: the scenario's ``notice`` if it gave one, else the model's default.

    With a ``ClassChaosSpec`` ``spec``: ``effective_notice(spec.notice,
    "notice" in spec.model_fields_set, model)``.
    """
    return notice if notice_set else model.default_notice


def rebalance_lead(model: LifetimeModel, seed: int, class_index: int, ordinal: int) -> float | None:
    """How long before its eviction notice the node gets a rebalance recommendation, or None
    (the model sends none, or this node's draw says it comes without one). Its own stream,
    keyed like the lifetime's, so adding it changes no lifetime."""
    rebalance = getattr(model, "rebalance", None)
    if rebalance is None:
        return None
    rng = rng_for(seed, REBALANCE_STREAM, class_index, ordinal)
    arrives, lead = rng.uniform(0.0, 1.0, 2)
    return float(lead * rebalance.max_lead) if arrives < rebalance.probability else None
