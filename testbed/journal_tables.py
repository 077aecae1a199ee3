"""The run journal's CSV tables: each row's columns and their types, and the rows made from events.

Part of the journal's schema (``testbed.journal`` declares the events): the
master's writer takes each table's columns from ``TABLES`` and, for an event
kind in ``ROWS_FROM_EVENTS``, writes the row made from the event.
"""

from collections.abc import Callable, Mapping
from typing import Any, TypedDict


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
    memory_mb: int
    ideal_memory_mb: int
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
