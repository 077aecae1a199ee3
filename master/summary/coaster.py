"""summary.json keys for Eagle and CloudCoaster runs: job classes, short-task queueing, transient cost.

Computed from the run's journal (``events.jsonl``, ``jobs.csv``, ``tasks.csv``,
``nodes.csv``), in the run's (wall) seconds:

- short-task queueing delay: first start of a short job's task - the job's
  submission (the paper's Fig. 3); ``mean``, ``p95``, ``max`` over every short
  task that started.
- long-job and short-job mean JCT (jobs that succeeded).
- transient servers: how many were launched, their active time (launch to
  release, revocation or run end; the paper's Table 1, mean and max), and
  their time-averaged number over the run (from 0 to the last node's end).
- cost in on-demand servers: the transient average divided by ``r`` (the
  on-demand/transient price ratio: ``policy.options.cloudcoaster.r``, else the
  scenario's reserved/transient price ratio), and the time-averaged number of
  on-demand servers of the short-only partition; their sum is the short-only
  partition's cost in on-demand servers, ``N`` for the static baseline.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import numpy as np

from master.policy_setup import make_scheduler
from testbed.journal.schema import JobSubmitted, events_of, read_events
from testbed.journal.tables import measured_rows
from testbed.scenario.schema import Scenario


def job_class_summary(run_dir: Path, scenario: Scenario, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The keys above for an Eagle run or a run with ``arrivals``; nothing for other runs.
    ``events``: the run's journal, read once for the whole summary."""
    if scenario.policy.scheduler != "eagle" and scenario.arrivals is None:
        return {}
    jobs = measured_rows(run_dir / "jobs.csv")
    long_jobs = long_jobs_in(events)
    delays = short_queue_delays(jobs, measured_rows(run_dir / "tasks.csv"), long_jobs)
    return {
        "short_tasks": len(delays),
        "mean_short_queue_s": _mean(delays),
        "p95_short_queue_s": round4(percentile(delays, 95)),
        "max_short_queue_s": round4(max(delays)) if delays else None,
        "long_jobs": sum(1 for j in jobs if j["job_id"] in long_jobs),
        "mean_long_jct_s": _mean(_jcts(jobs, lambda job: job in long_jobs)),
        "mean_short_jct_s": _mean(_jcts(jobs, lambda job: job not in long_jobs)),
        **transient_cost(measured_rows(run_dir / "nodes.csv"), scenario),
    }


def short_queue_delays(
    jobs: list[dict[str, str]], tasks: list[dict[str, str]], long_jobs: set[str]
) -> list[float]:
    """First start of every short task minus its job's submission (every attempt is a tasks.csv row)."""
    submitted = {j["job_id"]: float(j["submit_s"]) for j in jobs if j["submit_s"]}
    first_start: dict[str, float] = {}
    for task in tasks:
        if task["start_s"] and task["job_id"] in submitted and task["job_id"] not in long_jobs:
            start = float(task["start_s"])
            first_start[task["task_id"]] = min(start, first_start.get(task["task_id"], start))
    return [start - submitted[task_id.partition(".")[0]] for task_id, start in first_start.items()]


def transient_cost(nodes: list[dict[str, str]], scenario: Scenario) -> dict[str, float | None]:
    end = max((float(n["ended_s"]) for n in nodes if n["ended_s"]), default=0.0)
    kinds = {name: named.kind for name, named in scenario.node_classes.items()}  # the table's class is a name
    transient = [_active_s(n, end) for n in nodes if kinds.get(n["node_class"]) == "transient"]
    initial = [f"{named.name}-{i}" for named in scenario.of_kind("reserved") for i in range(named.spec.count)]
    partitions = make_scheduler(scenario).reserved_partitions(initial)  # the run's, as its scheduler set them
    short = {node_id for node_id, part in partitions.items() if part == "short"}
    short_on_demand = [_active_s(n, end) for n in nodes if n["node_id"] in short]
    r = cost_ratio(scenario)
    avg_transient = sum(transient) / end if end > 0 else 0.0
    avg_short_on_demand = sum(short_on_demand) / end if end > 0 else 0.0
    return {
        "transient_launched": len(transient),
        "mean_transient_active_s": _mean(transient),
        "max_transient_active_s": round4(max(transient)) if transient else None,
        "avg_transient_servers": round4(avg_transient),
        "cost_ratio_r": round4(r),
        "transient_on_demand_equiv": round4(avg_transient / r),
        "avg_short_on_demand_servers": round4(avg_short_on_demand),
        "short_partition_cost_servers": round4(avg_short_on_demand + avg_transient / r),
    }


def cost_ratio(scenario: Scenario) -> float:
    """``r``: the CloudCoaster option if the scenario sets it, else the reserved/transient price
    ratio (of each kind's first class)."""
    options = scenario.policy.options.get("cloudcoaster")
    if isinstance(options, dict) and "r" in options:
        return float(options["r"])
    reserved, transient = (scenario.of_kind(kind)[0].spec for kind in ("reserved", "transient"))
    return reserved.price_per_hour / transient.price_per_hour if transient.price_per_hour > 0 else 1.0


def _active_s(node: dict[str, str], run_end: float) -> float:
    ended = float(node["ended_s"]) if node["ended_s"] else run_end
    return max(0.0, ended - float(node["launched_s"] or 0.0))


def long_job_ids(events_path: Path) -> set[str]:
    """Jobs submitted as long; a torn line (the crash a resumed run continues from) is skipped."""
    if not events_path.exists():
        return set()
    return long_jobs_in(read_events(events_path).events)


def long_jobs_in(events: list[dict[str, Any]]) -> set[str]:
    return {e["job"] for e in events_of(events, JobSubmitted) if e.get("long")}


def _jcts(jobs: list[dict[str, str]], chosen: Any) -> list[float]:
    return [float(j["jct_s"]) for j in jobs if j["status"] == "succeeded" and chosen(j["job_id"])]


def percentile(values: list[float], q: float) -> float | None:
    """The q-th percentile, linearly interpolated (numpy's default); None without values."""
    return float(np.percentile(values, q)) if values else None


def _mean(values: list[float]) -> float | None:
    return round4(statistics.fmean(values)) if values else None


def round4(value: float | None) -> float | None:
    """Four decimals, as summary.json gives its figures (None stays None)."""
    return None if value is None else round(value, 4)
