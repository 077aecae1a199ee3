"""Every number a report or a comparison shows, derived from a loaded run.

Formulas (docs/reports.md explains them for readers):

- JCT = finish of the job's last task - submission; queueing delay = start of
  its first task - submission. Statistics cover the jobs that finished without
  failing; percentiles interpolate linearly between order statistics.
- relaunched tasks = relaunches caused by evictions or lost data (attempts beyond
  each task's first, less the ones that retried the task's own failure: an
  error, out of memory, a full disk, killed); relaunched ratio = relaunched
  tasks / tasks; error relaunches = the retries of the task's own failures.
- node-seconds of a class = sum over its nodes of (end or run end) - launch;
  cost = node-seconds / 3600 * price per hour of the class; with a moving price
  p(trace seconds) (``cluster.<class>.price``), cost = sum over its nodes of the
  integral of p over [launch, end] x time scale, / 3600 / time scale.
- memory utilisation(t) = memory of the task attempts running at t / memory of
  the nodes alive at t; its mean is the ratio of the two integrals over the run.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from testbed.app.report.records import Job, TaskAttempt, attempts_by_job
from testbed.app.report.rundir import RunData
from testbed.chaosmodels.prices import parse_price

FAILED_STATUSES = frozenset({"failed", "killed", "cancelled", "canceled", "lost", "timeout"})
FAILED_ATTEMPTS = frozenset({"failed", "killed", "lost"})

# summary.json keys that the report shows in its own sections (or that are not metrics).
KNOWN_SUMMARY_KEYS = frozenset({
    "jobs", "succeeded", "failed", "mean_jct_s", "p50_jct_s", "p95_jct_s", "max_jct_s",
    "makespan_s", "evictions", "relaunched_tasks", "relaunched_ratio", "policy", "name",
    "seed", "time_scale", "oom_failures", "enospc_failures", "task_failures",
    "error_relaunches", "spill_bytes", "shuffle_bytes",
    "dilation", "fidelity_mode", "wall", "fidelity",
})  # fmt: skip
OWN_FAILURES = frozenset({"error", "oom", "enospc", "killed"})
"""Failures of an attempt by itself, whose retry is not a relaunch caused by an eviction."""


@dataclass(frozen=True)
class Stats:
    """count, mean, median, 95th percentile and maximum of some durations."""

    count: int
    mean: float | None
    p50: float | None
    p95: float | None
    max: float | None

    @classmethod
    def of(cls, values: list[float]) -> Stats:
        if not values:
            return cls(0, None, None, None, None)
        data = np.asarray(values, dtype=float)
        return cls(
            count=len(values),
            mean=float(data.mean()),
            p50=float(np.percentile(data, 50)),
            p95=float(np.percentile(data, 95)),
            max=float(data.max()),
        )


@dataclass(frozen=True)
class ClassCost:
    node_class: str
    nodes: int
    node_seconds: float
    price_per_hour: float | None
    moving_cost: float | None = None
    """The cost under the class's moving ``price`` (``testbed.chaosmodels.prices``), if it has one."""

    @property
    def cost(self) -> float | None:
        if self.moving_cost is not None:
            return self.moving_cost
        if self.price_per_hour is None:
            return None
        return self.node_seconds / 3600 * self.price_per_hour

    @property
    def mean_price(self) -> float | None:
        """The price per hour paid on average: cost / node-hours (the price, if it is constant)."""
        if self.moving_cost is None or self.node_seconds <= 0:
            return self.price_per_hour
        return self.moving_cost / (self.node_seconds / 3600)


@dataclass(frozen=True)
class StepSeries:
    """A piecewise-constant series: ``values[i]`` holds from ``times[i]`` to ``times[i+1]``."""

    times: list[float]
    values: list[float]


@dataclass(frozen=True)
class MemoryUsage:
    allocated_mb: StepSeries
    capacity_mb: StepSeries
    mean_utilisation: float | None
    peak_utilisation: float | None


@dataclass(frozen=True)
class DataVolumes:
    bytes_in: float
    bytes_out: float
    spill_bytes: float
    spills: float
    merge_passes: float


@dataclass(frozen=True)
class Elasticity:
    """Memory elasticity of some succeeded task attempts (one job's, or all of them)."""

    attempts: int
    elastic: int
    mean_ratio: float | None
    min_ratio: float | None
    elastic_spill_bytes: float
    elastic_error_s: float | None
    regular_error_s: float | None


@dataclass
class RunMetrics:
    jobs: int
    succeeded: int
    failed: int
    unfinished: int
    jct: Stats
    queue: Stats
    jct_by_workload: dict[str, Stats]
    queue_by_workload: dict[str, Stats]
    makespan_s: float | None
    tasks: int
    attempts: int
    relaunched_tasks: int
    relaunched_ratio: float | None
    error_relaunches: int
    attempts_by_status: dict[str, int]
    evictions: int
    bytes_lost: float
    data: DataVolumes
    data_by_job: dict[str, DataVolumes]
    costs: list[ClassCost]
    memory: MemoryUsage
    nodes_alive: dict[str, StepSeries]
    decision_counts: dict[str, int] | None
    decisions_by_job: dict[str, dict[str, int]] | None
    elasticity_by_job: dict[str, Elasticity] | None = None
    elasticity: Elasticity | None = None
    policy_metrics: dict[str, float] = field(default_factory=dict)
    failures_by_cause: dict[str, int] = field(default_factory=dict)
    """Failed attempts by their ``failure`` (oom, enospc, error, ...)."""

    @property
    def total_cost(self) -> float | None:
        known = [c.cost for c in self.costs if c.cost is not None]
        return sum(known) if known else None

    def headline(self) -> dict[str, float | None]:
        """The metrics a comparison puts side by side, keyed by a readable name."""
        return {
            "mean JCT (s, emulated)": self.jct.mean,
            "p50 JCT (s, emulated)": self.jct.p50,
            "p95 JCT (s, emulated)": self.jct.p95,
            "max JCT (s, emulated)": self.jct.max,
            "mean queueing delay (s, emulated)": self.queue.mean,
            "makespan (s, emulated)": self.makespan_s,
            "jobs succeeded": float(self.succeeded),
            "relaunched ratio": self.relaunched_ratio,
            "relaunches after task errors": float(self.error_relaunches),
            "evictions": float(self.evictions),
            "spill bytes": self.data.spill_bytes,
            "shuffle bytes written": self.data.bytes_out,
            "bytes read (input + shuffle)": self.data.bytes_in,
            "cost": self.total_cost,
            "mean memory utilisation (0-1)": self.memory.mean_utilisation,
        }


def compute_metrics(run: RunData) -> RunMetrics:
    completed = [j for j in run.jobs if is_completed(j)]
    failed = [j for j in run.jobs if j.status.lower() in FAILED_STATUSES]
    tasks = sum(j.tasks or 0 for j in run.jobs) or len({t.logical_key for t in run.tasks})
    relaunched, error_relaunches = _relaunches(run)
    return RunMetrics(
        jobs=len(run.jobs),
        succeeded=len(completed),
        failed=len(failed),
        unfinished=len(run.jobs) - len(completed) - len(failed),
        jct=Stats.of([j.jct_s for j in completed if j.jct_s is not None]),
        queue=Stats.of([j.queue_s for j in run.jobs if j.queue_s is not None]),
        jct_by_workload=_by_workload(completed, "jct_s"),
        queue_by_workload=_by_workload(run.jobs, "queue_s"),
        makespan_s=_makespan(run.jobs),
        tasks=tasks,
        attempts=len(run.tasks),
        relaunched_tasks=relaunched,
        relaunched_ratio=relaunched / tasks if tasks else None,
        error_relaunches=error_relaunches,
        attempts_by_status=dict(Counter(t.status for t in run.tasks)),
        evictions=len(run.evictions),
        bytes_lost=sum(e.bytes_lost or 0.0 for e in run.evictions),
        data=_volumes(run.tasks),
        data_by_job={job: _volumes(mine) for job, mine in attempts_by_job(run.tasks).items()},
        costs=class_costs(run),
        memory=memory_usage(run),
        nodes_alive=nodes_alive(run),
        decision_counts=_decision_counts(run),
        decisions_by_job=_decisions_by_job(run),
        elasticity_by_job=_elasticity_by_job(run),
        elasticity=elasticity(run.tasks),
        policy_metrics=policy_metrics(run.summary),
        failures_by_cause=_failures_by_cause(run.tasks),
    )


def _failures_by_cause(attempts: list[TaskAttempt]) -> dict[str, int]:
    causes = Counter(a.failure for a in attempts if a.status == "failed" and a.failure)
    return dict(sorted(causes.items()))


def is_completed(job: Job) -> bool:
    """Finished without failing: the jobs whose JCT the statistics cover."""
    return job.jct_s is not None and job.status.lower() not in FAILED_STATUSES


def _by_workload(jobs: list[Job], key: str) -> dict[str, Stats]:
    grouped: dict[str, list[float]] = defaultdict(list)
    for job in jobs:
        value = getattr(job, key)
        if value is not None:
            grouped[job.workload].append(value)
    return {workload: Stats.of(values) for workload, values in sorted(grouped.items())}


def _makespan(jobs: list[Job]) -> float | None:
    """From the first submission to the last job finish."""
    submits = [j.submit_s for j in jobs if j.submit_s is not None]
    finishes = [j.finish_s for j in jobs if j.finish_s is not None]
    if not submits or not finishes:
        return None
    return max(finishes) - min(submits)


def _relaunches(run: RunData) -> tuple[int, int]:
    """(relaunches caused by evictions or lost data, retries of the tasks' own failures).

    A job row of a master that counts error relaunches apart (``error_relaunches``)
    is taken as it is; otherwise its relaunches include the retries, which are
    counted off the attempts: an attempt after one that failed by itself."""
    by_job = attempts_by_job(run.tasks)
    if not run.jobs:
        retries = _error_retries(run.tasks)
        return len(run.tasks) - len({t.logical_key for t in run.tasks}) - retries, retries
    relaunched = errors = 0
    for job in run.jobs:
        counted = job.extra.get("error_relaunches")
        retries = int(counted) if counted is not None else _error_retries(by_job.get(job.job_id, []))
        relaunched += (job.relaunched_tasks or 0) - (0 if counted is not None else retries)
        errors += retries
    return relaunched, errors


def _error_retries(attempts: list[TaskAttempt]) -> int:
    by_task: dict[tuple[str, str, int], list[TaskAttempt]] = defaultdict(list)
    for attempt in attempts:
        by_task[attempt.logical_key].append(attempt)
    retries = 0
    for mine in by_task.values():
        ordered = sorted(mine, key=lambda a: a.attempt)
        retries += sum(1 for a in ordered[:-1] if a.status == "failed" and a.failure in OWN_FAILURES)
    return retries


def _volumes(tasks: list[Any]) -> DataVolumes:
    return DataVolumes(
        bytes_in=sum(t.bytes_in for t in tasks),
        bytes_out=sum(t.bytes_out for t in tasks),
        spill_bytes=sum(t.spill_bytes for t in tasks),
        spills=sum(t.spills for t in tasks),
        merge_passes=sum(t.merge_passes for t in tasks),
    )


def class_costs(run: RunData) -> list[ClassCost]:
    end = run.end_s
    grouped = defaultdict(list)
    for node in run.nodes:
        grouped[node.node_class].append(node)
    costs = []
    for node_class, nodes in sorted(grouped.items()):
        spans = [
            (n.launched_s, max(n.launched_s, min(n.ended_s if n.ended_s is not None else end, end)))
            for n in nodes
        ]
        seconds = sum(stop - start for start, stop in spans)
        price = _price(run, node_class, nodes)
        costs.append(ClassCost(node_class, len(nodes), seconds, price, _moving_cost(run, node_class, spans)))
    return costs


def _moving_cost(run: RunData, node_class: str, spans: list[tuple[float, float]]) -> float | None:
    """Sum over the nodes of the integral of the class's moving price over the trace time each
    was up (emulated seconds x time scale), / 3600, / time scale: the cost in emulated time, as
    the constant price's is. None without a moving price."""
    spec = run.class_spec(node_class)
    if spec is None or spec.price is None:
        return None
    seed = run.seed if isinstance(run.seed, int) else 0
    curve = parse_price(spec.price, seed, node_class, class_index=run.class_index(node_class))
    scale = run.time_scale
    return sum(curve.integral(start * scale, stop * scale) for start, stop in spans) / 3600 / scale


def _price(run: RunData, node_class: str, nodes: list[Any]) -> float | None:
    recorded = [n.price_per_hour for n in nodes if n.price_per_hour is not None]
    if recorded:
        return recorded[0]
    spec = run.class_spec(node_class)
    return None if spec is None else spec.price_per_hour


def _node_memory(run: RunData, node_class: str) -> float:
    spec = run.class_spec(node_class)
    return float(spec.memory_mb) if spec is not None else 0.0


def step_series(changes: list[tuple[float, float]], end: float) -> StepSeries:
    """Integrate (time, delta) changes into a step series that starts at 0 and runs to ``end``.

    Changes at or after ``end`` are left out: what is alive when the record stops
    stays at its level to the end instead of dropping to zero there.
    """
    deltas: dict[float, float] = defaultdict(float)
    for t, delta in changes:
        if t < end:
            deltas[t] += delta
    times, values, level = [min([0.0, *deltas])], [0.0], 0.0
    for t in sorted(deltas):
        level += deltas[t]
        if t == times[-1]:
            values[-1] = level
        else:
            times.append(t)
            values.append(level)
    if times[-1] < end:
        times.append(end)
        values.append(level)
    return StepSeries(times, values)


def _intervals_to_changes(intervals: list[tuple[float, float, float]]) -> list[tuple[float, float]]:
    changes = []
    for start, stop, amount in intervals:
        if stop > start:
            changes += [(start, amount), (stop, -amount)]
    return changes


def _integral(series: StepSeries) -> float:
    times = series.times
    return sum(series.values[i] * (times[i + 1] - times[i]) for i in range(len(times) - 1))


def memory_usage(run: RunData) -> MemoryUsage:
    end = run.end_s
    allocated = step_series(_intervals_to_changes([
        (t.start_s, min(t.end_s if t.end_s is not None else end, end), t.memory_mb)
        for t in run.tasks
    ]), end)  # fmt: skip
    capacity = step_series(_intervals_to_changes([
        (n.launched_s, min(n.ended_s if n.ended_s is not None else end, end),
         _node_memory(run, n.node_class))
        for n in run.nodes
    ]), end)  # fmt: skip
    capacity_area = _integral(capacity)
    ratios = _pointwise_ratio(allocated, capacity)
    return MemoryUsage(
        allocated_mb=allocated,
        capacity_mb=capacity,
        mean_utilisation=_integral(allocated) / capacity_area if capacity_area > 0 else None,
        peak_utilisation=max(ratios.values) if capacity_area > 0 else None,
    )


def utilisation_series(memory: MemoryUsage) -> StepSeries:
    return _pointwise_ratio(memory.allocated_mb, memory.capacity_mb)


def _pointwise_ratio(numerator: StepSeries, denominator: StepSeries) -> StepSeries:
    """numerator / denominator on the union of their breakpoints (0 where nothing is alive)."""
    times = np.union1d(numerator.times, denominator.times)
    top, bottom = _values_at(numerator, times), _values_at(denominator, times)
    ratios = np.divide(top, bottom, out=np.zeros_like(top), where=bottom > 0)
    return StepSeries(times.tolist(), ratios.tolist())


def _values_at(series: StepSeries, times: np.ndarray) -> np.ndarray:
    """The series' value at each of ``times`` (0 before its first breakpoint)."""
    index = np.searchsorted(series.times, times, side="right") - 1
    values = np.asarray(series.values, dtype=float)
    return np.where(index >= 0, values[np.clip(index, 0, None)], 0.0)


def nodes_alive(run: RunData) -> dict[str, StepSeries]:
    end = run.end_s
    per_class: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    for node in run.nodes:
        stop = min(node.ended_s if node.ended_s is not None else end, end)
        per_class[node.node_class].append((node.launched_s, stop, 1.0))
    return {
        node_class: step_series(_intervals_to_changes(intervals), end)
        for node_class, intervals in sorted(per_class.items())
    }


def _decision_counts(run: RunData) -> dict[str, int] | None:
    if run.decisions is None:
        return None
    return dict(Counter(d.decision for d in run.decisions).most_common())


def _decisions_by_job(run: RunData) -> dict[str, dict[str, int]] | None:
    if run.decisions is None:
        return None
    grouped: dict[str, Counter[str]] = defaultdict(Counter)
    for decision in run.decisions:
        grouped[decision.job_id][decision.decision] += 1
    return {job: dict(counts) for job, counts in grouped.items()}


def elastic_measured(tasks: list[TaskAttempt]) -> list[TaskAttempt]:
    """Succeeded attempts placed by a memory-aware scheduler (they carry an ideal memory and a
    predicted runtime): the ones an elasticity report covers."""
    return [
        t
        for t in tasks
        if t.status == "succeeded" and t.end_s is not None and t.ideal_memory_mb and t.predicted_s is not None
    ]


def model_error_s(task: TaskAttempt) -> float:
    """Measured (end - start) minus predicted runtime: > 0 when the task ran longer."""
    return (task.end_s or task.start_s) - task.start_s - (task.predicted_s or 0.0)


def elasticity(tasks: list[TaskAttempt]) -> Elasticity | None:
    """Allocation ratios (memory / ideal), elastic attempts, their spill, and the task model's
    mean absolute error; None when no attempt was placed by a memory-aware scheduler."""
    measured = elastic_measured(tasks)
    if not measured:
        return None
    ratios = [t.allocation_ratio or 0.0 for t in measured]
    elastic = [t for t in measured if t.elastic]
    regular = [t for t in measured if not t.elastic]
    return Elasticity(
        attempts=len(measured),
        elastic=len(elastic),
        mean_ratio=float(np.mean(ratios)),
        min_ratio=min(ratios),
        elastic_spill_bytes=sum(t.spill_bytes for t in elastic),
        elastic_error_s=_mean_abs_error(elastic),
        regular_error_s=_mean_abs_error(regular),
    )


def _mean_abs_error(tasks: list[TaskAttempt]) -> float | None:
    return float(np.mean([abs(model_error_s(t)) for t in tasks])) if tasks else None


def _elasticity_by_job(run: RunData) -> dict[str, Elasticity] | None:
    by_job = {job: elasticity(mine) for job, mine in attempts_by_job(run.tasks).items()}
    known = {job: stats for job, stats in by_job.items() if stats is not None}
    return known or None


def policy_metrics(summary: dict[str, Any] | None) -> dict[str, float]:
    """summary.json's numeric keys that no other section shows (policy-specific metrics)."""
    if not summary:
        return {}
    return {
        key: float(value)
        for key, value in summary.items()
        if key not in KNOWN_SUMMARY_KEYS and isinstance(value, int | float) and not isinstance(value, bool)
    }


# summary.json key -> how to read the same quantity off the recomputed metrics
_CROSS_CHECKS = {
    "jobs": lambda m: m.jobs,
    "succeeded": lambda m: m.succeeded,
    "failed": lambda m: m.failed,
    "mean_jct_s": lambda m: m.jct.mean,
    "p50_jct_s": lambda m: m.jct.p50,
    "p95_jct_s": lambda m: m.jct.p95,
    "max_jct_s": lambda m: m.jct.max,
    "makespan_s": lambda m: m.makespan_s,
    "evictions": lambda m: m.evictions,
    "relaunched_tasks": lambda m: m.relaunched_tasks,
    "relaunched_ratio": lambda m: m.relaunched_ratio,
    "error_relaunches": lambda m: m.error_relaunches,
    "spill_bytes": lambda m: m.data.spill_bytes,
    "shuffle_bytes": lambda m: m.data.bytes_out,
    "oom_failures": lambda m: m.failures_by_cause.get("oom", 0),
    "enospc_failures": lambda m: m.failures_by_cause.get("enospc", 0),
}


def summary_disagreements(summary: dict[str, Any] | None, metrics: RunMetrics) -> list[str]:
    """Where summary.json and the recomputation from the tables differ by more than 1%.

    The report shows the recomputed numbers (one formula for every run); a
    disagreement points at a bug in the master's bookkeeping or in this module.
    """
    lines = []
    for key, read in _CROSS_CHECKS.items():
        recorded, recomputed = (summary or {}).get(key), read(metrics)
        if not isinstance(recorded, int | float) or recomputed is None:
            continue
        if abs(recorded - recomputed) > 0.01 * max(abs(recorded), abs(recomputed), 1e-9):
            lines.append(f"summary.json says {key} = {recorded:g}, the tables give {recomputed:g}")
    return lines
