"""The run journal's CSV tables: each row's columns and their types, and the rows made from events.

Part of the journal's schema (``testbed.journal`` declares the events): the
master's writer takes each table's columns from ``TABLES``, checks every row
against them (``check_row``: a column not declared here, or a value of the
wrong type, is a bug and raises) and, for an event kind in ``ROWS_FROM_EVENTS``,
writes the row made from the event.
"""

from collections.abc import Callable, Mapping
from typing import Any, TypedDict, get_type_hints

from testbed.journal import JournalSchemaError, runtime_types


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
"""Each CSV table's columns, in order (``<name>.csv``)."""

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
    of its type (``None``: an empty cell)."""
    types = _COLUMN_TYPES.get(table)
    if types is None:
        raise JournalSchemaError(f"journal table {table!r} is not one of testbed/journal_tables.py's TABLES")
    for name, value in fields.items():
        allowed = types.get(name)
        if allowed is None:
            raise JournalSchemaError(
                f"journal table {table!r} has no column {name!r} in testbed/journal_tables.py"
            )
        if value is not None and not isinstance(value, allowed):
            expected = " | ".join(t.__name__ for t in allowed)
            raise JournalSchemaError(f"journal table {table!r}: {name}={value!r} is not of type {expected}")


JOB_TOTALS = (
    "bytes_recomputed",
    "bytes_checkpointed",
    "bytes_pushed",
    "cache_hits",
    "cache_misses",
    "bytes_from_cache",
)
"""Per-job counters (``jobs.csv`` columns) that summary.json also totals over the run."""


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
    "eviction": ("evictions", _eviction_row),
}
"""Event kinds whose every event is also a table row, and how the row is made from it."""
