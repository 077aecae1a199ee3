"""The simulator against real runs: per cell and metric, the real value, the simulated one and
their error (``testbed crosscheck``; the runs themselves: ``testbed/app/crosscheck/run.py``).

A *cell* is one combination of ``--vary`` values; each ran with the same seeds for real and
with ``--backend sim``. A metric's error is the sim's mean over its seeds minus the real mean
(absolute) and that over the real mean (relative). Pure functions of the runs' numbers: no
I/O, so every table can be checked by hand from the runs' ``summary.json``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from testbed.app.stats import Estimate, estimate

METRICS = (
    "mean_jct_s",
    "p95_jct_s",
    "makespan_s",
    "relaunched_ratio",
    "evictions",
    "bytes_recomputed",
    "bytes_pushed",
    "bytes_checkpointed",
    "checkpoint_delay_p50_s",
    "checkpoint_delay_p95_s",
    "mean_short_queue_s",
    "p95_short_queue_s",
    "short_partition_cost_servers",
)
"""Metrics of ``summary.json`` compared, in table order (``checkpoint_delay_*``: a checkpoint copy's
task end to commit, median and 95th percentile, ``master/summary/checkpoint_copies.py``; n/a in a run
without checkpoints; ``*_short_queue_s`` and ``short_partition_cost_servers``: a hybrid
(Eagle) run's short tasks' queueing and its short partition's cost in on-demand servers,
``master/summary/coaster.py``; n/a in other runs)."""

ALIASES = {
    "jct": "mean_jct_s",
    "mean_jct": "mean_jct_s",
    "p95": "p95_jct_s",
    "p95_jct": "p95_jct_s",
    "makespan": "makespan_s",
    "relaunched": "relaunched_ratio",
    "recomputed": "bytes_recomputed",
    "pushed": "bytes_pushed",
    "checkpointed": "bytes_checkpointed",
    "checkpoint_delay": "checkpoint_delay_p50_s",
    "checkpoint_delay_p95": "checkpoint_delay_p95_s",
    "short_queue": "mean_short_queue_s",
    "cost": "short_partition_cost_servers",
}
"""Short names ``--tolerance`` accepts besides the metrics' own."""

Values = tuple[tuple[str, str], ...]
"""A cell: its ``(field, value)`` pairs, in ``--vary`` order (empty without ``--vary``)."""


def cell_label(values: Values) -> str:
    return ", ".join(f"{key}={value}" for key, value in values) or "scenario"


@dataclass(frozen=True)
class Tolerance:
    metric: str
    limit: float
    relative: bool
    """True: ``limit`` bounds |relative error| (``15%``); False: |absolute error| (``0.05``)."""

    def text(self) -> str:
        return f"{self.limit * 100:g}%" if self.relative else f"{self.limit:g}"

    def exceeded(self, error: MetricError) -> bool:
        """Beyond the limit, or not measurable (no successful run on a side; a relative error
        of a metric whose real value is 0 and the sim's is not)."""
        if error.absolute is None:
            return True
        if not self.relative:
            return abs(error.absolute) > self.limit + 1e-12
        return error.relative is None or abs(error.relative) > self.limit + 1e-12


def parse_tolerances(text: str) -> dict[str, Tolerance]:
    """``jct=15%,evictions=0``: a metric (or its short name) and its limit, ``N%`` relative to
    the real value, a plain number absolute in the metric's unit. A ``ValueError`` names the
    part that is wrong and what is expected."""
    tolerances: dict[str, Tolerance] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        name, sep, limit = (s.strip() for s in part.partition("="))
        metric = ALIASES.get(name, name)
        if not sep or metric not in METRICS:
            known = ", ".join([*METRICS, *ALIASES])
            raise ValueError(
                f"--tolerance {part!r}: expected METRIC=LIMIT with METRIC one of {known}, e.g. jct=15%"
            )
        relative = limit.endswith("%")
        try:
            value = float(limit.removesuffix("%")) / (100 if relative else 1)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise ValueError(
                f"--tolerance {part!r}: expected a limit >= 0, relative (15%) or absolute (0.05)"
            )
        tolerances[metric] = Tolerance(metric, value, relative)
    return tolerances


@dataclass(frozen=True)
class MetricError:
    cell: Values
    metric: str
    real: Estimate | None
    """Mean over the cell's successful real runs, with its 95% bootstrap interval."""
    sim: Estimate | None
    real_runs: int
    sim_runs: int

    @property
    def absolute(self) -> float | None:
        """sim - real; None when a side has no successful run."""
        if self.real is None or self.sim is None:
            return None
        return self.sim.value - self.real.value

    @property
    def relative(self) -> float | None:
        """(sim - real) / |real|; 0 when both are 0, None when only the real value is 0."""
        if self.absolute is None or self.real is None:
            return None
        if self.real.value == 0:
            return 0.0 if self.absolute == 0 else None
        return self.absolute / abs(self.real.value)


RunNumbers = Sequence[Mapping[str, float | None]]
"""The numbers of a cell's successful runs on one side (each run's ``summary.json`` numbers)."""


def compare(cells: Mapping[Values, tuple[RunNumbers, RunNumbers]]) -> list[MetricError]:
    """Each cell's ``(real runs, sim runs)`` compared on every metric, cells in their order."""
    errors = []
    for values, (real, sim) in cells.items():
        for metric in METRICS:
            real_values = [float(v) for run in real if (v := run.get(metric)) is not None]
            sim_values = [float(v) for run in sim if (v := run.get(metric)) is not None]
            errors.append(
                MetricError(values, metric, estimate(real_values), estimate(sim_values), len(real), len(sim))
            )
    return errors


def violations(
    errors: Sequence[MetricError], tolerances: Mapping[str, Tolerance]
) -> list[tuple[MetricError, Tolerance]]:
    return [
        (error, tolerances[error.metric])
        for error in errors
        if error.metric in tolerances and tolerances[error.metric].exceeded(error)
    ]


def worst_fields(errors: Sequence[MetricError], metric: str = "mean_jct_s") -> list[tuple[str, str, float]]:
    """Which varied value the sim gets most wrong: ``(field, value, mean |relative error|)`` of
    ``metric`` over the cells with that value, worst first (cells without an error left out)."""
    by_value: dict[tuple[str, str], list[float]] = {}
    for error in errors:
        if error.metric == metric and error.relative is not None:
            for pair in error.cell:
                by_value.setdefault(pair, []).append(abs(error.relative))
    ranked = [(key, value, sum(v) / len(v)) for (key, value), v in by_value.items()]
    return sorted(ranked, key=lambda row: -row[2])


@dataclass(frozen=True)
class Order:
    """Two cells as real runs and the sim order them on a metric."""

    first: Values
    second: Values
    real_sign: int
    """+1: the second cell's real value is larger, -1 smaller, 0 equal."""
    sim_sign: int
    significant: bool
    """The real runs' 95% intervals do not overlap: a difference beyond the runs' own spread."""

    @property
    def agree(self) -> bool:
        return self.real_sign == self.sim_sign


def orders(errors: Sequence[MetricError], metric: str = "mean_jct_s") -> list[Order]:
    """Every pair of cells measured on both sides, in cell order."""
    measured = [e for e in errors if e.metric == metric and e.real is not None and e.sim is not None]
    pairs = []
    for i, a in enumerate(measured):
        for b in measured[i + 1 :]:
            assert a.real and a.sim and b.real and b.sim
            pairs.append(
                Order(
                    a.cell,
                    b.cell,
                    _sign(b.real.value - a.real.value),
                    _sign(b.sim.value - a.sim.value),
                    _separated(a.real, b.real),
                )
            )
    return pairs


_RELATION = {1: "<", 0: "=", -1: ">"}
"""The first cell's value against the second's, by the sign of (second - first)."""


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def _separated(a: Estimate, b: Estimate) -> bool:
    if a.low is None or a.high is None or b.low is None or b.high is None:
        return False  # one run: no spread known, no difference is significant
    return a.high < b.low or b.high < a.low


# ------------------------------------------------------------------ tables


def _number(value: float | None, percent: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:+.1f}%" if percent else f"{value:+.4g}"


def csv_rows(errors: Sequence[MetricError], tolerances: Mapping[str, Tolerance]) -> list[dict[str, object]]:
    """One row per cell and metric: every number of the markdown table, unrounded."""
    rows: list[dict[str, object]] = []
    for e in errors:
        tolerance = tolerances.get(e.metric)
        rows.append(
            {
                **dict(e.cell),
                "metric": e.metric,
                "real_runs": e.real_runs,
                "real_mean": e.real.value if e.real else None,
                "real_low": e.real.low if e.real else None,
                "real_high": e.real.high if e.real else None,
                "sim_runs": e.sim_runs,
                "sim_mean": e.sim.value if e.sim else None,
                "sim_low": e.sim.low if e.sim else None,
                "sim_high": e.sim.high if e.sim else None,
                "abs_error": e.absolute,
                "rel_error": e.relative,
                "tolerance": tolerance.text() if tolerance else "",
                "within": "" if tolerance is None else not tolerance.exceeded(e),
            }
        )
    return rows


def _verdict(tolerance: Tolerance, error: MetricError) -> str:
    return f"{tolerance.text()} {'**EXCEEDED**' if tolerance.exceeded(error) else 'ok'}"


def markdown(errors: Sequence[MetricError], tolerances: Mapping[str, Tolerance], seeds: Sequence[int]) -> str:
    head = ["cell", "metric", "real mean [95% CI]", "sim mean [95% CI]", "abs error", "rel error"]
    head.append("tolerance")
    lines = [
        f"Seeds {', '.join(map(str, seeds))}; runs per side in brackets after each mean.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for e in errors:
        tolerance = tolerances.get(e.metric)
        verdict = "" if tolerance is None else _verdict(tolerance, e)
        lines.append(
            "| "
            + " | ".join(
                [
                    cell_label(e.cell),
                    e.metric,
                    f"{e.real.text() if e.real else 'n/a'} ({e.real_runs})",
                    f"{e.sim.text() if e.sim else 'n/a'} ({e.sim_runs})",
                    _number(e.absolute),
                    _number(e.relative, percent=True),
                    verdict,
                ]
            )
            + " |"
        )
    worst = worst_fields(errors)
    if len({e.cell for e in errors}) > 1 and worst:
        lines += ["", "Which varied value the sim gets most wrong (mean |relative error| of mean_jct_s):", ""]
        lines += ["| field | value | mean abs rel error |", "|---|---|---|"]
        lines += [f"| {key} | {value} | {error * 100:.1f}% |" for key, value, error in worst]
    pairs = orders(errors)
    if pairs:
        significant = [p for p in pairs if p.significant]
        agreeing = sum(p.agree for p in significant)
        lines += [
            "",
            f"Ranking on mean_jct_s: the sim orders {agreeing} of the {len(significant)} pairs of cells "
            f"whose real difference is beyond the real runs' 95% intervals the same way as the real runs "
            f"({sum(p.agree for p in pairs)} of all {len(pairs)} pairs).",
        ]
        lines += [
            f"- {cell_label(p.first)} {_RELATION[p.real_sign]} {cell_label(p.second)} for real, "
            f"{_RELATION[p.sim_sign]} simulated"
            for p in significant
            if not p.agree
        ]
    return "\n".join(lines) + "\n"


def op_table(
    real: Mapping[str, Sequence[tuple[float, float, float]]],
    sim: Mapping[str, Sequence[tuple[float, float, float]]],
) -> list[str]:
    """Which part of the execution model is off: each task op's mean attempt duration (launch to
    end, succeeded attempts of every cell) and mean input and output MB, for real and
    simulated, and the relative error of the duration. Attempts are ``(seconds, MB in, MB
    out)``. An input or output that differs says the bytes model is off (the sizes a stage's
    tasks are given, the blocks they write); the same input with another duration, the op's
    time model."""
    lines = [
        "| op | real attempts | real mean s | real mean MB in | real mean MB out "
        "| sim attempts | sim mean s | sim mean MB in | sim mean MB out | rel error (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]

    def means(attempts: Sequence[tuple[float, float, float]]) -> list[float | None]:
        if not attempts:
            return [None, None, None]
        return [sum(a[i] for a in attempts) / len(attempts) for i in range(3)]

    for op in sorted(real.keys() | sim.keys()):
        r, s = real.get(op, ()), sim.get(op, ())
        (r_mean, *r_mb), (s_mean, *s_mb) = means(r), means(s)
        error = None if not r_mean or s_mean is None else (s_mean - r_mean) / r_mean
        shown = [f"{v:.3g}" if v is not None else "n/a" for v in (r_mean, *r_mb, s_mean, *s_mb)]
        lines.append(
            f"| {op} | {len(r)} | {' | '.join(shown[:3])} | {len(s)} | {' | '.join(shown[3:])} | "
            f"{_number(error, percent=True)} |"
        )
    return lines
