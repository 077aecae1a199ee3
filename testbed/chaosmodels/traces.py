"""Lifetime traces in: real interruption records as a lifetime model (docs/chaos.md, "Traces").

The testbed's trace format is a CSV with a header naming its columns::

    instance_type,zone,start,end
    A10,,9589663,9630723
    m5.large,us-east-1a,2024-03-01T10:00:00+00:00,2024-03-01T13:20:00+00:00
    m5.large,us-east-1b,2024-03-01T10:00:00+00:00,

``start`` and ``end`` are seconds or ISO 8601 timestamps; an empty ``end`` is an
instance still running when the trace ended (right-censored). ``instance_type`` and
``zone`` are optional columns, used to select rows. A scenario names a trace as a
lifetime model::

    lifetime: {trace: interruptions.csv}
    lifetime: {trace: {file: interruptions.csv, instance_type: A10, zone: us-east-1a, replay: nodes}}

``replay: distribution`` (the default) draws lifetimes from the Kaplan-Meier estimate of
the rows' lifetimes (censored rows count as survivors; beyond the longest lifetime
observed, the probability left means: never evicted). ``replay: nodes`` gives node
ordinal k of the class the lifetime of the k-th selected row, in file order (wrapping
around after the last; a censored row: never evicted).

``alibaba_spot_gpu`` converts the Alibaba spot-GPU trace's ``job_info_df.csv`` to this
format (``testbed chaos import-trace``).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from testbed.chaosmodels.lifetime_model import LifetimeModel, format_seconds
from testbed.limits import data_path, read_data_file

COLUMNS = ("instance_type", "zone", "start", "end")
REPLAYS = ("distribution", "nodes")
_KEYS = ("file", "instance_type", "zone", "replay")


def read_trace(
    path: Path, instance_type: str | None = None, zone: str | None = None
) -> tuple[list[float], list[bool]]:
    """The lifetimes (seconds) of the rows selected, in file order, and whether each is
    censored: a row without an end lived at least until the trace's last time (the latest
    start or end in the file)."""
    text = read_data_file(path, "trace")
    reader = csv.DictReader(io.StringIO(text))
    names = reader.fieldnames or []
    missing = [c for c in ("start", "end") if c not in names]
    if missing:
        raise ValueError(
            f"trace {path}: the header must name columns start and end (and optionally "
            f"instance_type, zone); missing {missing[0]}"
        )
    for column, wanted in (("instance_type", instance_type), ("zone", zone)):
        if wanted is not None and column not in names:
            raise ValueError(f"trace {path}: no {column} column to select {wanted!r} by")
    spans: list[tuple[float, float | None]] = []
    last = -math.inf
    for row in reader:
        line = reader.line_num
        start = _time(path, line, row["start"], "start")
        end = _time(path, line, row["end"], "end") if (row["end"] or "").strip() else None
        if end is not None and end < start:
            raise ValueError(f"trace {path} line {line}: end comes before start")
        last = max(last, start, end if end is not None else start)
        if (instance_type is None or row["instance_type"] == instance_type) and (
            zone is None or row["zone"] == zone
        ):
            spans.append((start, end))
    if not spans:
        which = ", ".join(f"{k} {v!r}" for k, v in (("instance_type", instance_type), ("zone", zone)) if v)
        raise ValueError(f"trace {path}: no rows" + (f" of {which}" if which else ""))
    return [(last if end is None else end) - start for start, end in spans], [end is None for _, end in spans]


def _time(path: Path, line: int, cell: str | None, column: str) -> float:
    text = (cell or "").strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise ValueError(
            f"trace {path} line {line}: {column}: expected seconds or an ISO 8601 timestamp; found {text!r}"
        ) from None


@dataclass(frozen=True)
class TraceDistribution(LifetimeModel):
    """The Kaplan-Meier estimate of a trace's lifetimes: a step CDF with an atom at each
    lifetime observed, reaching ``cdf[-1]`` (< 1 when the longest lives were censored)."""

    source: str
    lifetimes: tuple[float, ...]
    cdf: tuple[float, ...]
    rows: int

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        u = rng.uniform(0.0, 1.0, n)
        index = np.searchsorted(np.asarray(self.cdf), u, side="left")
        values = np.append(np.asarray(self.lifetimes), np.inf)
        return values[np.minimum(index, len(self.lifetimes))]

    def describe(self) -> str:
        never = f", {1 - self.cdf[-1]:.0%} never" if self.cdf[-1] < 1 else ""
        median = self.lifetimes[int(np.searchsorted(self.cdf, 0.5))] if self.cdf[-1] >= 0.5 else math.inf
        return f"trace({self.source}; {self.rows} rows, median {format_seconds(median)}{never})"

    def cdf_at(self, seconds: np.ndarray) -> np.ndarray:
        index = np.searchsorted(np.asarray(self.lifetimes), seconds, side="right")
        return np.append(0.0, np.asarray(self.cdf))[index]

    def cdf_before(self, seconds: np.ndarray) -> np.ndarray:
        index = np.searchsorted(np.asarray(self.lifetimes), seconds, side="left")
        return np.append(0.0, np.asarray(self.cdf))[index]


@dataclass(frozen=True)
class TraceReplay(TraceDistribution):
    """Node ordinal k lives the k-th row's lifetime (mod the rows)."""

    in_order: tuple[float, ...] = ()

    def lifetime_of(self, rng: np.random.Generator, ordinal: int) -> float:
        return self.in_order[ordinal % len(self.in_order)]

    def describe(self) -> str:
        return f"trace replay({self.source}; {len(self.in_order)} rows, node k lives row k)"


def trace_model(value: Any, base_dir: str | Path | None) -> TraceDistribution:
    """The model of ``{trace: FILE}`` or ``{trace: {file:, instance_type:, zone:, replay:}}``."""
    spec = {"file": value} if isinstance(value, str) else value
    if not isinstance(spec, dict) or not isinstance(spec.get("file"), str):
        raise ValueError(
            "trace: expected a CSV path, or {file: PATH, instance_type: T, zone: Z, replay: nodes}"
        )
    unknown = sorted(set(spec) - set(_KEYS))
    if unknown:
        raise ValueError(f"trace: unknown key {unknown[0]!r}; expected {', '.join(_KEYS)}")
    replay = spec.get("replay", "distribution")
    if replay not in REPLAYS:
        raise ValueError(f"trace replay: expected {' or '.join(REPLAYS)}; found {replay!r}")
    path = data_path(spec["file"], base_dir, "trace file")
    lifetimes, censored = read_trace(path, _text(spec, "instance_type"), _text(spec, "zone"))
    if all(censored):
        raise ValueError(f"trace {path}: no interruption among the rows selected (every end is empty)")
    values, cdf = kaplan_meier(lifetimes, censored)
    if replay == "nodes":
        in_order = tuple(math.inf if c else x for x, c in zip(lifetimes, censored, strict=True))
        return TraceReplay(str(path), values, cdf, len(lifetimes), in_order)
    return TraceDistribution(str(path), values, cdf, len(lifetimes))


def _text(spec: dict[str, Any], key: str) -> str | None:
    value = spec.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"trace {key}: expected a name; found {value!r}")
    return value


def kaplan_meier(lifetimes: list[float], censored: list[bool]) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The distinct lifetimes observed (uncensored) and the Kaplan-Meier CDF at each."""
    # here, not at the top: scipy.stats is some 400 modules and 45 MB in every process that
    # loads a scenario (each task worker among them), and only a trace being read needs it
    from scipy import stats

    observed = [x for x, c in zip(lifetimes, censored, strict=True) if not c]
    right = [x for x, c in zip(lifetimes, censored, strict=True) if c]
    estimate = stats.ecdf(stats.CensoredData(uncensored=observed, right=right)).cdf
    return tuple(float(q) for q in estimate.quantiles), tuple(float(p) for p in estimate.probabilities)


# ------------------------------------------------------------------ converters


def alibaba_spot_gpu(path: Path, gpu_model: str | None = None) -> str:
    """The testbed trace of the spot jobs in the Alibaba spot-GPU trace's ``job_info_df.csv``
    (columns job_name, organization, gpu_model, cpu_request, gpu_request, worker_num,
    submit_time, duration, job_type; times in seconds from the first submission): one
    row per worker of each ``job_type`` ``Spot`` job, instance_type = gpu_model,
    start = submit_time, end = submit_time + duration."""
    reader = csv.DictReader(io.StringIO(read_data_file(path, "Alibaba job_info_df.csv")))
    needed = ("gpu_model", "worker_num", "submit_time", "duration", "job_type")
    missing = [c for c in needed if c not in (reader.fieldnames or [])]
    if missing:
        raise ValueError(f"{path}: not the Alibaba spot-GPU trace's job_info_df.csv: no column {missing[0]}")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in reader:
        if row["job_type"].strip().lower() != "spot" or (gpu_model and row["gpu_model"] != gpu_model):
            continue
        try:
            start, duration, workers = (
                float(row["submit_time"]),
                float(row["duration"]),
                int(row["worker_num"]),
            )
        except ValueError:
            raise ValueError(
                f"{path} line {reader.line_num}: submit_time, duration, worker_num must be numbers"
            ) from None
        for _ in range(workers):
            writer.writerow((row["gpu_model"], "", _number(start), _number(start + duration)))
    return out.getvalue()


def _number(seconds: float) -> str:
    """``9589663.0`` -> ``9589663``, other values as Python writes them (exact)."""
    return str(int(seconds)) if seconds.is_integer() else repr(seconds)
