"""Memory-elasticity profiles: one map and one reduce task run alone at fractions of ideal memory.

The *ideal* budget of a task is the least budget at which it does not spill.
The peak it buffered unconstrained bounds it from above (its buffer limit,
``BUFFER_FRACTIONS`` of the budget, must exceed that peak); a buffer that
combines in memory needs less, so ``profile_workload`` bisects below that bound
for the least budget that does not spill. It runs the whole job once unconstrained (so
the profiled tasks have their inputs), then the chosen map and reduce tasks
again at each fraction of their ideal budget, and records runtime and spilled
bytes. The result is the paper's Fig. 1 (runtime normalised to the ideal run)
and a profile file per role in the format of ``testbed.workloads.task_model``.

The reducer model of the paper, ``T(m) = T_ideal + spilledBytes(m) / diskRate``,
is fitted from the ideal run and one under-sized run (the fraction nearest
0.5, as the paper's 52%), and its error is reported on the other fractions
(with the spilled bytes each run measured).
"""

from __future__ import annotations

import math
import statistics
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from testbed.wire.protocol import TaskMetrics
from testbed.workloads.catalog import BUILT_IN, plan_job
from testbed.workloads.local import LocalJob
from testbed.workloads.task_model import PenaltyCurve, Role, TaskModel, TaskProfile

MB = 2**20
UNLIMITED = 64 * 2**30
PROFILED: dict[str, ModuleType] = {
    name: module for name, module in BUILT_IN.items() if module.PROFILED_STAGES
}
"""The workloads ``testbed profile`` measures: those whose module names its profiled stages."""
BUFFER_FRACTIONS = {name: module.BUFFER_FRACTION for name, module in PROFILED.items()}
PROFILED_STAGES: dict[str, dict[Role, int]] = {
    name: module.PROFILED_STAGES for name, module in PROFILED.items()
}
NEVER_SPILLS = frozenset(name for name, module in PROFILED.items() if module.NEVER_SPILLS)
"""Workloads whose buffers do not grow with their input: a smaller budget takes their input in
smaller pieces instead of spilling, so their ideal budget is the one their unconstrained peak
needs (no bisection for the least spill-free one, which would be the smallest of all)."""
DEFAULT_FRACTIONS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1)


def ideal_budget(op: str, metrics: TaskMetrics) -> int:
    """Bytes of budget at which a task buffers what it did unconstrained without spilling."""
    fraction = BUFFER_FRACTIONS[op.partition(".")[0]]
    return max(MB // 16, math.ceil((metrics.peak_buffered_bytes + 1) / fraction))


@dataclass(frozen=True, slots=True)
class Measurement:
    fraction: float
    budget_bytes: int
    seconds: float
    spill_bytes: int
    spills: int
    merge_passes: int
    peak_rss_bytes: int = 0


@dataclass
class RoleProfile:
    workload: str
    role: Role
    stage: int
    input_bytes: int
    ideal_bytes: int
    stage_ideal_bytes: tuple[int, ...] = ()
    """Per stage of the job, the largest ideal budget of its tasks (from the unconstrained run)."""
    measurements: list[Measurement] = field(default_factory=list)

    @property
    def ideal(self) -> Measurement:
        return min(self.measurements, key=lambda m: abs(m.fraction - 1.0))

    def multiplier(self, m: Measurement) -> float:
        return m.seconds / self.ideal.seconds if self.ideal.seconds > 0 else 1.0

    def penalty_curve(self) -> PenaltyCurve:
        """Measured multipliers below 1.0 (at least 1), then the jump to 1.0 at the ideal memory."""
        under = sorted((m for m in self.measurements if m.fraction < 1.0), key=lambda m: m.fraction)
        points = [(m.fraction, max(1.0, self.multiplier(m))) for m in under]
        if points:
            points.append((1.0, points[-1][1]))
        points.append((1.0, 1.0))
        return PenaltyCurve(tuple(points))

    def task_profile(self) -> TaskProfile:
        model = TaskModel(_mb(self.ideal_bytes), self.ideal.seconds, self.penalty_curve())
        return TaskProfile(self.workload, self.role, model, tuple(map(_mb, self.stage_ideal_bytes)))

    def to_dict(self) -> dict[str, Any]:
        """The profile file: the task_model format plus what it was measured on."""
        data = self.task_profile().to_dict()
        data.update(
            stage=self.stage,
            input_bytes=self.input_bytes,
            ideal_budget_bytes=self.ideal_bytes,
            measurements=[_asdict(m) for m in self.measurements],
            spill_model=self.spill_model(),
        )
        return data

    def spill_model(self) -> dict[str, Any] | None:
        """Fit ``T(m) = T_ideal + spilled(m) / diskRate`` on the ideal run and the under-sized run
        nearest 0.5; report its relative error on every other run."""
        spilled = [m for m in self.measurements if m.fraction < 1.0 and m.spill_bytes > 0]
        if not spilled:
            return None
        fit = min(spilled, key=lambda m: abs(m.fraction - 0.5))
        extra = fit.seconds - self.ideal.seconds
        if extra <= 0:
            return {
                "fit_fraction": fit.fraction,
                "error": "the under-sized run was not slower than the ideal",
            }
        rate = fit.spill_bytes / extra
        errors = {
            f"{m.fraction:g}": (self.ideal.seconds + m.spill_bytes / rate - m.seconds) / m.seconds
            for m in self.measurements
            if m is not fit and m is not self.ideal
        }
        absolute = [abs(e) for e in errors.values()]
        return {
            "fit_fraction": fit.fraction,
            "disk_rate_mb_s": rate / MB,
            "relative_errors": errors,
            "mean_abs_error": statistics.fmean(absolute) if absolute else 0.0,
            "max_abs_error": max(absolute, default=0.0),
        }


def _mb(budget_bytes: int) -> int:
    """Whole MB (a task's memory unit), rounded up so the task does not spill."""
    return max(1, math.ceil(budget_bytes / MB))


def task_ideal_budgets(local: LocalJob) -> dict[tuple[int, int], int]:
    """Every task's ideal budget, after an unconstrained local run of the job."""
    return {
        (stage, index): ideal_budget(run.spec.op, run.metrics)
        if run.spec.op.partition(".")[0] in NEVER_SPILLS
        else least_spill_free_budget(local, stage, index, ideal_budget(run.spec.op, run.metrics))
        for (stage, index), run in list(local.tasks.items())
    }


def stage_ideal_budgets(task_budgets: dict[tuple[int, int], int]) -> tuple[int, ...]:
    """The largest ideal budget among each stage's tasks."""
    budgets: dict[int, int] = {}
    for (stage, _), budget in task_budgets.items():
        budgets[stage] = max(budgets.get(stage, 0), budget)
    return tuple(budgets[stage] for stage in sorted(budgets))


def _asdict(m: Measurement) -> dict[str, Any]:
    return {name: getattr(m, name) for name in Measurement.__slots__}


def least_spill_free_budget(
    local: LocalJob, stage: int, index: int, upper: int, precision: float = 0.02
) -> int:
    """The least budget (within ``precision`` of ``upper``) at which a task does not spill,
    found by bisection from ``upper``, which does not spill by construction.

    For a buffer that combines in memory (wordcount, PageRank contributions) the peak it held
    unconstrained overstates its need: under pressure it combines instead of spilling."""
    low, high = 0, upper
    while high - low > upper * precision:
        middle = (low + high) // 2
        run = local.run_task(stage, index, max(1, middle), attempt=len(local.tasks) + 1)
        low, high = (low, middle) if run.metrics.spill_bytes == 0 else (middle, high)
    return high


def profile_workload(
    job: Any,
    seed: int,
    fractions: tuple[float, ...] = DEFAULT_FRACTIONS,
    repeat: int = 1,
    work: Path | None = None,
) -> list[RoleProfile]:
    """Profile the job's map and reduce roles (see ``PROFILED_STAGES``); fastest of ``repeat`` runs."""
    with tempfile.TemporaryDirectory(prefix="profile-", dir=work) as tmp:
        local = LocalJob(plan_job(job, seed, None), Path(tmp))  # type: ignore[arg-type]
        local.run(UNLIMITED)
        task_budgets = task_ideal_budgets(local)
        stage_budgets = stage_ideal_budgets(task_budgets)
        profiles = []
        for role, stage in PROFILED_STAGES[job.workload].items():
            base = local.tasks[(stage, 0)]
            ideal = task_budgets[(stage, 0)]
            profile = RoleProfile(job.workload, role, stage, base.metrics.bytes_in, ideal, stage_budgets)
            for fraction in fractions:
                runs = [
                    local.run_task(stage, 0, max(1, int(ideal * fraction)), attempt=len(local.tasks) + r + 1)
                    for r in range(repeat)
                ]
                best = min(runs, key=lambda r: r.seconds)
                profile.measurements.append(
                    Measurement(
                        fraction,
                        int(ideal * fraction),
                        best.seconds,
                        best.metrics.spill_bytes,
                        best.metrics.spills,
                        best.metrics.merge_passes,
                        best.metrics.peak_rss_bytes,
                    )
                )
            profiles.append(profile)
        return profiles


def format_profile(profile: RoleProfile) -> str:
    lines = [
        f"{profile.workload} {profile.role} (stage {profile.stage}): "
        f"input {profile.input_bytes / MB:.1f} MB, ideal budget {profile.ideal_bytes / MB:.2f} MB, "
        f"ideal runtime {profile.ideal.seconds:.3f} s",
        f"{'fraction':>8} {'budget MB':>10} {'runtime s':>10} {'normalised':>10} {'spilled MB':>11} "
        f"{'spills':>6} {'passes':>6}",
    ]
    for m in profile.measurements:
        lines.append(
            f"{m.fraction:>8.2f} {m.budget_bytes / MB:>10.2f} {m.seconds:>10.3f} "
            f"{profile.multiplier(m):>10.2f} {m.spill_bytes / MB:>11.2f} {m.spills:>6} {m.merge_passes:>6}"
        )
    model = profile.spill_model()
    if model is None:
        lines.append("reducer model: no run spilled, nothing to fit")
    elif "error" in model:
        lines.append(f"reducer model: cannot fit at fraction {model['fit_fraction']}: {model['error']}")
    else:
        lines.append(
            f"reducer model T(m) = T_ideal + spilled(m)/diskRate, fitted at {model['fit_fraction']:g}: "
            f"diskRate {model['disk_rate_mb_s']:.1f} MB/s, error on the other runs: "
            f"mean {model['mean_abs_error']:.1%}, max {model['max_abs_error']:.1%}"
        )
    return "\n".join(lines)


def run_job_at_fraction(job: Any, seed: int, work: Path, fraction: float) -> LocalJob:
    """Run a whole job locally with every task at ``fraction`` of its own ideal budget
    (measured by an unconstrained run first, in ``work/ideal``)."""
    ideal = LocalJob(plan_job(job, seed, None), work / "ideal").run(UNLIMITED)  # type: ignore[arg-type]
    budgets = {key: ideal_budget(run.spec.op, run.metrics) for key, run in ideal.tasks.items()}
    ideal.cleanup()
    constrained = LocalJob(ideal.plan, work / "constrained")
    return constrained.run(lambda stage, index: max(1, int(budgets[(stage, index)] * fraction)))
