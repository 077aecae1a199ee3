"""``testbed chaos check RUN_DIR``: did a run's evictions follow its configured chaos model?

A run journals every lifetime its chaos controller drew (``lifetime_drawn``) and, for
every eviction, the lifetime drawn and lived and the lead its notice promised and had
(``eviction_timing``). This module compares them with the scenario's models
(docs/chaos.md, "Realism check"):

- the Kolmogorov-Smirnov distance between the drawn lifetimes and the model's CDF
  (is the sampler right?);
- for lifetime kills, the KS distance between the lifetimes lived and those drawn,
  and the error lived - drawn (is the run's clock right?);
- the KS distance between the lifetimes lived and the model's CDF, the lived ones
  estimated by Kaplan-Meier: a node the run did not kill by its lifetime (a storm took
  it, it was lost, or the run ended first) is right-censored there (did the evictions
  the run really made follow the model?);
- for notices, the error of the lead time: lead had - lead promised.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from testbed.chaosmodels.lifetime_model import LifetimeModel
from testbed.chaosmodels.lifetimes import parse_lifetime
from testbed.journal.schema import EvictionTiming, LifetimeDrawn, NodeLost, events_of, read_events
from testbed.scenario.schema import Scenario, load_scenario

KS_95 = 1.358
"""The asymptotic 95 % critical value of sqrt(n) * D (Kolmogorov's distribution)."""


def ks_distance(samples: Sequence[float] | np.ndarray, model: LifetimeModel) -> float:
    """sup |F_n(x) - F(x)|, exact also where the model has an atom (a cap, a fixed lifetime):
    at each distinct sample value both the right limits and the left limits are compared."""
    values, counts = np.unique(np.asarray(samples, dtype=float), return_counts=True)
    after = np.cumsum(counts) / counts.sum()
    before = after - counts / counts.sum()
    return float(
        max(
            np.abs(after - model.cdf_at(values)).max(),
            np.abs(before - model.cdf_before(values)).max(),
        )
    )


def ks_two_samples(first: np.ndarray, second: np.ndarray) -> float:
    """sup |F_first - F_second| of two empirical CDFs (``scipy.stats.ks_2samp``'s statistic,
    without its p-value, whose computation warns for one sample or thousands)."""
    values = np.concatenate([first, second])
    cdf_first = np.searchsorted(np.sort(first), values, side="right") / len(first)
    cdf_second = np.searchsorted(np.sort(second), values, side="right") / len(second)
    return float(np.abs(cdf_first - cdf_second).max())


def critical_95(n: int) -> float:
    return KS_95 / math.sqrt(n) if n else math.nan


@dataclass(frozen=True)
class ClassFit:
    node_class: str
    """The class, or ``<class> zone <zone>`` for a zone with a lifetime model of its own."""
    model: str
    drawn: int
    ks_model: float
    """KS distance of the drawn lifetimes from the model's CDF."""
    lived: int
    """Lifetime kills, whose lived lifetime is compared with the drawn one."""
    ks_lived: float
    error_p50_ms: float
    """|lived - drawn| in wall milliseconds."""
    error_p99_ms: float
    ks_lived_model: float = math.nan
    """KS distance of the lived lifetimes (Kaplan-Meier, censored where no lifetime kill came)
    from the model's CDF, at the lifetime kills' times."""
    censored: int = 0
    """Nodes with a lifetime that the run did not kill by it (censored in ``ks_lived_model``)."""


@dataclass(frozen=True)
class Group:
    """The nodes one lifetime model covers: a class's (but its zones with models of their
    own), or such a zone's."""

    label: str
    node_class: str
    zone: str | None
    model: LifetimeModel
    other_zones: frozenset[str] = frozenset()

    def covers(self, scenario: Scenario, node_class: str, node_id: str) -> bool:
        if node_class != self.node_class:
            return False
        _, _, ordinal = node_id.rpartition("-")
        spec = scenario.node_classes[node_class].spec
        zone = spec.zone_of(int(ordinal)) if ordinal.isdigit() else None
        return zone == self.zone if self.zone is not None else zone not in self.other_zones


def model_groups(scenario: Scenario, base_dir: Path) -> list[Group]:
    groups = []
    for node_class, named in scenario.node_classes.items():
        spec = named.chaos
        zones = {zone: parse_lifetime(z.lifetime, base_dir) for zone, z in spec.zones.items()}
        model = parse_lifetime(spec.lifetime, base_dir)
        if model.evicts:
            groups.append(Group(node_class, node_class, None, model, frozenset(zones)))
        groups.extend(
            Group(f"{node_class} zone {zone}", node_class, zone, m) for zone, m in zones.items() if m.evicts
        )
    return groups


@dataclass(frozen=True)
class NoticeFit:
    notices: int
    error_p50_ms: float
    """|lead had - lead the model intended| (the class's notice, or the lifetime if shorter), wall ms."""
    error_p99_ms: float
    worst_ms: float
    sent_p50_ms: float
    """|lead had - lead the notice announced| (a late notice announces less), wall ms."""
    sent_p99_ms: float


@dataclass(frozen=True)
class ChaosCheck:
    classes: list[ClassFit]
    notices: NoticeFit


def check_events(events: Sequence[Mapping[str, Any]], scenario: Scenario, base_dir: Path) -> ChaosCheck:
    drawn = list(events_of(events, LifetimeDrawn))
    timings = list(events_of(events, EvictionTiming))
    ends = _exposure_ends(events)
    fits = []
    for group in model_groups(scenario, base_dir):
        mine = [e for e in drawn if group.covers(scenario, e["class"], e["node"])]
        own = [e for e in timings if group.covers(scenario, e["class"], e["node"])]
        fit = _class_fit(group.label, group.model, mine, own, scenario.wall_per_trace)
        ks, censored = _lived_fit(group.model, mine, own, ends, scenario.wall_per_trace)
        fits.append(replace(fit, ks_lived_model=ks, censored=censored))
    return ChaosCheck(fits, _notice_fit(timings))


def _exposure_ends(events: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """When each node stopped being exposed to its lifetime, run seconds: its loss, else the
    run's end (key ``""``)."""
    ends = {"": max((float(e["t"]) for e in events), default=0.0)}
    for lost in events_of(events, NodeLost):
        ends.setdefault(lost["node"], float(lost["t"]))
    return ends


def _lived_fit(
    model: LifetimeModel,
    drawn: list[LifetimeDrawn],
    timings: list[EvictionTiming],
    ends: dict[str, float],
    wall_per_trace: float,
) -> tuple[float, int]:
    """KS distance of the Kaplan-Meier estimate of the lived lifetimes from the model, and
    how many were censored: a node killed by its lifetime lived ``actual_s``; one killed
    otherwise is censored at ``actual_s``; one never killed at its loss or the run's end."""
    by_node = {e["node"]: e for e in timings if e["actual_s"] is not None}
    killed, censored = [], []
    for node in drawn:
        timing = by_node.get(node["node"])
        if timing is not None:
            (killed if timing["reason"] == "lifetime" else censored).append(timing["actual_s"])
        else:
            end = ends.get(node["node"], ends[""])
            censored.append(max(0.0, (end - float(node["t"])) / wall_per_trace))
    if not killed:
        return math.nan, len(censored)
    from scipy import stats  # for the Kaplan-Meier estimate only: scipy.stats is slow to import

    estimate = stats.ecdf(stats.CensoredData(uncensored=killed, right=censored)).cdf
    times = np.unique(killed)
    after = estimate.evaluate(times)
    before = estimate.evaluate(np.nextafter(times, -np.inf))
    distance = max(np.abs(after - model.cdf_at(times)).max(), np.abs(before - model.cdf_before(times)).max())
    return float(distance), len(censored)


def _class_fit(
    label: str,
    model: LifetimeModel,
    drawn: list[LifetimeDrawn],
    timings: list[EvictionTiming],
    wall_per_trace: float,
) -> ClassFit:
    lifetimes = [e["lifetime_s"] for e in drawn]
    pairs = [
        (e["actual_s"], e["drawn_s"])
        for e in timings
        if e["reason"] == "lifetime" and e["actual_s"] is not None and e["drawn_s"] is not None
    ]
    lived = np.array([p[0] for p in pairs])
    planned = np.array([p[1] for p in pairs])
    errors_ms = np.abs(lived - planned) * wall_per_trace * 1000.0
    return ClassFit(
        label,
        model.describe(),
        len(lifetimes),
        ks_distance(lifetimes, model) if lifetimes else math.nan,
        len(pairs),
        ks_two_samples(lived, planned) if pairs else math.nan,
        *_percentiles(errors_ms),
    )


def _notice_fit(timings: list[EvictionTiming]) -> NoticeFit:
    warned = [e for e in timings if e["lead_s"] is not None and e["promised_s"] is not None]
    model_ms = np.array([abs(e["lead_s"] - _intended(e)) * 1000.0 for e in warned])
    sent_ms = np.array([abs(e["lead_s"] - e["promised_s"]) * 1000.0 for e in warned])
    worst = float(model_ms.max()) if model_ms.size else math.nan
    return NoticeFit(len(warned), *_percentiles(model_ms), worst, *_percentiles(sent_ms))


def _intended(timing: EvictionTiming) -> float:
    """The lead the model intended; a journal without it (older runs) gives the one announced."""
    intended = timing.get("intended_s")
    return intended if intended is not None else timing["promised_s"]  # type: ignore[return-value]


def _percentiles(values: np.ndarray) -> tuple[float, float]:
    if not values.size:
        return math.nan, math.nan
    p50, p99 = np.percentile(values, [50, 99])
    return float(p50), float(p99)


def check_run(run_dir: Path) -> ChaosCheck:
    """``ValueError`` (one line) if the run directory lacks what the check needs."""
    scenario_file, events_file = run_dir / "scenario.yaml", run_dir / "events.jsonl"
    for needed in (scenario_file, events_file):
        if not needed.is_file():
            raise ValueError(f"{needed}: missing; give a run directory (runs/NAME) written by testbed run")
    scenario = load_scenario(scenario_file)
    return check_events(read_events(events_file).events, scenario, run_dir)


COLUMNS = (
    "class",
    "drawn",
    "KS(drawn, model)",
    "crit 95%",
    "lifetime kills",
    "KS(lived, drawn)",
    "|lived-drawn| p50",
    "p99",
    "censored",
    "KS(lived, model)",
    "model",
)


def check_rows(check: ChaosCheck) -> list[tuple[str, ...]]:
    """One row per class (and per zone with a model of its own), under ``COLUMNS``."""
    return [
        (
            fit.node_class,
            str(fit.drawn),
            _number(fit.ks_model, "{:.4f}"),
            _number(critical_95(fit.drawn), "{:.4f}"),
            str(fit.lived),
            _number(fit.ks_lived, "{:.4f}"),
            _number(fit.error_p50_ms, "{:.1f} ms"),
            _number(fit.error_p99_ms, "{:.1f} ms"),
            str(fit.censored),
            _number(fit.ks_lived_model, "{:.4f}"),
            fit.model,
        )
        for fit in check.classes
    ]


def notice_line(notices: NoticeFit) -> str:
    return (
        f"notices: {notices.notices}; lead-time error |had - model| p50 "
        f"{_number(notices.error_p50_ms, '{:.1f} ms')}, p99 {_number(notices.error_p99_ms, '{:.1f} ms')}, "
        f"worst {_number(notices.worst_ms, '{:.1f} ms')}; |had - announced| p50 "
        f"{_number(notices.sent_p50_ms, '{:.1f} ms')}, p99 {_number(notices.sent_p99_ms, '{:.1f} ms')} (wall)"
    )


def format_check(check: ChaosCheck) -> str:
    rows = check_rows(check)
    widths = [max(len(text) for text in column) for column in zip(COLUMNS, *rows, strict=True)]
    lines = [
        "  ".join(t.ljust(w) for t, w in zip(cells, widths, strict=True)).rstrip()
        for cells in (COLUMNS, *rows)
    ]
    if not check.classes:
        lines.append("(no class has a lifetime model)")
    lines.append(notice_line(check.notices))
    return "\n".join(lines)


def _number(value: float, form: str) -> str:
    return "-" if math.isnan(value) else form.format(value)
