"""Statistics a paper needs: confidence intervals, ratios with their intervals,
an A/A split for the noise floor, and host noise told apart from schedule variance.

From ``MIN_BOOTSTRAP`` (5) values on, intervals are 95% percentile bootstraps
(``scipy.stats.bootstrap``, 2,000 resamples, a fixed seed so that a table is the
same every time it is written). The percentile method is used rather than BCa
because sweeps have few runs per cell, where BCa's acceleration estimate is
unstable. Below 5 values a bootstrap only resamples the few values there are and
its interval is far too narrow (two seeds gave ``1.26 [1.24, 1.28]``): a mean
then gets Student's t interval (n - 1 degrees of freedom), and a percentile or
a ratio no interval; ``Estimate.samples`` says how many values an estimate had,
so that a table can warn (``few_samples_warning``). With fewer than two values
there is no interval.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 0
MIN_BOOTSTRAP = 5
"""Fewest values for a bootstrap interval."""

Statistic = Callable[..., "np.ndarray | float"]
"""``statistic(values, axis=-1)``, vectorised along ``axis`` (as scipy's bootstrap calls it)."""


@dataclass(frozen=True)
class Estimate:
    value: float
    low: float | None = None
    high: float | None = None
    samples: int = field(default=0, compare=False)
    """How many values the estimate is over (a ratio: the smaller of its two samples)."""

    @property
    def few(self) -> bool:
        """Fewer values than a bootstrap needs: a t interval (a mean) or none."""
        return self.samples < MIN_BOOTSTRAP

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
    """The statistic of ``values`` with its interval (a bootstrap; below ``MIN_BOOTSTRAP``
    values a mean's t interval, else none); None without values."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return None
    value, n = float(statistic(data)), int(data.size)
    if n < 2 or (n < MIN_BOOTSTRAP and statistic is not mean):
        return Estimate(value, samples=n)
    if np.all(data == data[0]):
        return Estimate(value, value, value, n)
    from scipy import stats  # seconds to import: only when an interval is asked for

    if n < MIN_BOOTSTRAP:
        low, high = stats.t.interval(CONFIDENCE, n - 1, loc=value, scale=stats.sem(data))
        return Estimate(value, float(low), float(high), n)
    result = stats.bootstrap(
        (data,),
        statistic,
        confidence_level=CONFIDENCE,
        n_resamples=RESAMPLES,
        method="percentile",
        rng=np.random.default_rng(SEED),
    )
    interval = result.confidence_interval
    return Estimate(value, float(interval.low), float(interval.high), n)


def ratio(baseline: Sequence[float], other: Sequence[float], statistic: Statistic = mean) -> Estimate | None:
    """statistic(other) / statistic(baseline), each sample resampled on its own (no interval
    when either has fewer than ``MIN_BOOTSTRAP`` values); None when either is empty or the
    baseline's statistic is 0."""
    a, b = np.asarray(baseline, dtype=float), np.asarray(other, dtype=float)
    if a.size == 0 or b.size == 0 or float(statistic(a)) == 0:
        return None
    value, n = float(statistic(b)) / float(statistic(a)), int(min(a.size, b.size))
    if n < MIN_BOOTSTRAP:
        return Estimate(value, samples=n)
    rng = np.random.default_rng(SEED)
    denominators = statistic(rng.choice(a, (RESAMPLES, a.size)), axis=-1)
    numerators = statistic(rng.choice(b, (RESAMPLES, b.size)), axis=-1)
    resampled = numerators[denominators != 0] / denominators[denominators != 0]
    tail = 50 * (1 - CONFIDENCE)
    low, high = np.percentile(resampled, [tail, 100 - tail])
    return Estimate(value, float(low), float(high), n)


def few_samples_warning(estimates: Iterable[Estimate | None], unit: str) -> str | None:
    """One line when an estimate has fewer than ``MIN_BOOTSTRAP`` values, else None."""
    few = sorted({e.samples for e in estimates if e is not None and e.few})
    if not few:
        return None
    counts = ", ".join(map(str, few))
    return (
        f"warning: only {counts} {unit} behind some numbers (fewer than {MIN_BOOTSTRAP}): their means "
        f"have Student's t intervals, their percentiles and ratios none; {MIN_BOOTSTRAP} or more "
        "give bootstrap intervals"
    )


def halves(values: Sequence[float]) -> tuple[list[float], list[float]]:
    """An A/A split: alternate values (runs in the order they ran, jobs in submission
    order) into two halves, so a drift over time lands in both."""
    return list(values[0::2]), list(values[1::2])


def pairs_by(values: Sequence[float], keys: Sequence[str]) -> tuple[list[float], list[float]]:
    """An A/A split that pairs like with like: within each key (a job's workload), its
    values in order taken two by two, the first of each pair in one half and the second
    in the other, so both halves hold the same keys; a key's last odd value is left out."""
    by_key: dict[str, list[float]] = {}
    for key, value in zip(keys, values, strict=True):
        by_key.setdefault(key, []).append(value)
    first = [v for group in by_key.values() for v in group[0 : len(group) - 1 : 2]]
    second = [v for group in by_key.values() for v in group[1::2]]
    return first, second


def noise_split(by_seed: dict[object, list[float]]) -> tuple[float | None, float | None]:
    """(host noise, schedule variance) as standard deviations: within a seed (its repeats
    differ only by the host: timing, load), pooled over the seeds that have repeats; and
    between the seeds' means (what the eviction schedule and the seeded inputs add)."""
    within = [statistics.variance(v) for v in by_seed.values() if len(v) > 1]
    means = [statistics.fmean(v) for v in by_seed.values() if v]
    host = statistics.fmean(within) ** 0.5 if within else None
    schedule = statistics.stdev(means) if len(means) > 1 else None
    return host, schedule
