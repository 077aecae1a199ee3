"""Statistics a paper needs: bootstrap confidence intervals, ratios with their intervals,
an A/A split for the noise floor, and host noise told apart from schedule variance.

Intervals are 95% percentile bootstraps (``scipy.stats.bootstrap``, 2,000
resamples, a fixed seed so that a table is the same every time it is written).
The percentile method is used rather than BCa because sweeps have few runs per
cell, where BCa's acceleration estimate is unstable. With fewer than two values
there is no interval.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 0

Statistic = Callable[..., "np.ndarray | float"]
"""``statistic(values, axis=-1)``, vectorised along ``axis`` (as scipy's bootstrap calls it)."""


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float | None = None
    high: float | None = None

    def text(self, digits: int = 3) -> str:
        """``12.3 [11.8, 12.9]``; just the value without an interval."""
        if self.low is None or self.high is None:
            return f"{self.value:.{digits}g}"
        return f"{self.value:.{digits}g} [{self.low:.{digits}g}, {self.high:.{digits}g}]"


def mean(values: np.ndarray, axis: int = -1) -> np.ndarray | float:
    return np.mean(values, axis=axis)


def p50(values: np.ndarray, axis: int = -1) -> np.ndarray | float:
    return np.percentile(values, 50, axis=axis)


def p95(values: np.ndarray, axis: int = -1) -> np.ndarray | float:
    return np.percentile(values, 95, axis=axis)


def estimate(values: Sequence[float], statistic: Statistic = mean) -> Estimate | None:
    """The statistic of ``values`` with its bootstrap interval; None without values."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return None
    value = float(statistic(data))
    if data.size < 2:
        return Estimate(value)
    if np.all(data == data[0]):
        return Estimate(value, value, value)
    from scipy import stats  # seconds to import: only when an interval is asked for

    result = stats.bootstrap(
        (data,),
        statistic,
        confidence_level=CONFIDENCE,
        n_resamples=RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(SEED),
    )
    interval = result.confidence_interval
    return Estimate(value, float(interval.low), float(interval.high))


def ratio(baseline: Sequence[float], other: Sequence[float], statistic: Statistic = mean) -> Estimate | None:
    """statistic(other) / statistic(baseline), each sample resampled on its own; None when
    either is empty or the baseline's statistic is 0."""
    a, b = np.asarray(baseline, dtype=float), np.asarray(other, dtype=float)
    if a.size == 0 or b.size == 0 or float(statistic(a)) == 0:
        return None
    value = float(statistic(b)) / float(statistic(a))
    if a.size < 2 or b.size < 2:
        return Estimate(value)
    rng = np.random.default_rng(SEED)
    denominators = statistic(rng.choice(a, (RESAMPLES, a.size)), axis=-1)
    numerators = statistic(rng.choice(b, (RESAMPLES, b.size)), axis=-1)
    resampled = numerators[denominators != 0] / denominators[denominators != 0]
    tail = 50 * (1 - CONFIDENCE)
    low, high = np.percentile(resampled, [tail, 100 - tail])
    return Estimate(value, float(low), float(high))


def halves(values: Sequence[float]) -> tuple[list[float], list[float]]:
    """An A/A split: alternate values (runs in the order they ran, jobs in submission
    order) into two halves, so a drift over time lands in both."""
    return list(values[0::2]), list(values[1::2])


def noise_split(by_seed: dict[object, list[float]]) -> tuple[float | None, float | None]:
    """(host noise, schedule variance) as standard deviations: within a seed (its repeats
    differ only by the host: timing, load), pooled over the seeds that have repeats; and
    between the seeds' means (what the eviction schedule and the seeded inputs add)."""
    within = [statistics.variance(v) for v in by_seed.values() if len(v) > 1]
    means = [statistics.fmean(v) for v in by_seed.values() if v]
    host = statistics.fmean(within) ** 0.5 if within else None
    schedule = statistics.stdev(means) if len(means) > 1 else None
    return host, schedule
