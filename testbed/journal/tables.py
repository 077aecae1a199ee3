"""The run journal's CSV tables: each row's columns and their types, and how rows are made from events.

Part of the journal's schema (``testbed.journal.schema`` declares the events). The tables
are a function of the events: every row of every table is made from one event
(``ROWS_FROM_EVENTS``: ``task_finished`` makes a row of tasks.csv, ``job_finished``
of jobs.csv, ``node_start_failed``/``node_lost``/``node_ended`` of nodes.csv,
``decision`` of decisions.csv, ``eviction`` of evictions.csv), checked against
its table's columns (``check_row``: a column not declared here, or a value of the
wrong type, is a bug and raises). The master's writer (``master.shell.journal_file``) adds
each event's row as it writes the event; ``rebuild_tables`` makes the same CSVs,
byte for byte, from ``events.jsonl`` alone.

Each time column names its clock on disk (README, "The run directory"): a column declared
here as ``<x>_s`` is in the journal's clock, wall seconds on this machine, and is written as
``<x>_wall_s``; one in trace seconds (``TRACE_COLUMNS``: the lifetime a model drew) as
``<x>_trace_s``; one in this machine's CPU seconds (``CPU_COLUMNS``) as it is.
``read_table`` reads a table back under these names (an older run directory's ``<x>_s``
headers too), and ``emulated_row`` converts a row once: every ``<x>_wall_s`` becomes
``<x>_s`` in emulated seconds (wall / the run's dilation).
"""

import csv
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO, TypedDict, cast, get_type_hints

from testbed.journal.schema import JournalSchemaError, ShapeMemo, read_events, runtime_types
from testbed.scenario.time_base import divided


class TaskRow(TypedDict, total=False):
    task_id: str
    job_id: str
    stage: int
    index: int
    attempt: int
    node_id: str
    node_class: str
    memory_mb: int
    elastic: int
    ideal_memory_mb: int
    predicted_s: float
    start_s: float
    end_s: float
    status: str
    failure: str
    bytes_in: int
    bytes_out: int
    spill_bytes: int
    spills: int
    merge_passes: int
    peak_buffered_bytes: int
    peak_rss_bytes: int
    cache_hits: int
    cache_misses: int
    cache_bytes_read: int
    compute_s: float
    cpu_s: float
    role: str
    """Under speculation: ``original`` or ``copy``; empty otherwise."""
    input_local_bytes: int
    """Bytes of its replicated split this attempt's worker read from its own node, from remote
    holders (summed) and from the source, as it reported them (``input_reads`` of its
    ``task_finished``; empty where none came: the simulator, a map of an unreplicated input,
    an attempt lost with its node). Appended: older run directories' tables lack them."""
    input_remote_bytes: int
    input_source_bytes: int


class JobRow(TypedDict, total=False):
    job_id: str
    name: str
    workload: str
    submit_s: float
    start_s: float
    finish_s: float
    jct_s: float
    queue_s: float
    status: str
    tasks: int
    relaunched_tasks: int
    relaunched_ratio: float
    error_relaunches: int
    bytes_recomputed: int
    bytes_checkpointed: int
    bytes_pushed: int
    cache_hits: int
    cache_misses: int
    bytes_from_cache: int
    map_phase_s: float
    reduce_phase_s: float
    error: str
    """Why the job failed (empty when it succeeded)."""
    speculative_attempts: int
    """Under speculation (empty otherwise): copies launched, copies that won, and the
    slot-seconds of attempts killed because the other attempt won (appended: older run
    directories' tables lack them)."""
    speculative_wins: int
    wasted_slot_s: float
    """Also counts the slot-seconds of preempted attempts."""
    preempted_attempts: int
    """Attempts a scheduler preempted or migrated (``Preempt``, ``Migrate``); empty if none."""
    input_local_bytes: int
    """Bytes of replicated split its maps' workers read from their own node, a remote holder,
    the source, and the local share (``jobs[].input_replication`` on a real backend; empty
    otherwise: the simulator's are its plan's, in summary.json)."""
    input_remote_bytes: int
    input_source_bytes: int
    input_local_fraction: float


class NodeRow(TypedDict, total=False):
    node_id: str
    node_class: str
    launched_s: float
    ended_s: float
    end_reason: str
    price_per_hour: float


class DecisionRow(TypedDict, total=False):
    t_s: float
    job_id: str
    task_id: str
    decision: str
    node_id: str
    memory_mb: float
    ideal_memory_mb: float
    allocation_ratio: float
    predicted_duration_s: float
    detail: str


class EvictionRow(TypedDict, total=False):
    t_s: float
    node_id: str
    node_class: str
    reason: str
    lifetime_s: float
    tasks_running: int
    bytes_lost: int


TABLE_ROWS: dict[str, type[Mapping[str, Any]]] = {
    "tasks": TaskRow,
    "jobs": JobRow,
    "nodes": NodeRow,
    "decisions": DecisionRow,
    "evictions": EvictionRow,
}
TABLES: dict[str, tuple[str, ...]] = {name: tuple(row.__annotations__) for name, row in TABLE_ROWS.items()}
"""Each CSV table's columns, in order, as its rows (and the journal's events) name them."""
TRACE_COLUMNS: dict[str, frozenset[str]] = {"evictions": frozenset({"lifetime_s"})}
"""The columns in trace seconds (the scenario's clock); every other ``_s`` column is wall seconds."""
CPU_COLUMNS: dict[str, frozenset[str]] = {"tasks": frozenset({"cpu_s"})}
"""The columns in CPU seconds of this machine (a worker's process time): no clock's, written
and read as they are, never divided by the dilation (they were written ``cpu_wall_s``)."""


def disk_column(table: str, column: str) -> str:
    """A column's name in ``<table>.csv``: a time says its clock (``_wall_s``, ``_trace_s``;
    CPU seconds are ``cpu_s``)."""
    if not column.endswith("_s") or column in CPU_COLUMNS.get(table, ()):
        return column
    clock = "trace" if column in TRACE_COLUMNS.get(table, ()) else "wall"
    return f"{column[:-2]}_{clock}_s"


DISK_COLUMNS: dict[str, tuple[str, ...]] = {
    name: tuple(disk_column(name, column) for column in columns) for name, columns in TABLES.items()
}
"""Each CSV table's header, in order (``<name>.csv``)."""

_COLUMN_TYPES = {
    name: {column: runtime_types(hint) for column, hint in get_type_hints(row).items()}
    for name, row in TABLE_ROWS.items()
}


def columns(table: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The entries of ``values`` that are columns of ``table``: of a task's metrics or a
    scheduler's decision detail, the table keeps these (the rest is in ``detail``, or not kept)."""
    kept = _COLUMN_TYPES[table]
    return {name: value for name, value in values.items() if name in kept}


def check_row(table: str, fields: Mapping[str, Any]) -> None:
    """Raise ``JournalSchemaError`` unless every field is a column of ``table`` holding a value
    of its type (``None``: an empty cell). A row of a shape that passed before passes at once."""
    _ROW_SHAPES(table, fields)


def _check_row(table: str, fields: Mapping[str, Any]) -> None:
    types = _COLUMN_TYPES.get(table)
    if types is None:
        raise JournalSchemaError(f"journal table {table!r} is not one of testbed/journal/tables.py's TABLES")
    for name, value in fields.items():
        allowed = types.get(name)
        if allowed is None:
            raise JournalSchemaError(
                f"journal table {table!r} has no column {name!r} in testbed/journal/tables.py"
            )
        if value is not None and not isinstance(value, allowed):
            expected = " | ".join(t.__name__ for t in allowed)
            raise JournalSchemaError(f"journal table {table!r}: {name}={value!r} is not of type {expected}")


_ROW_SHAPES = ShapeMemo(_check_row)


JOB_TOTALS = (
    "bytes_recomputed",
    "bytes_checkpointed",
    "bytes_pushed",
    "cache_hits",
    "cache_misses",
    "bytes_from_cache",
)
"""Per-job counters (``jobs.csv`` columns) that summary.json also totals over the run."""
SPECULATION_COUNTERS = ("speculative_attempts", "speculative_wins", "wasted_slot_s")
"""The ``jobs.csv`` columns of speculation (empty without it), totalled by summary.json."""
PREEMPTION_COUNTERS = ("preempted_attempts",)
"""The ``jobs.csv`` column of preemption (empty for a job with none), totalled by summary.json."""
INPUT_READS = ("input_local_bytes", "input_remote_bytes", "input_source_bytes", "input_local_fraction")
"""The ``jobs.csv`` columns of reported replica reads (empty for a job without)."""
JOB_COUNTERS = (
    "error_relaunches", *JOB_TOTALS, "map_phase_s", "reduce_phase_s",
    *SPECULATION_COUNTERS, *PREEMPTION_COUNTERS, *INPUT_READS,
)  # fmt: skip
"""The ``jobs.csv`` columns ``job_finished`` carries as they are."""


TASK_METRICS = (
    "bytes_in",
    "bytes_out",
    "spill_bytes",
    "spills",
    "merge_passes",
    "peak_buffered_bytes",
    "peak_rss_bytes",
    "cache_hits",
    "cache_misses",
    "cache_bytes_read",
    "compute_s",
    "cpu_s",
)
"""A task's metrics (``testbed.wire.protocol.TaskMetrics``) that ``task_finished`` and tasks.csv keep."""


# --------------------------------------------------------------------- rows from events


def _task_row(event: Mapping[str, Any]) -> TaskRow:
    row: dict[str, Any] = {
        "task_id": event["task"],
        "job_id": event["job"],
        "stage": event["stage"],
        "index": event.get("index"),
        "attempt": event["attempt"],
        "node_id": event["node"],
        "node_class": event.get("class"),
        "memory_mb": event.get("memory_mb"),
        "elastic": event.get("elastic"),
        "ideal_memory_mb": event.get("ideal_memory_mb"),
        "predicted_s": event.get("predicted_s"),
        "start_s": event.get("start_s"),
        "end_s": event.get("end_s", event["t"]),
        "status": event["status"],
        "failure": event["failure"],
    }
    row.update((name, event[name]) for name in TASK_METRICS if name in event)
    if "role" in event:
        row["role"] = event["role"]
    if "input_reads" in event:
        reads = event["input_reads"]
        row["input_local_bytes"] = reads["local"]
        row["input_remote_bytes"] = sum(reads["remote"].values())
        row["input_source_bytes"] = reads["source"]
    return cast(TaskRow, row)


def _job_row(event: Mapping[str, Any]) -> JobRow:
    row: dict[str, Any] = {
        name: event.get(name)
        for name in ("name", "workload", "submit_s", "start_s", "tasks", "relaunched_tasks", *JOB_COUNTERS)
    }
    row.update(job_id=event["job"], jct_s=event["jct_s"], status=event["status"], error=event["error"])
    if "submit_s" in event:  # a job that had a plan (one that never had has no times)
        row["finish_s"] = event["t"]
        if event["start_s"] is not None:
            row["queue_s"] = event["start_s"] - event["submit_s"]
        row["relaunched_ratio"] = event["relaunched_tasks"] / event["tasks"]
    return cast(JobRow, row)


def _node_row(event: Mapping[str, Any]) -> NodeRow:
    row = {
        "node_id": event["node"],
        "node_class": event.get("class"),
        "launched_s": event.get("launched_s"),
        "ended_s": event.get("ended_s", event["t"]),
        "end_reason": event.get("reason", "start_failed"),
        "price_per_hour": event.get("price_per_hour"),
    }
    return cast(NodeRow, row)


def _decision_row(event: Mapping[str, Any]) -> DecisionRow:
    detail = event["detail"]
    row: dict[str, Any] = {
        "t_s": event["t"],
        "job_id": event["job"],
        "task_id": event["task"],
        "decision": event["decision"],
        "node_id": event["node"],
        **columns("decisions", detail),
        "detail": json.dumps(detail, separators=(",", ":")),
    }
    return cast(DecisionRow, row)


def _eviction_row(event: Mapping[str, Any]) -> EvictionRow:
    return {
        "t_s": event["t"],
        "node_id": event["node"],
        "node_class": event["class"],
        "reason": event["reason"],
        "lifetime_s": event["lifetime_s"],
        "tasks_running": event["tasks_running"],
        "bytes_lost": event["bytes_lost"],
    }


ROWS_FROM_EVENTS: dict[str, tuple[str, Callable[[Mapping[str, Any]], Mapping[str, Any]]]] = {
    "task_finished": ("tasks", _task_row),
    "job_finished": ("jobs", _job_row),
    "node_start_failed": ("nodes", _node_row),
    "node_lost": ("nodes", _node_row),
    "node_ended": ("nodes", _node_row),
    "decision": ("decisions", _decision_row),
    "eviction": ("evictions", _eviction_row),
}
"""Each event kind that makes a table row, its table, and how the row is made from the event
(as ``events.jsonl`` records it: ``t`` rounded, values as JSON gives them back). Every row of
every table is made so: the tables are a function of the events."""


def row_of(event: Mapping[str, Any]) -> tuple[str, Mapping[str, Any]] | None:
    """``(table, row)`` of an event that makes a row, checked against the table's columns."""
    derived = ROWS_FROM_EVENTS.get(event["event"])
    if derived is None:
        return None
    table, make_row = derived
    row = make_row(event)
    check_row(table, row)
    return table, row


# --------------------------------------------------------------------- CSV files


def cell(value: Any) -> Any:
    """A value as its CSV cell holds it: floats to 4 decimals, None empty."""
    if isinstance(value, float):
        return round(value, 4)
    if value is None:
        return ""
    return value


class TableWriter:
    """The CSV writer of ``<table>.csv``: its columns in order, a column the row lacks empty,
    an entry that is no column ignored (what ``csv.DictWriter`` with ``extrasaction="ignore"``
    writes, without its per-row dict and generator: the simulator writes a million rows).

    ``header``: the one a resumed run found in its file, under which the rows are appended
    (an older run directory's ``<x>_s`` names, perhaps fewer columns: one the header lacks is
    left out of the file, ``events.jsonl`` has it; one it has that the table no longer has is
    empty); else today's (``DISK_COLUMNS``)."""

    def __init__(self, handle: TextIO, table: str, header: Sequence[str] | None = None) -> None:
        self.table = table
        self.header = DISK_COLUMNS[table] if header is None else tuple(header)
        journal_names = {disk_column(table, column): column for column in TABLES[table]}
        self.columns = tuple(journal_names.get(name, name) for name in self.header)
        self._writer = csv.writer(handle)

    def writeheader(self) -> None:
        self._writer.writerow(self.header)

    def writerow(self, row: Mapping[str, Any]) -> None:
        """The row's cells (``cell``, inlined: 27 calls a task row)."""
        values = map(row.get, self.columns)
        self._writer.writerow(
            [round(v, 4) if isinstance(v, float) else "" if v is None else v for v in values]
        )


def table_writer(handle: TextIO, table: str, header: Sequence[str] | None = None) -> TableWriter:
    """The CSV writer of ``<table>.csv`` (the caller writes the header into a fresh file;
    ``header``: the one found in a file the rows are appended to)."""
    return TableWriter(handle, table, header)


def rebuild_tables(events_path: Path, out_dir: Path) -> dict[str, int]:
    """Write every table a run's ``events.jsonl`` makes into ``out_dir`` (the CSVs the run
    wrote as it went, byte for byte); returns the rows of each table written. A table no event
    makes is not written (as in the run)."""
    handles: dict[str, tuple[TextIO, TableWriter]] = {}
    counts: dict[str, int] = {}
    try:
        for event in read_events(events_path).events:
            derived = row_of(event)
            if derived is None:
                continue
            table, row = derived
            if table not in handles:
                handle = open(out_dir / f"{table}.csv", "w", newline="", encoding="utf-8")  # noqa: SIM115
                handles[table] = handle, table_writer(handle, table)
                handles[table][1].writeheader()
            handles[table][1].writerow(row)
            counts[table] = counts.get(table, 0) + 1
    finally:
        for handle, _ in handles.values():
            handle.close()
    return counts


# --------------------------------------------------------------------- reading tables back


def read_table(path: Path, table: str) -> list[dict[str, str]]:
    """The rows of ``<table>.csv`` (none when it is missing) under its header's names
    (``DISK_COLUMNS``); a run directory written before the columns named their clock has
    ``<x>_s`` for each of them, read as its ``<x>_wall_s`` or ``<x>_trace_s``, and one written
    before CPU seconds were told apart has ``cpu_wall_s``, read as ``cpu_s``."""
    if not path.exists():
        return []
    upgraded = {column: disk_column(table, column) for column in TABLES[table]}
    upgraded |= {f"{column[:-2]}_wall_s": column for column in CPU_COLUMNS.get(table, ())}
    with open(path, newline="", encoding="utf-8") as handle:
        rows = csv.DictReader(handle)
        return [{upgraded.get(key, key): value for key, value in row.items()} for row in rows]


def emulated_row(row: Mapping[str, Any], dilation: float) -> dict[str, Any]:
    """``row`` (as ``read_table`` gives it) with each ``<x>_wall_s`` as ``<x>_s`` in emulated
    seconds (wall / ``dilation``; a number given as text stays text); ``_trace_s`` columns and
    the rest as they are. With ``dilation`` 1, the row in the journal's clock and names."""
    converted: dict[str, Any] = {}
    for key, value in row.items():
        if key.endswith("_wall_s"):
            converted[key[: -len("_wall_s")] + "_s"] = divided(value, dilation)
        else:
            converted[key] = value
    return converted


def measured_rows(path: Path) -> list[dict[str, Any]]:
    """``<table>.csv``'s rows (the table named by the file) under the journal's names, each
    time ``<x>_s`` in the seconds it was measured in (wall; a simulated run's are emulated)."""
    return [emulated_row(row, 1.0) for row in read_table(path, path.stem)]


CPU_FIELDS = {f"solver_time_p{q}_s": f"solver_time_p{q}_cpu_s" for q in (50, 99)}
"""summary.json's round times (``master.summary.latency``) under their names before the clock
split, and their names today when they were CPU seconds."""


def clock_named(summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` under today's names: an older one's ``solver_time_*_s`` were its rounds' CPU
    seconds unless every round was the model's (``solver_time_source``), and are then read as
    ``solver_time_*_cpu_s`` (a summary that has those already is today's, returned as it is)."""
    today = any(name in summary for name in CPU_FIELDS.values())
    if today or summary.get("solver_time_source") in (None, "model"):
        return summary
    renamed = {CPU_FIELDS.get(name, name): value for name, value in summary.items()}
    return {**renamed, **dict.fromkeys(CPU_FIELDS, None)}
