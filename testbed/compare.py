"""``testbed compare RUN_DIR...``: runs side by side, as ratios to the first (baseline) run.

Every number is recomputed from each run's tables with the same formulas as
the report (testbed.report.metrics), so that runs recorded by different
versions of a policy are compared like for like. Runs are labelled by the part
of their policy that differs between them (e.g. ``spark`` and ``pado``), so a
ratio reads ``pado / spark mean JCT (s, wall) 0.41x``.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from testbed.report.document import markdown_table, number
from testbed.report.errors import UsageError
from testbed.report.metrics import compute_metrics, policy_metrics
from testbed.report.rundir import RunData, load_run

POLICY_AXES = ("scheduler", "strategy", "autoscaler")


@dataclass(frozen=True)
class ComparedRun:
    label: str
    path: Path
    policy: str
    seed: object
    partial: bool
    values: dict[str, float | None]
    dilation: float = 1.0


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

    def ratio_lines(self) -> list[str]:
        """One sentence per metric and run, e.g. ``pado / spark mean JCT (s, wall) 0.41x``."""
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
        ]
        rows = [
            [
                metric,
                *(number(_rounded(self.value(metric, i))) for i in range(len(self.runs))),
                *(_times(self.ratio(metric, i)) for i in range(1, len(self.runs))),
            ]
            for metric in self.metrics
        ]
        note = "Times are emulated seconds (wall seconds / the run's dilation)."
        return (
            f"# Comparison (baseline: {self.baseline.label})\n\n{legend}\n\n{note}\n\n"
            f"{markdown_table(headers, rows)}\n"
        )

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
            ComparedRun(label, run.path, _policy_text(run), run.seed, run.partial, values, run.dilation)
        )
    return Comparison(compared, list(compared[0].values))


def run_labels(runs: list[RunData]) -> list[str]:
    """Short unique labels: the policy axes that differ (else the strategy), then the
    scenario's name, the seed and the directory name, as far as needed to tell the runs
    apart."""
    varying = [axis for axis in POLICY_AXES if len({getattr(run.policy, axis) for run in runs}) > 1] or [
        "strategy"
    ]
    labels = ["+".join(getattr(run.policy, axis) for axis in varying) for run in runs]
    if len(set(labels)) < len(labels) and len({run.name for run in runs}) > 1:
        labels = [f"{run.name}: {label}" for label, run in zip(labels, runs, strict=True)]
    if len(set(labels)) < len(labels) and len({str(run.seed) for run in runs}) == len(runs):
        labels = [f"{label} seed={run.seed}" for label, run in zip(labels, runs, strict=True)]
    if len(set(labels)) < len(labels):
        labels = [f"{label} ({run.path.name})" for label, run in zip(labels, runs, strict=True)]
    return _unique(labels)


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
    return " / ".join(getattr(run.policy, axis) for axis in POLICY_AXES)


def _times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _csv_number(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else format(value, ".10g")
