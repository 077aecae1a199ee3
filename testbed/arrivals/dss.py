"""The YARN-ME paper's simulation traces (section 5.3): the job generator of its simulator, DSS.

A trace is ``jobs`` single-phase jobs. Each job draws, independently, its submission
time, its number of tasks, its tasks' ideal memory and their duration (the same for
all its tasks), each from a uniform or an exponential distribution between a minimum
and a maximum, as DSS's ``samples/traces/trace-generator.py`` does: uniform values are
truncated to integers; exponential ones are ``Exp(1)`` draws scaled so that the
largest of the trace lands on the maximum, then truncated. Memory is drawn in units of
the 100 MB allocation increment, as DSS draws it. The paper's ranges are the defaults:
arrivals uniform in [0, 1000] s, [1, 100] tasks, [0.1, 10] GB, [50, 500] s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from testbed.arrivals.generate import ArrivingJob, is_long

Distribution = Literal["uniform", "exp"]


@dataclass(frozen=True, slots=True)
class DssMix:
    """A DSS trace's parameters; times in seconds of trace time, memory in MB."""

    jobs: int = 100
    distribution: Distribution = "uniform"
    submit_min_s: int = 0
    submit_max_s: int = 1000
    tasks_min: int = 1
    tasks_max: int = 100
    memory_min_mb: int = 100
    memory_max_mb: int = 10_000
    memory_unit_mb: int = 100
    duration_min_s: int = 50
    duration_max_s: int = 500

    def __post_init__(self) -> None:
        if self.distribution not in ("uniform", "exp"):
            raise ValueError(f"DssMix.distribution must be 'uniform' or 'exp', got {self.distribution!r}")
        if self.jobs < 1 or self.tasks_min < 1 or self.memory_unit_mb < 1:
            raise ValueError("DssMix: jobs, tasks_min and memory_unit_mb must be >= 1")
        if self.submit_min_s < 0 or self.duration_min_s < 0 or self.memory_min_mb < self.memory_unit_mb:
            raise ValueError("DssMix: times must be >= 0 and memory_min_mb >= memory_unit_mb")
        for low, high in (
            ("submit_min_s", "submit_max_s"),
            ("tasks_min", "tasks_max"),
            ("memory_min_mb", "memory_max_mb"),
            ("duration_min_s", "duration_max_s"),
        ):
            if getattr(self, low) > getattr(self, high):
                raise ValueError(f"DssMix: {low} ({getattr(self, low)}) > {high} ({getattr(self, high)})")


def dss_jobs(seed: int, mix: DssMix, cutoff_s: float) -> list[ArrivingJob]:
    """A seeded DSS trace (``numpy.random.default_rng(seed)``), sorted by submission."""
    rng = np.random.default_rng(seed)
    draw = _uniform if mix.distribution == "uniform" else _exponential
    submits = draw(rng, mix.submit_min_s, mix.submit_max_s, mix.jobs)
    tasks = draw(rng, mix.tasks_min, mix.tasks_max, mix.jobs)
    durations = draw(rng, mix.duration_min_s, mix.duration_max_s, mix.jobs)
    unit = mix.memory_unit_mb
    memory = draw(rng, mix.memory_min_mb // unit, mix.memory_max_mb // unit, mix.jobs) * unit
    jobs = [
        ArrivingJob(float(s), (float(d),) * int(n), is_long(float(d), cutoff_s), float(d), int(m))
        for s, n, d, m in zip(submits, np.maximum(tasks, 1), durations, memory, strict=True)
    ]
    return sorted(jobs, key=lambda job: job.submit_s)


def _uniform(rng: np.random.Generator, low: int, high: int, n: int) -> np.ndarray:
    return rng.uniform(low, high, n).astype(np.int64)


def _exponential(rng: np.random.Generator, low: int, high: int, n: int) -> np.ndarray:
    draws = rng.exponential(1.0, n)
    return (draws * (high - low) / draws.max() + low).astype(np.int64)
