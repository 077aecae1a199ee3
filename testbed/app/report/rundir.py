"""Load one recorded run directory into plain records.

The master writes the directory; this module only reads it and is deliberately
tolerant: every file but one of ``events.jsonl``/``jobs.csv``/``summary.json``
may be missing, unknown events and columns are ignored (numeric extra columns of
``jobs.csv`` are kept), and a run that crashed (no ``summary.json``) is rebuilt
as far as ``events.jsonl`` allows. Each table records where it came from in
``RunData.sources`` and every problem met on the way lands in ``RunData.warnings``,
so that the report can say what it is based on.

All times are seconds since the run started (the ``t`` of events), in emulated seconds:
the files record wall seconds (the tables' ``_wall_s`` columns, the journal's times), which
the loader divides by the run's dilation (``RunData.dilation``, from scenario.yaml), once,
as it reads them; a lifetime a model drew stays in trace seconds (``lifetime_trace_s``).
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from testbed.app.report.errors import UsageError
from testbed.app.report.records import (
    Decision,
    Eviction,
    Job,
    Node,
    TaskAttempt,
    attempts_by_job,
    decision_from_row,
    eviction_from_row,
    evictions_from_events,
    is_number,
    job_from_row,
    jobs_from_events,
    node_from_row,
    nodes_from_events,
    task_from_row,
    tasks_from_events,
    text,
)
from testbed.journal.schema import read_events
from testbed.journal.tables import emulated_row
from testbed.journal.tables import read_table as read_csv_table
from testbed.scenario.cluster import ClusterSpec, NodeClassSpec, class_specs
from testbed.scenario.fidelity import emulated
from testbed.scenario.schema import PolicySpec
from testbed.wire.protocol import NodeClass

RUN_MARKERS = ("events.jsonl", "jobs.csv", "summary.json")


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

    def workload_label(self, workload: str) -> str:
        """A job's ``workload`` as the scenario names it; a plugin with its version (summary.json)."""
        plugin = (self.summary or {}).get("plugins", {}).get("workloads", {}).get(workload)
        return f"{plugin['import_path']} {plugin['version']}" if plugin else workload

    @property
    def plugin_workloads(self) -> str:
        """The run's workload plugins with their versions (summary.json), ``; ``-joined."""
        found = (self.summary or {}).get("plugins", {}).get("workloads", {})
        return "; ".join(sorted(self.workload_label(name) for name in found))

    @property
    def name(self) -> str:
        return str(self._setting("name") or self.path.name)

    @property
    def seed(self) -> Any:
        return self._setting("seed")

    @property
    def time_scale(self) -> float:
        value = self._setting("time_scale")
        return float(value) if is_number(value) else 1.0

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

    @cached_property
    def node_classes(self) -> dict[str, tuple[NodeClass, NodeClassSpec]]:
        """Each node class of the run by name, in launch order: its kind and its nodes' shape."""
        return class_specs(self.cluster)

    def class_spec(self, node_class: str) -> NodeClassSpec | None:
        """The scenario's spec of a node class (by name), or None for a class it does not define."""
        found = self.node_classes.get(node_class)
        return None if found is None else found[1]

    def class_index(self, node_class: str) -> int:
        """The class's position in launch order: its random streams' key (``Scenario.class_index``)."""
        return list(self.node_classes).index(node_class)

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
        return None if rows is None else [emulated_row(row, dilation) for row in rows]

    tasks_rows = read_table("tasks.csv")
    if tasks_rows is not None:
        tasks, sources["tasks"] = [task_from_row(r) for r in tasks_rows], "tasks.csv"
    else:
        tasks, sources["tasks"] = tasks_from_events(events), "events.jsonl"

    job_rows = read_table("jobs.csv")
    if job_rows is not None:
        by_job = attempts_by_job(tasks)
        jobs = [job_from_row(r, by_job.get(text(r.get("job_id")), [])) for r in job_rows]
        sources["jobs"] = "jobs.csv"
        if summary is None:  # a crashed run: jobs.csv has a row per *finished* job only
            listed = {job.job_id for job in jobs}
            jobs += [j for j in jobs_from_events(events, tasks) if j.job_id not in listed]
    else:
        jobs, sources["jobs"] = jobs_from_events(events, tasks), "events.jsonl"

    node_rows = read_table("nodes.csv")
    if node_rows is not None:
        nodes, sources["nodes"] = [node_from_row(r) for r in node_rows], "nodes.csv"
    else:
        nodes, sources["nodes"] = nodes_from_events(events), "events.jsonl"

    eviction_rows = read_table("evictions.csv")
    if eviction_rows is not None:
        evictions = [eviction_from_row(r) for r in eviction_rows]
        sources["evictions"] = "evictions.csv"
    else:
        evictions, sources["evictions"] = evictions_from_events(events), "events.jsonl"

    decision_rows = read_table("decisions.csv", optional=True)
    decisions = None if decision_rows is None else [decision_from_row(r) for r in decision_rows]

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
    return float(value) if is_number(value) and value >= 1 else 1.0


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
        return [row for row in read_csv_table(path, path.stem) if any(row.values())]
    except (OSError, csv.Error) as exc:
        warnings.append(f"{path.name} cannot be read ({exc}): rebuilt from events.jsonl")
        return None
