"""The report's records of one run (jobs, task attempts, nodes, evictions, decisions), and how
each is read from a table row or rebuilt from the journal's events (``testbed.app.report.rundir``
loads the directory)."""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from testbed.journal.schema import Eviction as EvictionEvent
from testbed.journal.schema import (
    JobFinished,
    JobSubmitted,
    NodeLost,
    NodeUp,
    TaskFinished,
    TaskStarted,
    events_of,
)

JOB_COLUMNS = (
    "job_id", "workload", "submit_s", "start_s", "finish_s", "jct_s", "queue_s", "status",
    "tasks", "relaunched_tasks", "map_phase_s", "reduce_phase_s",
)  # fmt: skip


@dataclass(frozen=True)
class Job:
    job_id: str
    workload: str
    submit_s: float | None
    start_s: float | None
    finish_s: float | None
    jct_s: float | None
    queue_s: float | None
    status: str
    tasks: int | None = None
    relaunched_tasks: int | None = None
    extra: dict[str, float] = field(default_factory=dict)
    map_phase_s: float | None = None
    reduce_phase_s: float | None = None


@dataclass(frozen=True)
class TaskAttempt:
    task_id: str
    job_id: str
    stage: str
    index: int
    attempt: int
    node_id: str
    node_class: str
    memory_mb: float
    start_s: float
    end_s: float | None  # None: still running when the record stops
    status: str
    failure: str = ""
    bytes_in: float = 0.0
    bytes_out: float = 0.0
    spill_bytes: float = 0.0
    spills: float = 0.0
    merge_passes: float = 0.0
    peak_buffered_bytes: float = 0.0
    peak_rss_bytes: float = 0.0
    elastic: bool = False
    ideal_memory_mb: float | None = None
    predicted_s: float | None = None

    @property
    def allocation_ratio(self) -> float | None:
        """Allocated / ideal memory (None when the ideal was not recorded)."""
        return self.memory_mb / self.ideal_memory_mb if self.ideal_memory_mb else None

    @property
    def logical_key(self) -> tuple[str, str, int]:
        """The task independent of its attempt: relaunches share this key."""
        return (self.job_id, self.stage, self.index)


@dataclass(frozen=True)
class Node:
    node_id: str
    node_class: str
    launched_s: float
    ended_s: float | None  # None: alive at the end of the run
    end_reason: str
    price_per_hour: float | None


@dataclass(frozen=True)
class Eviction:
    t_s: float
    node_id: str
    node_class: str
    reason: str
    lifetime_trace_s: float | None
    tasks_running: int | None
    bytes_lost: float | None


@dataclass(frozen=True)
class Decision:
    t_s: float | None
    job_id: str
    task_id: str
    decision: str
    node_id: str


# --------------------------------------------------------------------- values


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _float(value: Any) -> float | None:
    """A finite number from a CSV cell or JSON value; None for blanks and junk."""
    if is_number(value):
        return float(value)
    if isinstance(value, str) and value.strip():
        try:
            number = float(value)
        except ValueError:
            return None
        return number if math.isfinite(number) else None
    return None


def _int(value: Any) -> int | None:
    number = _float(value)
    return None if number is None else int(number)


def text(value: Any, default: str = "") -> str:
    return default if value is None or value == "" else str(value)


# --------------------------------------------------------------------- tasks


def task_from_row(row: dict[str, Any]) -> TaskAttempt:
    return TaskAttempt(
        task_id=text(row.get("task_id")),
        job_id=text(row.get("job_id")),
        stage=text(row.get("stage")),
        index=_int(row.get("index")) or 0,
        attempt=_int(row.get("attempt")) or 1,
        node_id=text(row.get("node_id")),
        node_class=text(row.get("node_class"), "unknown"),
        memory_mb=_float(row.get("memory_mb")) or 0.0,
        start_s=_float(row.get("start_s")) or 0.0,
        end_s=_float(row.get("end_s")),
        status=text(row.get("status"), "running"),
        failure=text(row.get("failure")),
        **{key: _float(row.get(key)) or 0.0 for key in _TASK_NUMBERS},
        elastic=_int(row.get("elastic")) == 1,
        ideal_memory_mb=_float(row.get("ideal_memory_mb")),
        predicted_s=_float(row.get("predicted_s")),
    )


_TASK_NUMBERS = (
    "bytes_in", "bytes_out", "spill_bytes", "spills", "merge_passes",
    "peak_buffered_bytes", "peak_rss_bytes",
)  # fmt: skip


def tasks_from_events(events: list[dict[str, Any]]) -> list[TaskAttempt]:
    """Pair ``task_started`` with ``task_finished`` by (task, attempt)."""
    finished = {(e.get("task"), e.get("attempt")): e for e in events_of(events, TaskFinished)}
    attempts = []
    for start in events_of(events, TaskStarted):
        end = finished.get((start.get("task"), start.get("attempt")), {})
        attempts.append(
            TaskAttempt(
                task_id=text(start.get("task")),
                job_id=text(start.get("job")),
                stage=text(start.get("stage")),
                index=_int(start.get("index")) or 0,
                attempt=_int(start.get("attempt")) or 1,
                node_id=text(start.get("node")),
                node_class=text(start.get("class"), "unknown"),
                memory_mb=_float(start.get("memory_mb")) or 0.0,
                start_s=float(start["t"]),
                end_s=_float(end.get("t")),
                status=text(end.get("status"), "running"),
                bytes_in=_float(end.get("bytes_in")) or 0.0,
                bytes_out=_float(end.get("bytes_out")) or 0.0,
                spill_bytes=_float(end.get("spill_bytes")) or 0.0,
            )
        )
    return attempts


# --------------------------------------------------------------------- jobs


def job_from_row(row: dict[str, Any], mine: list[TaskAttempt]) -> Job:
    """One row of jobs.csv; ``mine`` are the job's attempts, to fill blank task counts."""
    job_id = text(row.get("job_id"))
    submit, start, finish = (_float(row.get(k)) for k in ("submit_s", "start_s", "finish_s"))
    counted_tasks, counted_relaunches = _task_counts(mine)
    tasks_column, relaunched_column = _int(row.get("tasks")), _int(row.get("relaunched_tasks"))
    return Job(
        job_id=job_id,
        workload=text(row.get("workload"), "unknown"),
        submit_s=submit,
        start_s=start,
        finish_s=finish,
        jct_s=_first(_float(row.get("jct_s")), _difference(finish, submit)),
        queue_s=_first(_float(row.get("queue_s")), _difference(start, submit)),
        status=text(row.get("status"), "unknown"),
        tasks=_first(tasks_column, counted_tasks),
        relaunched_tasks=_first(relaunched_column, counted_relaunches),
        map_phase_s=_float(row.get("map_phase_s")),
        reduce_phase_s=_float(row.get("reduce_phase_s")),
        extra={
            key: number
            for key, value in row.items()
            if key not in JOB_COLUMNS and key is not None and (number := _float(value)) is not None
        },
    )


def jobs_from_events(events: list[dict[str, Any]], tasks: list[TaskAttempt]) -> list[Job]:
    """One job per ``job_submitted``; without a ``job_finished`` it is unfinished."""
    finished = {e.get("job"): e for e in events_of(events, JobFinished)}
    by_job = attempts_by_job(tasks)
    return [
        _job_from_events(
            submitted,
            finished.get(submitted.get("job")),
            by_job.get(text(submitted.get("job")), []),
        )
        for submitted in events_of(events, JobSubmitted)
    ]


def _job_from_events(submitted: dict[str, Any], end: dict[str, Any] | None, mine: list[TaskAttempt]) -> Job:
    submit = float(submitted["t"])
    start = min((t.start_s for t in mine), default=None)
    counted_tasks, counted_relaunches = _task_counts(mine)
    finish, jct, status = None, None, "unfinished"
    if end is not None:
        finish = float(end["t"])
        jct = _first(_float(end.get("jct_s")), finish - submit)
        status = text(end.get("status"), "finished")
    return Job(
        job_id=text(submitted.get("job")),
        workload=text(submitted.get("workload"), "unknown"),
        submit_s=submit,
        start_s=start,
        finish_s=finish,
        jct_s=jct,
        queue_s=_difference(start, submit),
        status=status,
        tasks=counted_tasks,
        relaunched_tasks=counted_relaunches,
    )


def _task_counts(attempts: list[TaskAttempt]) -> tuple[int | None, int | None]:
    """(logical tasks, relaunches): every attempt beyond a task's first is a relaunch."""
    if not attempts:
        return None, None
    logical = len({a.logical_key for a in attempts})
    return logical, len(attempts) - logical


def _first(value: Any, fallback: Any) -> Any:
    """``value`` unless it is None (0 is a real value here, so ``or`` will not do)."""
    return fallback if value is None else value


def _difference(later: float | None, earlier: float | None) -> float | None:
    return None if later is None or earlier is None else later - earlier


# --------------------------------------------------------------------- nodes


def node_from_row(row: dict[str, Any]) -> Node:
    return Node(
        node_id=text(row.get("node_id")),
        node_class=text(row.get("node_class"), "unknown"),
        launched_s=_float(row.get("launched_s")) or 0.0,
        ended_s=_float(row.get("ended_s")),
        end_reason=text(row.get("end_reason")),
        price_per_hour=_float(row.get("price_per_hour")),
    )


def nodes_from_events(events: list[dict[str, Any]]) -> list[Node]:
    lost: dict[Any, dict[str, Any]] = {}
    for event in events_of(events, NodeLost):
        lost.setdefault(event.get("node"), event)
    nodes = []
    for up in events_of(events, NodeUp):
        end = lost.get(up.get("node"), {})
        nodes.append(
            Node(
                node_id=text(up.get("node")),
                node_class=text(up.get("class"), "unknown"),
                launched_s=float(up["t"]),
                ended_s=_float(end.get("t")),
                end_reason=text(end.get("reason")),
                price_per_hour=None,
            )
        )
    return nodes


def eviction_from_row(row: dict[str, Any]) -> Eviction:
    return Eviction(
        t_s=_float(row.get("t_s")) or 0.0,
        node_id=text(row.get("node_id")),
        node_class=text(row.get("node_class"), "unknown"),
        reason=text(row.get("reason")),
        lifetime_trace_s=_float(row.get("lifetime_trace_s")),
        tasks_running=_int(row.get("tasks_running")),
        bytes_lost=_float(row.get("bytes_lost")),
    )


def evictions_from_events(events: list[dict[str, Any]]) -> list[Eviction]:
    return [
        Eviction(
            t_s=float(e["t"]),
            node_id=text(e.get("node")),
            node_class=text(e.get("class"), "unknown"),
            reason=text(e.get("reason")),
            lifetime_trace_s=_float(e.get("lifetime_s")),
            tasks_running=_int(e.get("tasks_running")),
            bytes_lost=_float(e.get("bytes_lost")),
        )
        for e in events_of(events, EvictionEvent)
    ]


def decision_from_row(row: dict[str, Any]) -> Decision:
    return Decision(
        t_s=_float(row.get("t_s")),
        job_id=text(row.get("job_id")),
        task_id=text(row.get("task_id")),
        decision=text(row.get("decision"), "unknown"),
        node_id=text(row.get("node_id")),
    )


def attempts_by_job(tasks: list[TaskAttempt]) -> dict[str, list[TaskAttempt]]:
    grouped: dict[str, list[TaskAttempt]] = defaultdict(list)
    for attempt in tasks:
        grouped[attempt.job_id].append(attempt)
    return dict(grouped)
