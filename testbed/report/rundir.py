"""Load one recorded run directory into plain records.

The master writes the directory; this module only reads it and is deliberately
tolerant: every file but one of ``events.jsonl``/``jobs.csv``/``summary.json``
may be missing, unknown events and columns are ignored (numeric extra columns of
``jobs.csv`` are kept), and a run that crashed (no ``summary.json``) is rebuilt
as far as ``events.jsonl`` allows. Each table records where it came from in
``RunData.sources`` and every problem met on the way lands in ``RunData.warnings``,
so that the report can say what it is based on.

All times are seconds since the run started (the ``t`` of events), in emulated seconds:
the files record wall seconds, which a dilated run's loader divides by its dilation
(``RunData.dilation``, from scenario.yaml).
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from testbed.fidelity import emulated
from testbed.journal import Eviction as EvictionEvent
from testbed.journal import (
    JobFinished,
    JobSubmitted,
    NodeLost,
    NodeUp,
    TaskFinished,
    TaskStarted,
    events_of,
    read_events,
)
from testbed.report.errors import UsageError
from testbed.scenario import ClusterSpec, NodeClassSpec, PolicySpec

RUN_MARKERS = ("events.jsonl", "jobs.csv", "summary.json")
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
    lifetime_s: float | None
    tasks_running: int | None
    bytes_lost: float | None


@dataclass(frozen=True)
class Decision:
    t_s: float | None
    job_id: str
    task_id: str
    decision: str
    node_id: str


@dataclass
class RunData:
    path: Path
    scenario: dict[str, Any]
    cluster: ClusterSpec
    policy: PolicySpec
    events: list[dict[str, Any]]
    jobs: list[Job]
    tasks: list[TaskAttempt]
    nodes: list[Node]
    evictions: list[Eviction]
    decisions: list[Decision] | None
    summary: dict[str, Any] | None
    sources: dict[str, str]
    warnings: list[str]

    @property
    def partial(self) -> bool:
        """A run without ``summary.json`` crashed or is still going."""
        return self.summary is None

    def policy_label(self, axis: str) -> str:
        """``policy.<axis>`` as the scenario names it; a plugin with its version (summary.json)."""
        value = str(getattr(self.policy, axis))
        plugin = (self.summary or {}).get("plugins", {}).get(axis)
        return f"{plugin['import_path']} {plugin['version']}" if plugin else value

    @property
    def name(self) -> str:
        return str(self._setting("name") or self.path.name)

    @property
    def seed(self) -> Any:
        return self._setting("seed")

    @property
    def time_scale(self) -> float:
        value = self._setting("time_scale")
        return float(value) if _is_number(value) else 1.0

    @property
    def dilation(self) -> float:
        return run_dilation(self.scenario)

    @property
    def status(self) -> str:
        """``run_finished``'s status, or ``partial`` when the run never finished."""
        finished = [e for e in self.events if e.get("event") == "run_finished"]
        if finished:
            return str(finished[-1].get("status", "finished"))
        return "partial" if self.partial else "finished"

    @cached_property
    def end_s(self) -> float:
        """When the record stops: ``run_finished``, else the latest time seen anywhere."""
        finished = [e["t"] for e in self.events if e.get("event") == "run_finished"]
        if finished:
            return float(finished[-1])
        times = [e["t"] for e in self.events]
        times += [t.end_s if t.end_s is not None else t.start_s for t in self.tasks]
        times += [j.finish_s for j in self.jobs if j.finish_s is not None]
        times += [n.ended_s if n.ended_s is not None else n.launched_s for n in self.nodes]
        times += [e.t_s for e in self.evictions]
        return float(max(times, default=0.0))

    def class_spec(self, node_class: str) -> NodeClassSpec | None:
        """The scenario's spec of a node class, or None for a class it does not define."""
        if node_class not in ("reserved", "transient"):
            return None
        return getattr(self.cluster, node_class)

    def _setting(self, key: str) -> Any:
        if self.summary and key in self.summary:
            return self.summary[key]
        return self.scenario.get(key)


def resolve_run_dir(run_dir: str | Path) -> Path:
    """The run directory itself (``runs/latest`` may be a symlink), or a ``UsageError``."""
    path = Path(run_dir).expanduser()
    if not path.exists():
        raise UsageError(f"{run_dir}: no such run directory")
    if not path.is_dir():
        raise UsageError(f"{run_dir}: not a directory (expected a run directory)")
    if not any((path / marker).is_file() for marker in RUN_MARKERS):
        raise UsageError(f"{run_dir}: not a run directory (none of {', '.join(RUN_MARKERS)} found)")
    return path.resolve()


def load_run(run_dir: str | Path) -> RunData:
    path = resolve_run_dir(run_dir)
    warnings: list[str] = []
    sources: dict[str, str] = {}
    scenario = _read_yaml(path / "scenario.yaml", warnings)
    summary = _read_summary(path / "summary.json", warnings)
    cluster, policy = _specs(scenario, summary, warnings)
    dilation = run_dilation(scenario)
    events = [emulated(event, dilation) for event in _read_events(path / "events.jsonl", warnings)]

    def read_table(name: str, optional: bool = False) -> list[dict] | None:
        rows = _read_csv(path / name, warnings, optional)
        return None if rows is None else [emulated(row, dilation) for row in rows]

    tasks_rows = read_table("tasks.csv")
    if tasks_rows is not None:
        tasks, sources["tasks"] = [_task_from_row(r) for r in tasks_rows], "tasks.csv"
    else:
        tasks, sources["tasks"] = _tasks_from_events(events), "events.jsonl"

    job_rows = read_table("jobs.csv")
    if job_rows is not None:
        by_job = attempts_by_job(tasks)
        jobs = [_job_from_row(r, by_job.get(_text(r.get("job_id")), [])) for r in job_rows]
        sources["jobs"] = "jobs.csv"
        if summary is None:  # a crashed run: jobs.csv has a row per *finished* job only
            listed = {job.job_id for job in jobs}
            jobs += [j for j in _jobs_from_events(events, tasks) if j.job_id not in listed]
    else:
        jobs, sources["jobs"] = _jobs_from_events(events, tasks), "events.jsonl"

    node_rows = read_table("nodes.csv")
    if node_rows is not None:
        nodes, sources["nodes"] = [_node_from_row(r) for r in node_rows], "nodes.csv"
    else:
        nodes, sources["nodes"] = _nodes_from_events(events), "events.jsonl"

    eviction_rows = read_table("evictions.csv")
    if eviction_rows is not None:
        evictions = [_eviction_from_row(r) for r in eviction_rows]
        sources["evictions"] = "evictions.csv"
    else:
        evictions, sources["evictions"] = _evictions_from_events(events), "events.jsonl"

    decision_rows = read_table("decisions.csv", optional=True)
    decisions = None if decision_rows is None else [_decision_from_row(r) for r in decision_rows]

    return RunData(
        path=path, scenario=scenario, cluster=cluster, policy=policy, events=events,
        jobs=jobs, tasks=tasks, nodes=nodes, evictions=evictions, decisions=decisions,
        summary=summary, sources=sources, warnings=warnings,
    )  # fmt: skip


# --------------------------------------------------------------------- files


def run_dilation(scenario: dict[str, Any]) -> float:
    """The dilation the run used (its scenario.yaml records the resolved factor)."""
    fidelity = scenario.get("fidelity")
    value = fidelity.get("dilation") if isinstance(fidelity, dict) else None
    return float(value) if _is_number(value) and value >= 1 else 1.0


def _read_yaml(path: Path, warnings: list[str]) -> dict[str, Any]:
    if not path.is_file():
        warnings.append(f"{path.name} is missing: scenario settings fall back to defaults")
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        warnings.append(f"{path.name} cannot be read ({type(exc).__name__}): defaults used")
        return {}
    if not isinstance(data, dict):
        warnings.append(f"{path.name} is not a mapping: defaults used")
        return {}
    return data


def _specs(
    scenario: dict[str, Any], summary: dict[str, Any] | None, warnings: list[str]
) -> tuple[ClusterSpec, PolicySpec]:
    """The cluster and policy sections with the schema's defaults filled in.

    Only these sections are validated: the whole scenario may name input files
    that no longer exist where the report is made. The policy falls back to
    summary.json's when the scenario is missing.
    """
    try:
        cluster = ClusterSpec.model_validate(scenario.get("cluster") or {})
    except ValidationError:
        warnings.append("scenario.yaml: the cluster section is invalid: defaults used")
        cluster = ClusterSpec()
    try:
        policy = PolicySpec.model_validate(scenario.get("policy") or (summary or {}).get("policy") or {})
    except ValidationError:
        warnings.append("scenario.yaml: the policy section is invalid: defaults used")
        policy = PolicySpec()
    return cluster, policy


def _read_events(path: Path, warnings: list[str]) -> list[dict[str, Any]]:
    """Every well-formed event; a crash may leave a torn last line, which is skipped."""
    if not path.is_file():
        warnings.append("events.jsonl is missing")
        return []
    read = read_events(path)
    if read.malformed:
        warnings.append(f"events.jsonl: {read.malformed} malformed line(s) skipped")
    return read.events


def _read_summary(path: Path, warnings: list[str]) -> dict[str, Any] | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        warnings.append("summary.json cannot be parsed: treated as a partial run")
        return None
    if not isinstance(data, dict):
        warnings.append("summary.json is not an object: treated as a partial run")
        return None
    return data


def _read_csv(path: Path, warnings: list[str], optional: bool = False) -> list[dict] | None:
    if not path.is_file():
        if not optional:
            warnings.append(f"{path.name} is missing: rebuilt from events.jsonl")
        return None
    try:
        with path.open(encoding="utf-8", newline="") as handle:
            return [row for row in csv.DictReader(handle) if any(row.values())]
    except (OSError, csv.Error) as exc:
        warnings.append(f"{path.name} cannot be read ({exc}): rebuilt from events.jsonl")
        return None


# --------------------------------------------------------------------- values


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _float(value: Any) -> float | None:
    """A finite number from a CSV cell or JSON value; None for blanks and junk."""
    if _is_number(value):
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


def _text(value: Any, default: str = "") -> str:
    return default if value is None or value == "" else str(value)


# --------------------------------------------------------------------- tasks


def _task_from_row(row: dict[str, Any]) -> TaskAttempt:
    return TaskAttempt(
        task_id=_text(row.get("task_id")),
        job_id=_text(row.get("job_id")),
        stage=_text(row.get("stage")),
        index=_int(row.get("index")) or 0,
        attempt=_int(row.get("attempt")) or 1,
        node_id=_text(row.get("node_id")),
        node_class=_text(row.get("node_class"), "unknown"),
        memory_mb=_float(row.get("memory_mb")) or 0.0,
        start_s=_float(row.get("start_s")) or 0.0,
        end_s=_float(row.get("end_s")),
        status=_text(row.get("status"), "running"),
        failure=_text(row.get("failure")),
        **{key: _float(row.get(key)) or 0.0 for key in _TASK_NUMBERS},
        elastic=_int(row.get("elastic")) == 1,
        ideal_memory_mb=_float(row.get("ideal_memory_mb")),
        predicted_s=_float(row.get("predicted_s")),
    )


_TASK_NUMBERS = (
    "bytes_in", "bytes_out", "spill_bytes", "spills", "merge_passes",
    "peak_buffered_bytes", "peak_rss_bytes",
)  # fmt: skip


def _tasks_from_events(events: list[dict[str, Any]]) -> list[TaskAttempt]:
    """Pair ``task_started`` with ``task_finished`` by (task, attempt)."""
    finished = {(e.get("task"), e.get("attempt")): e for e in events_of(events, TaskFinished)}
    attempts = []
    for start in events_of(events, TaskStarted):
        end = finished.get((start.get("task"), start.get("attempt")), {})
        attempts.append(
            TaskAttempt(
                task_id=_text(start.get("task")),
                job_id=_text(start.get("job")),
                stage=_text(start.get("stage")),
                index=_int(start.get("index")) or 0,
                attempt=_int(start.get("attempt")) or 1,
                node_id=_text(start.get("node")),
                node_class=_text(start.get("class"), "unknown"),
                memory_mb=_float(start.get("memory_mb")) or 0.0,
                start_s=float(start["t"]),
                end_s=_float(end.get("t")),
                status=_text(end.get("status"), "running"),
                bytes_in=_float(end.get("bytes_in")) or 0.0,
                bytes_out=_float(end.get("bytes_out")) or 0.0,
                spill_bytes=_float(end.get("spill_bytes")) or 0.0,
            )
        )
    return attempts


# --------------------------------------------------------------------- jobs


def _job_from_row(row: dict[str, Any], mine: list[TaskAttempt]) -> Job:
    """One row of jobs.csv; ``mine`` are the job's attempts, to fill blank task counts."""
    job_id = _text(row.get("job_id"))
    submit, start, finish = (_float(row.get(k)) for k in ("submit_s", "start_s", "finish_s"))
    counted_tasks, counted_relaunches = _task_counts(mine)
    tasks_column, relaunched_column = _int(row.get("tasks")), _int(row.get("relaunched_tasks"))
    return Job(
        job_id=job_id,
        workload=_text(row.get("workload"), "unknown"),
        submit_s=submit,
        start_s=start,
        finish_s=finish,
        jct_s=_first(_float(row.get("jct_s")), _difference(finish, submit)),
        queue_s=_first(_float(row.get("queue_s")), _difference(start, submit)),
        status=_text(row.get("status"), "unknown"),
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


def _jobs_from_events(events: list[dict[str, Any]], tasks: list[TaskAttempt]) -> list[Job]:
    """One job per ``job_submitted``; without a ``job_finished`` it is unfinished."""
    finished = {e.get("job"): e for e in events_of(events, JobFinished)}
    by_job = attempts_by_job(tasks)
    return [
        _job_from_events(
            submitted,
            finished.get(submitted.get("job")),
            by_job.get(_text(submitted.get("job")), []),
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
        status = _text(end.get("status"), "finished")
    return Job(
        job_id=_text(submitted.get("job")),
        workload=_text(submitted.get("workload"), "unknown"),
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


def _node_from_row(row: dict[str, Any]) -> Node:
    return Node(
        node_id=_text(row.get("node_id")),
        node_class=_text(row.get("node_class"), "unknown"),
        launched_s=_float(row.get("launched_s")) or 0.0,
        ended_s=_float(row.get("ended_s")),
        end_reason=_text(row.get("end_reason")),
        price_per_hour=_float(row.get("price_per_hour")),
    )


def _nodes_from_events(events: list[dict[str, Any]]) -> list[Node]:
    lost: dict[Any, dict[str, Any]] = {}
    for event in events_of(events, NodeLost):
        lost.setdefault(event.get("node"), event)
    nodes = []
    for up in events_of(events, NodeUp):
        end = lost.get(up.get("node"), {})
        nodes.append(
            Node(
                node_id=_text(up.get("node")),
                node_class=_text(up.get("class"), "unknown"),
                launched_s=float(up["t"]),
                ended_s=_float(end.get("t")),
                end_reason=_text(end.get("reason")),
                price_per_hour=None,
            )
        )
    return nodes


def _eviction_from_row(row: dict[str, Any]) -> Eviction:
    return Eviction(
        t_s=_float(row.get("t_s")) or 0.0,
        node_id=_text(row.get("node_id")),
        node_class=_text(row.get("node_class"), "unknown"),
        reason=_text(row.get("reason")),
        lifetime_s=_float(row.get("lifetime_s")),
        tasks_running=_int(row.get("tasks_running")),
        bytes_lost=_float(row.get("bytes_lost")),
    )


def _evictions_from_events(events: list[dict[str, Any]]) -> list[Eviction]:
    return [
        Eviction(
            t_s=float(e["t"]),
            node_id=_text(e.get("node")),
            node_class=_text(e.get("class"), "unknown"),
            reason=_text(e.get("reason")),
            lifetime_s=_float(e.get("lifetime_s")),
            tasks_running=_int(e.get("tasks_running")),
            bytes_lost=_float(e.get("bytes_lost")),
        )
        for e in events_of(events, EvictionEvent)
    ]


def _decision_from_row(row: dict[str, Any]) -> Decision:
    return Decision(
        t_s=_float(row.get("t_s")),
        job_id=_text(row.get("job_id")),
        task_id=_text(row.get("task_id")),
        decision=_text(row.get("decision"), "unknown"),
        node_id=_text(row.get("node_id")),
    )


def attempts_by_job(tasks: list[TaskAttempt]) -> dict[str, list[TaskAttempt]]:
    grouped: dict[str, list[TaskAttempt]] = defaultdict(list)
    for attempt in tasks:
        grouped[attempt.job_id].append(attempt)
    return dict(grouped)
