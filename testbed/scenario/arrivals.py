"""The ``arrivals`` section of a scenario: jobs from a trace file or a seeded generator (bursty, DSS)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from testbed.arrivals.dss import DssMix, dss_jobs
from testbed.arrivals.generate import ArrivingJob, BurstyMix, bursty_jobs, load_trace
from testbed.limits import MAX_JOBS, MAX_TASKS_PER_JOB, too_large, within_max_duration
from testbed.scenario.base import Duration, Strict

DEFAULT_CUTOFF_S = 10.0


class ArrivalsSpec(Strict):
    """Jobs arriving from a trace file, the seeded bursty generator (``testbed.arrivals.generate``) or
    the YARN-ME paper's DSS trace generator (``testbed.arrivals.dss``).

    Every arriving job becomes a ``sleep`` job whose tasks run for the trace's
    durations (divided by ``time_scale``), in addition to the ``jobs`` list; a DSS
    job's tasks take its own ideal memory, other jobs' ``memory_mb``.
    """

    trace: str | None = Field(default=None, description="an Eagle/Hawk simulator trace file")
    synthetic: dict[str, Any] | None = Field(default=None, description="seed and BurstyMix knobs")
    dss: dict[str, Any] | None = Field(default=None, description="seed and DssMix knobs (YARN-ME's traces)")
    cutoff: Duration = Field(default=DEFAULT_CUTOFF_S, gt=0, description="long/short cutoff (trace time)")
    cpu_bound: bool = False
    memory_mb: int = Field(default=64, ge=1, description="ideal memory of one task")

    @model_validator(mode="after")
    def _one_source(self) -> ArrivalsSpec:
        if [self.trace, self.synthetic, self.dss].count(None) != 2:
            raise ValueError("give exactly one of trace (a file), synthetic or dss (generator knobs)")
        if self.synthetic is not None:
            self.mix()
        elif self.dss is not None:
            self.dss_mix()
        else:
            self.jobs(seed=0)  # a bad trace is a scenario error, with its line number
        return self

    def mix(self) -> BurstyMix:
        """The generator's knobs: ``synthetic`` minus ``seed``, with ``cutoff_s`` from ``cutoff``."""
        knobs = {k: v for k, v in (self.synthetic or {}).items() if k != "seed"}
        if "cutoff_s" in knobs:
            raise ValueError("synthetic.cutoff_s: set arrivals.cutoff instead (one cutoff for all jobs)")
        known = [f for f in BurstyMix.__dataclass_fields__ if f != "cutoff_s"]
        unknown = sorted(set(knobs) - set(known))
        if unknown:
            raise ValueError(f"synthetic: unknown knobs {unknown}; known: seed, {', '.join(known)}")
        if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in knobs.values()):
            raise ValueError("synthetic: every knob is a number (seconds, or per second for rates)")
        return _bounded(BurstyMix(**knobs, cutoff_s=self.cutoff))

    def dss_mix(self) -> DssMix:
        """The DSS generator's knobs: ``dss`` minus ``seed``."""
        knobs = {k: v for k, v in (self.dss or {}).items() if k != "seed"}
        known = list(DssMix.__dataclass_fields__)
        unknown = sorted(set(knobs) - set(known))
        if unknown:
            raise ValueError(f"dss: unknown knobs {unknown}; known: seed, {', '.join(known)}")
        numbers = {k: v for k, v in knobs.items() if k != "distribution"}
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in numbers.values()):
            raise ValueError("dss: every knob but distribution is an integer (seconds, tasks or MB)")
        mix = DssMix(**knobs)
        if mix.jobs > MAX_JOBS:
            raise ValueError(too_large("dss.jobs", mix.jobs, MAX_JOBS))
        if mix.tasks_max > MAX_TASKS_PER_JOB:
            raise ValueError(too_large("dss.tasks_max", mix.tasks_max, MAX_TASKS_PER_JOB))
        within_max_duration(max(mix.submit_max_s, mix.duration_max_s))
        return mix

    def jobs(self, seed: int) -> list[ArrivingJob]:
        """The arriving jobs; ``seed`` is the generator's unless the knobs give a ``seed``."""
        if self.trace is not None:
            return load_trace(self.trace, self.cutoff)
        if self.dss is not None:
            return dss_jobs(int(self.dss.get("seed", seed)), self.dss_mix(), self.cutoff)
        return bursty_jobs(int((self.synthetic or {}).get("seed", seed)), self.mix())


def _bounded(mix: BurstyMix) -> BurstyMix:
    """``mix`` if the jobs and tasks it generates stay within the limits (in expectation)."""
    within_max_duration(max(mix.horizon_s, mix.long_max_s, mix.short_max_s))
    rate = max(mix.calm_rate_per_s, mix.burst_rate_per_s) + mix.long_rate_per_s
    if rate * mix.horizon_s > MAX_JOBS:
        expected = rate * mix.horizon_s
        raise ValueError(too_large("synthetic: the jobs expected (rates x horizon_s)", expected, MAX_JOBS))
    if max(mix.short_tasks_mean, mix.long_tasks) > MAX_TASKS_PER_JOB:
        found = max(mix.short_tasks_mean, mix.long_tasks)
        raise ValueError(too_large("synthetic: short_tasks_mean and long_tasks", found, MAX_TASKS_PER_JOB))
    return mix
