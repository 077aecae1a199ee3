"""``testbed compare RUN_DIR...``: runs side by side, as ratios to the first (baseline) run.

Every number is recomputed from each run's tables with the same formulas as
the report (testbed.app.report.metrics), so that runs recorded by different
versions of a policy are compared like for like. Runs are labelled by the part
of their policy that differs between them (e.g. ``spark`` and ``pado``), so a
ratio reads ``pado / spark mean JCT (s, emulated) 0.41x``.

The metrics that are statistics over a run's jobs (mean, p50 and p95 JCT, mean
queueing delay) come with 95% bootstrap intervals over those jobs, and so do
their ratios (``testbed/app/stats.py``; below 5 jobs a mean gets a t interval,
a percentile or ratio none, and the table says so); the A/A column is the
baseline against itself, each workload's jobs (in submission order) paired two
by two, the first of a pair in one half and the second in the other, so that a
sort job is only ever set against a sort job: the noise floor a ratio must
clear. The other metrics are one number per run: compare their spread over
seeds with ``testbed sweep``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field
from pathlib import Path

from testbed.app.overlay import plot_cdfs
from testbed.app.report.document import markdown_table, number
from testbed.app.report.errors import UsageError
from testbed.app.report.metrics import compute_metrics, is_completed, policy_metrics
from testbed.app.report.rundir import RunData, load_run
from testbed.app.stats import (
    Estimate,
    Statistic,
    estimate,
    few_samples_warning,
    mean,
    p50,
    p95,
    pairs_by,
    ratio,
)

POLICY_AXES = ("scheduler", "strategy", "autoscaler")
SAMPLED: dict[str, tuple[str, Statistic]] = {
    "mean JCT (s, emulated)": ("jct", mean),
    "p50 JCT (s, emulated)": ("jct", p50),
    "p95 JCT (s, emulated)": ("jct", p95),
    "mean queueing delay (s, emulated)": ("queue", mean),
}
"""Metrics that are a statistic over the run's jobs: (which sample, which statistic)."""


@dataclass(frozen=True)
class ComparedRun:
    label: str
    path: Path
    policy: str
    seed: object
    partial: bool
    values: dict[str, float | None]
    dilation: float = 1.0
    samples: dict[str, list[float]] = field(default_factory=dict)
    """``jct``: the succeeded jobs' JCTs, ``queue``: the jobs' queueing delays, in
    submission order."""
    workloads: dict[str, list[str]] = field(default_factory=dict)
    """Each sample's jobs' workloads, in the same order."""


@dataclass(frozen=True)
class Comparison:
    runs: list[ComparedRun]
    metrics: list[str]

    @property
    def baseline(self) -> ComparedRun:
        return self.runs[0]

    def value(self, metric: str, run: int) -> float | None:
        return self.runs[run].values.get(metric)

    def ratio(self, metric: str, run: int) -> float | None:
        """``run``'s value over the baseline's; None when undefined (missing or 0 baseline)."""
        value, base = self.value(metric, run), self.value(metric, 0)
        if value is None or base is None:
            return None
        if base == 0:
            return 1.0 if value == 0 else None
        return value / base

    def interval(self, metric: str, run: int) -> Estimate | None:
        """The metric of ``run`` with its 95% interval over the run's jobs."""
        if metric not in SAMPLED:
            return None
        sample, statistic = SAMPLED[metric]
        return estimate(self.runs[run].samples.get(sample, []), statistic)

    def ratio_interval(self, metric: str, run: int) -> Estimate | None:
        """``run``'s metric over the baseline's, with its interval (each run's jobs resampled)."""
        if metric not in SAMPLED:
            return None
        sample, statistic = SAMPLED[metric]
        base, other = (self.runs[i].samples.get(sample, []) for i in (0, run))
        return ratio(base, other, statistic)

    def aa_interval(self, metric: str) -> Estimate | None:
        """The A/A ratio: the baseline's second jobs of each workload's pairs over the first."""
        if metric not in SAMPLED:
            return None
        sample, statistic = SAMPLED[metric]
        values = self.baseline.samples.get(sample, [])
        first, second = pairs_by(values, self.baseline.workloads.get(sample, [""] * len(values)))
        return ratio(first, second, statistic)

    def warning(self) -> str | None:
        """One line when a run's interval or ratio is over fewer jobs than a bootstrap needs."""
        estimates = [
            estimate_
            for metric in self.metrics
            for i in range(len(self.runs))
            for estimate_ in (self.interval(metric, i), self.ratio_interval(metric, i) if i else None)
        ]
        return few_samples_warning([*estimates, *map(self.aa_interval, self.metrics)], "jobs")

    def plot(self, stem: Path) -> list[Path]:
        """JCT and queueing-delay CDFs of every run overlaid (``<stem>-jct-cdf`` and
        ``<stem>-queue-cdf``, PNG and SVG)."""
        paths = []
        for sample, xlabel in (
            ("jct", "job completion time (s, emulated)"),
            ("queue", "queueing delay (s, emulated)"),
        ):
            runs = {run.label: [run.samples.get(sample, [])] for run in self.runs}
            paths += plot_cdfs(runs, xlabel, stem.with_name(f"{stem.name}-{sample}-cdf"))
        return paths

    def ratio_lines(self) -> list[str]:
        """One sentence per metric and run, e.g. ``pado / spark mean JCT (s, emulated) 0.41x``."""
        return [
            f"{self.runs[i].label} / {self.baseline.label} {metric} {_times(self.ratio(metric, i))}"
            for i in range(1, len(self.runs))
            for metric in self.metrics
        ]

    def to_markdown(self) -> str:
        legend = markdown_table(
            ["run", "policy (scheduler / strategy / autoscaler)", "seed", "dilation", "directory"],
            [
                [
                    run.label + (" (baseline)" if i == 0 else "") + (" (partial)" if run.partial else ""),
                    run.policy,
                    "-" if run.seed is None else str(run.seed),
                    f"{run.dilation:g}",
                    str(run.path),
                ]
                for i, run in enumerate(self.runs)
            ],
        )
        headers = [
            "metric",
            *(run.label for run in self.runs),
            *(f"{run.label} / {self.baseline.label}" for run in self.runs[1:]),
            f"A/A: {self.baseline.label} halves",
        ]
        rows = [
            [
                metric,
                *(self._value_text(metric, i) for i in range(len(self.runs))),
                *(self._ratio_text(metric, i) for i in range(1, len(self.runs))),
                _interval_times(self.aa_interval(metric)),
            ]
            for metric in self.metrics
        ]
        note = (
            "Times are emulated seconds (wall seconds / the run's dilation). "
            "[low, high]: 95% bootstrap interval over the run's jobs; A/A: the baseline's "
            "jobs of each workload paired in submission order, the second of each pair over the "
            "first, the noise floor."
        )
        warning = self.warning()
        return (
            f"# Comparison (baseline: {self.baseline.label})\n\n{legend}\n\n{note}\n\n"
            f"{markdown_table(headers, rows)}\n" + (f"\n**{warning}**\n" if warning else "")
        )

    def _value_text(self, metric: str, run: int) -> str:
        interval = self.interval(metric, run)
        text = number(_rounded(self.value(metric, run)))
        if interval is None or interval.low is None or interval.high is None:
            return text
        return f"{text} [{interval.low:.3g}, {interval.high:.3g}]"

    def _ratio_text(self, metric: str, run: int) -> str:
        interval = self.ratio_interval(metric, run)
        text = _times(self.ratio(metric, run))
        if interval is None or interval.low is None or interval.high is None:
            return text
        return f"{text} [{interval.low:.2f}, {interval.high:.2f}]"

    def to_csv(self) -> str:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(
            [
                "metric",
                *(run.label for run in self.runs),
                *(f"{run.label} / {self.baseline.label}" for run in self.runs[1:]),
            ]
        )
        for metric in self.metrics:
            writer.writerow(
                [
                    metric,
                    *(_csv_number(self.value(metric, i)) for i in range(len(self.runs))),
                    *(_csv_number(self.ratio(metric, i)) for i in range(1, len(self.runs))),
                ]
            )
        return buffer.getvalue()


def compare_runs(run_dirs: list[str | Path]) -> Comparison:
    if not run_dirs:
        raise UsageError("compare needs at least one run directory")
    runs = [load_run(path) for path in run_dirs]
    labels = run_labels(runs)
    shared = _shared_summary_keys(runs)
    compared = []
    for run, label in zip(runs, labels, strict=True):
        values = compute_metrics(run).headline()
        extra = policy_metrics(run.summary)
        values.update({key: extra[key] for key in shared})
        compared.append(
            ComparedRun(
                label,
                run.path,
                _policy_text(run),
                run.seed,
                run.partial,
                values,
                run.dilation,
                *_samples(run),
            )
        )
    return Comparison(compared, list(compared[0].values))


def _samples(run: RunData) -> tuple[dict[str, list[float]], dict[str, list[str]]]:
    """The jobs' JCTs and queueing delays, as the report's statistics take them, and the
    workload of each."""
    jobs = sorted(run.jobs, key=lambda j: (j.submit_s if j.submit_s is not None else 0.0, j.job_id))
    chosen = {
        "jct": [j for j in jobs if is_completed(j) and j.jct_s is not None],
        "queue": [j for j in jobs if j.queue_s is not None],
    }
    samples = {name: [float(getattr(j, f"{name}_s")) for j in picked] for name, picked in chosen.items()}
    return samples, {name: [j.workload for j in picked] for name, picked in chosen.items()}


def run_labels(runs: list[RunData]) -> list[str]:
    """Short unique labels: the policy axes that differ (else the workload plugins' versions
    when those differ, else the strategy), then the
    scenario's name, the seed, the scenario settings that differ (``lifetime=high``) and
    last a run number (the legend gives each run's directory), as far as needed to tell
    the runs apart."""
    varying = [axis for axis in POLICY_AXES if len({run.policy_label(axis) for run in runs}) > 1]
    if not varying and len({run.plugin_workloads for run in runs}) > 1:  # versions of a workload plugin
        labels = [run.plugin_workloads or "built-in workloads" for run in runs]
    else:
        labels = ["+".join(run.policy_label(axis) for axis in varying or ["strategy"]) for run in runs]
    if len(set(labels)) < len(labels) and len({run.name for run in runs}) > 1:
        labels = [f"{run.name}: {label}" for label, run in zip(labels, runs, strict=True)]
    if len(set(labels)) < len(labels) and len({str(run.seed) for run in runs}) == len(runs):
        labels = [f"{label} seed={run.seed}" for label, run in zip(labels, runs, strict=True)]
    if len(set(labels)) < len(labels) and (settings := _differing_settings(runs)):
        labels = [f"{label} {setting}" for label, setting in zip(labels, settings, strict=True)]
    if len(set(labels)) < len(labels):
        labels = [f"{label} run {i}" for i, label in enumerate(labels, 1)]
    return _unique(labels)


def _differing_settings(runs: list[RunData], shown: int = 2) -> list[str]:
    """Per run, the first ``shown`` scenario settings (other than name and seed) whose values
    differ between the runs, as ``key=value`` with the key's last part; [] when none do."""
    flat = [_flatten(run.scenario) for run in runs]
    keys = [k for k in dict.fromkeys(k for f in flat for k in f) if k not in ("name", "seed")]
    differing = [k for k in keys if len({repr(f.get(k)) for f in flat}) > 1][:shown]
    if not differing:
        return []
    return [", ".join(f"{k.rsplit('.', 1)[-1]}={f.get(k, '-')}" for k in differing) for f in flat]


def _flatten(value: object, prefix: str = "") -> dict[str, object]:
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in _flatten(item, f"{prefix}{key}.").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in _flatten(item, f"{prefix}{i}.").items()}
    return {prefix.removesuffix("."): value}


def _unique(labels: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    unique = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return unique


def _shared_summary_keys(runs: list[RunData]) -> list[str]:
    """Policy-specific summary keys that every run reports (in the first run's order)."""
    keys = [policy_metrics(run.summary) for run in runs]
    return [key for key in keys[0] if all(key in other for other in keys[1:])]


def _policy_text(run: RunData) -> str:
    """The policy axes, then the run's workload plugins with their versions, if any."""
    policy = " / ".join(run.policy_label(axis) for axis in POLICY_AXES)
    return f"{policy}; workloads: {run.plugin_workloads}" if run.plugin_workloads else policy


def _interval_times(value: Estimate | None) -> str:
    if value is None:
        return ""
    if value.low is None or value.high is None:
        return f"{value.value:.2f}x"
    return f"{value.value:.2f}x [{value.low:.2f}, {value.high:.2f}]"


def _times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _csv_number(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else format(value, ".10g")
