"""Job arrivals for the Eagle and CloudCoaster experiments: a trace file, or a bursty generator.

Trace files use the format of the Eagle and Hawk simulators (their ``.tr``
files), one job per line::

    submit_time num_tasks est_task_duration task_duration_1 ... task_duration_n

What ``parse_trace`` accepts, exactly:

- fields separated by whitespace, commas, or both (``0 2 1.5 1 2`` and
  ``0,2,1.5,1,2`` are the same job);
- ``#`` starts a comment that runs to the end of the line; blank lines and
  comment-only lines are skipped;
- ``submit_time``: seconds of trace time, finite, >= 0, and never smaller than
  the previous job's (a trace is sorted by submission, as the simulators read it);
- ``num_tasks``: an integer >= 1, written as one (``3``, not ``3.0``);
- ``est_task_duration`` and each task duration: seconds, finite, >= 0;
- exactly ``num_tasks`` task durations.

A job is long when its estimated task duration reaches the cutoff
(``is_long``); the simulators read the third field as that estimate (the mean
task duration of the job). Every problem raises ``ValueError`` naming the
source and the line number.

``bursty_jobs`` draws a synthetic workload with the shape the CloudCoaster
paper describes (section 2): short jobs arriving in bursts, and a few long
jobs, with heavy-tailed task durations, that take most of the cluster time.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from statistics import fmean

import numpy as np

from testbed.limits import read_data_file


@dataclass(frozen=True, slots=True)
class ArrivingJob:
    """One job of an arrival sequence; times in seconds of trace time."""

    submit_s: float
    task_durations: tuple[float, ...]
    long: bool
    estimate_s: float | None = None
    """The estimated task duration; ``None`` means the mean of ``task_durations``."""
    memory_mb: int | None = None
    """The ideal memory of one task; ``None``: the ``arrivals`` section's ``memory_mb``."""

    @property
    def est_duration_s(self) -> float:
        """The estimate the scheduler sees (``PendingTask.est_duration_s``)."""
        return self.estimate_s if self.estimate_s is not None else fmean(self.task_durations)


def is_long(est_duration_s: float, cutoff_s: float) -> bool:
    """Eagle's job classes: long when the estimated task duration reaches the cutoff."""
    return est_duration_s >= cutoff_s


# --------------------------------------------------------------------- traces

_SEPARATORS = re.compile(r"[\s,]+")


def load_trace(path: str | Path, cutoff_s: float) -> list[ArrivingJob]:
    """The jobs of a trace file (see the module doc for the format)."""
    path = Path(path)
    return parse_trace(read_data_file(path, "trace"), cutoff_s, source=str(path))


def parse_trace(text: str, cutoff_s: float, source: str = "trace") -> list[ArrivingJob]:
    """The jobs of a trace's text; ``source`` names it in error messages."""
    jobs: list[ArrivingJob] = []
    for number, line in enumerate(text.splitlines(), start=1):
        fields = [f for f in _SEPARATORS.split(line.partition("#")[0]) if f]
        if not fields:
            continue
        where = f"{source}:{number}"
        job = _parse_job(fields, cutoff_s, where)
        if jobs and job.submit_s < jobs[-1].submit_s:
            raise ValueError(
                f"{where}: submit time {job.submit_s:g} is before the previous job's "
                f"{jobs[-1].submit_s:g}; a trace must be sorted by submit time"
            )
        jobs.append(job)
    if not jobs:
        raise ValueError(f"{source}: the trace has no jobs")
    return jobs


def _parse_job(fields: list[str], cutoff_s: float, where: str) -> ArrivingJob:
    if len(fields) < 4:
        raise ValueError(
            f"{where}: expected 'submit_time num_tasks est_duration duration...', "
            f"found {len(fields)} field(s)"
        )
    submit = _seconds(fields[0], "submit time", where)
    try:
        count = int(fields[1])
    except ValueError:
        raise ValueError(
            f"{where}: the number of tasks must be a whole number, found {fields[1]!r}"
        ) from None
    if count < 1:
        raise ValueError(f"{where}: the number of tasks must be >= 1, found {count}")
    estimate = _seconds(fields[2], "estimated task duration", where)
    durations = tuple(_seconds(f, f"duration of task {i}", where) for i, f in enumerate(fields[3:], start=1))
    if len(durations) != count:
        raise ValueError(f"{where}: the job says {count} task(s) but lists {len(durations)} duration(s)")
    return ArrivingJob(submit, durations, is_long(estimate, cutoff_s), estimate)


def _seconds(field: str, what: str, where: str) -> float:
    try:
        value = float(field)
    except ValueError:
        raise ValueError(f"{where}: the {what} must be a number, found {field!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{where}: the {what} must be finite and >= 0, found {field!r}")
    return value


def format_trace(jobs: Iterable[ArrivingJob]) -> str:
    """Jobs as a trace in the simulators' format (``parse_trace`` reads it back exactly)."""
    return "".join(_trace_line(job) + "\n" for job in jobs)


def _trace_line(job: ArrivingJob) -> str:
    fields = [repr(float(job.submit_s)), str(len(job.task_durations))]
    fields += [repr(float(x)) for x in (job.est_duration_s, *job.task_durations)]
    return " ".join(fields)


# ------------------------------------------------------------------ generator


_POSITIVE_KNOBS = (
    "horizon_s",
    "cutoff_s",
    "calm_mean_s",
    "burst_mean_s",
    "short_median_s",
    "short_max_s",
    "long_min_s",
    "long_alpha",
    "long_max_s",
)


@dataclass(frozen=True, slots=True)
class BurstyMix:
    """The synthetic workload's knobs; times in seconds of trace time.

    Short jobs arrive as a Poisson process whose rate switches between a calm
    and a burst state; state lengths are exponential. Each short job has a
    geometric number of tasks (mean ``short_tasks_mean``) with log-normal
    durations capped at ``short_max_s``. Long jobs arrive as a Poisson process,
    ``long_tasks`` tasks each, with Pareto task durations (scale
    ``long_min_s``, shape ``long_alpha``, capped at ``long_max_s``): the heavy
    tail. The caps keep every short job below the cutoff and every long job at
    or above it, so the generated classes and ``is_long`` agree.
    """

    horizon_s: float = 600.0
    cutoff_s: float = 10.0
    calm_rate_per_s: float = 0.1
    burst_rate_per_s: float = 2.0
    calm_mean_s: float = 60.0
    burst_mean_s: float = 10.0
    short_tasks_mean: float = 3.0
    short_median_s: float = 1.0
    short_sigma: float = 0.5
    short_max_s: float = 5.0
    long_rate_per_s: float = 1 / 60
    long_tasks: int = 8
    long_min_s: float = 60.0
    long_alpha: float = 1.5
    long_max_s: float = 900.0

    def __post_init__(self) -> None:
        for name in _POSITIVE_KNOBS:
            if not getattr(self, name) > 0:
                raise ValueError(f"BurstyMix.{name} must be > 0, got {getattr(self, name)}")
        if self.short_tasks_mean < 1 or self.long_tasks < 1:
            raise ValueError("BurstyMix: short_tasks_mean and long_tasks must be >= 1")
        if min(self.calm_rate_per_s, self.burst_rate_per_s, self.long_rate_per_s) < 0:
            raise ValueError("BurstyMix: arrival rates must be >= 0")
        if not self.short_max_s < self.cutoff_s <= self.long_min_s <= self.long_max_s:
            raise ValueError(
                "BurstyMix: need short_max_s < cutoff_s <= long_min_s <= long_max_s, got "
                f"{self.short_max_s} < {self.cutoff_s} <= {self.long_min_s} <= {self.long_max_s}"
            )


def bursty_jobs(seed: int, mix: BurstyMix | None = None) -> list[ArrivingJob]:
    """A seeded synthetic workload (``numpy.random.default_rng(seed)``), sorted by submission."""
    mix = mix or BurstyMix()
    rng = np.random.default_rng(seed)
    short = [_short_job(rng, mix, t) for t in _burst_arrivals(rng, mix)]
    long_count = rng.poisson(mix.long_rate_per_s * mix.horizon_s)
    long_times = np.sort(rng.uniform(0, mix.horizon_s, long_count))
    long = [_long_job(rng, mix, float(t)) for t in long_times]
    return sorted(short + long, key=lambda job: (job.submit_s, job.long))


def _burst_arrivals(rng: np.random.Generator, mix: BurstyMix) -> list[float]:
    """Arrival times of a Poisson process alternating between calm and burst rates."""
    times: list[float] = []
    start, bursting = 0.0, False
    while start < mix.horizon_s:
        mean, rate = (
            (mix.burst_mean_s, mix.burst_rate_per_s) if bursting else (mix.calm_mean_s, mix.calm_rate_per_s)
        )
        end = min(mix.horizon_s, start + rng.exponential(mean))
        times += rng.uniform(start, end, rng.poisson(rate * (end - start))).tolist()
        start, bursting = end, not bursting
    return sorted(times)


def _short_job(rng: np.random.Generator, mix: BurstyMix, submit: float) -> ArrivingJob:
    count = int(rng.geometric(1 / mix.short_tasks_mean))
    durations = rng.lognormal(math.log(mix.short_median_s), mix.short_sigma, count)
    return _job(submit, np.minimum(durations, mix.short_max_s), mix.cutoff_s)


def _long_job(rng: np.random.Generator, mix: BurstyMix, submit: float) -> ArrivingJob:
    durations = mix.long_min_s * (1 + rng.pareto(mix.long_alpha, mix.long_tasks))
    return _job(submit, np.minimum(durations, mix.long_max_s), mix.cutoff_s)


def _job(submit: float, durations: np.ndarray, cutoff_s: float) -> ArrivingJob:
    """Times rounded to milliseconds so that a formatted trace reads back the same."""
    rounded = tuple(round(float(d), 3) for d in durations)
    estimate = fmean(rounded)
    return ArrivingJob(round(submit, 3), rounded, is_long(estimate, cutoff_s), estimate)
