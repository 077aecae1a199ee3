"""Limits on what a scenario may ask for, so that bad or hostile input fails fast with one line.

Every limit is far above what an experiment on one machine uses (README, "Limits"); a
value beyond one is refused when the scenario loads, with the limit in the message.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from testbed.durations import parse_duration

MAX_SCENARIO_BYTES = 1 << 20
"""A scenario file (1 MiB: the shipped ones are under 4 KiB; traces belong in trace files)."""
MAX_YAML_DEPTH = 32
"""Nesting of YAML collections (a scenario needs 5)."""
MAX_ALIAS_NODES = 10_000
"""YAML nodes that aliases (``*name``, ``<<: *name``) may add in all by repeating their anchors."""
MAX_DATA_FILE_BYTES = 16 << 20
"""An arrivals trace or an empirical lifetimes file (16 MiB); regular files only."""

MAX_JOBS = 100_000
"""Jobs a scenario submits: ``repeat`` of every job, plus the arriving jobs."""
MAX_TASKS_PER_JOB = 1_000_000
"""Tasks (or map tasks) of one job."""
MAX_TASKS = 1_000_000
"""Tasks of all jobs together."""
MAX_NODES_PER_CLASS = 500
"""Reserved nodes, and transient nodes, at once (real backends)."""
MAX_SIM_NODES_PER_CLASS = 100_000
"""The same under ``--backend sim``: modelled nodes cost no process."""
MAX_NODE_CLASSES = 64
"""Named node classes of a cluster (``cluster.classes``)."""
MAX_NODE_MEMORY_MB = 1 << 20
"""``memory_mb`` of a node (1 TiB)."""
MAX_BANDWIDTH = 1_000_000
"""``network_mbps`` (Mbit/s) and ``disk_mb_s`` (MB/s) of a node; both are at least 1."""

MAX_DURATION_S = 366 * 86400.0
"""Any duration or time in a scenario (trace seconds): a year and a day."""
MIN_TIME_SCALE, MAX_TIME_SCALE = 1e-3, 1e6
"""``time_scale`` (trace seconds per wall second)."""
MAX_TIMEOUT_S = 7 * 86400.0
"""``timeout``: a run's wall-clock limit (a week)."""
MAX_STORM_FIRINGS = 100_000
"""Firings of one storm (``times``, or ``rate`` x window)."""
MAX_PLANNED_EVICTIONS = 100_000
"""Evictions in one chaos plan (``testbed chaos plan``, ``run --dry-run``)."""


def too_large(what: str, found: float, limit: float, unit: str = "") -> str:
    """The message of a value beyond its limit: ``what`` is at most ``limit`` (found ``found``)."""
    return f"{what} is at most {_number(limit)}{unit} (a testbed limit); found {_number(found)}{unit}"


def _number(value: float) -> str:
    """``1,000,000`` for whole numbers below 1e15, else 6 significant digits (``1.2e+295``)."""
    return f"{int(value):,}" if float(value).is_integer() and abs(value) < 1e15 else f"{value:,.6g}"


def within_max_duration(seconds: float) -> float:
    """``seconds`` if at most ``MAX_DURATION_S``, else ``ValueError`` naming the limit."""
    if seconds > MAX_DURATION_S:
        raise ValueError(too_large("a duration", seconds / 86400, MAX_DURATION_S / 86400, " days"))
    return seconds


def data_path(value: object, base_dir: str | Path | None, what: str) -> Path:
    """The path of a data file a scenario names (``ValueError`` unless a non-empty string),
    relative to ``base_dir`` (the scenario file's folder) when one is given."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what}: expected the path of a CSV file; found {value!r}")
    path = Path(value).expanduser()
    return path if path.is_absolute() or base_dir is None else Path(base_dir) / path


def scenario_time(value: object, what: str, example: str = "30s, 5m or 2h") -> float:
    """A time or duration of a scenario in [0, MAX_DURATION_S] seconds, or ``ValueError``."""
    try:
        seconds = parse_duration(value)  # type: ignore[arg-type]
    except (ValueError, TypeError):
        seconds = -1.0
    if not 0 <= seconds <= MAX_DURATION_S:
        raise ValueError(f"{what}: expected a duration such as {example}; found {value!r}")
    return seconds


def read_data_file(path: Path, what: str, limit: int = MAX_DATA_FILE_BYTES) -> str:
    """The UTF-8 text of a regular file of at most ``limit`` bytes; ``ValueError`` saying why not.

    A FIFO would block the reader and ``/dev/zero`` never ends: only regular files are read,
    opened without blocking and read no further than the limit."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ValueError(f"{what} {path}: cannot read the file: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{what} {path}: not a regular file; give a file, not a directory or a device")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:  # e.g. /proc/self/mem: a "regular" file whose reads fail
        raise ValueError(f"{what} {path}: cannot read the file: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"{what} {path}: " + too_large("the file", len(data) >> 20, limit >> 20, " MiB"))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        found = f"byte 0x{data[exc.start]:02x} at offset {exc.start}"
        raise ValueError(f"{what} {path}: not UTF-8 text ({found})") from None
