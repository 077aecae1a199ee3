"""Recorded run directories for the report tests, written from known data.

One small but realistic run: 4 nodes (1 reserved, 3 transient, one evicted at
6 s and replaced at 7 s), 3 jobs of two workloads, 10 task attempts of 8 tasks:
one attempt lost to the eviction and one failed (both relaunched). Every file
the master writes is derived here from the same lists, so tests compute their
expectations from these lists, independently of the code under test.
"""

from __future__ import annotations

import csv
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from testbed.journal.tables import disk_column

RUN_END = 20.0
NODES = [  # node_id, class, launched, ended, end_reason, price_per_hour
    ("r0", "reserved", 0.0, None, "", 1.0),
    ("t1", "transient", 0.0, 6.0, "evicted", 0.3),
    ("t2", "transient", 0.0, None, "", 0.3),
    ("t3", "transient", 7.0, None, "", 0.3),
]
JOBS = [("j1", "wordcount", 0.0, 1000), ("j2", "sort", 1.0, 2000), ("j3", "sort", 5.0, 3000)]
# task_id, job, stage, index, attempt, node, memory_mb, start, end, status, failure,
# bytes_in, bytes_out, spill_bytes, spills, merge_passes
TASKS = [
    (
        "j1-map-0",
        "j1",
        "map",
        0,
        1,
        "t1",
        256,
        0.5,
        3.0,
        "succeeded",
        "",
        4_000_000,
        1_000_000,
        0,
        0,
        0,
    ),
    (
        "j1-map-1",
        "j1",
        "map",
        1,
        1,
        "t2",
        256,
        0.5,
        3.5,
        "succeeded",
        "",
        4_000_000,
        1_000_000,
        0,
        0,
        0,
    ),
    (
        "j1-reduce-0",
        "j1",
        "reduce",
        0,
        1,
        "r0",
        512,
        3.5,
        8.0,
        "succeeded",
        "",
        2_000_000,
        500_000,
        1_500_000,
        3,
        1,
    ),
    (
        "j2-map-1",
        "j2",
        "map",
        1,
        1,
        "r0",
        256,
        1.5,
        4.0,
        "succeeded",
        "",
        3_000_000,
        3_000_000,
        0,
        0,
        0,
    ),
    (
        "j2-map-0",
        "j2",
        "map",
        0,
        1,
        "t1",
        256,
        4.0,
        6.0,
        "lost",
        "node evicted",
        3_000_000,
        0,
        0,
        0,
        0,
    ),
    (
        "j2-map-0",
        "j2",
        "map",
        0,
        2,
        "t2",
        256,
        6.5,
        9.0,
        "succeeded",
        "",
        3_000_000,
        3_000_000,
        1_000_000,
        2,
        1,
    ),
    (
        "j3-map-0",
        "j3",
        "map",
        0,
        1,
        "t3",
        256,
        7.5,
        10.0,
        "succeeded",
        "",
        2_000_000,
        2_000_000,
        0,
        0,
        0,
    ),
    (
        "j2-reduce-0",
        "j2",
        "reduce",
        0,
        1,
        "t3",
        512,
        9.5,
        12.0,
        "succeeded",
        "",
        6_000_000,
        6_000_000,
        2_000_000,
        4,
        2,
    ),
    (
        "j3-reduce-0",
        "j3",
        "reduce",
        0,
        1,
        "t2",
        512,
        10.2,
        10.8,
        "failed",
        "MemoryError",
        2_000_000,
        0,
        0,
        0,
        0,
    ),
    (
        "j3-reduce-0",
        "j3",
        "reduce",
        0,
        2,
        "r0",
        512,
        11.0,
        14.0,
        "succeeded",
        "",
        2_000_000,
        2_000_000,
        500_000,
        1,
        1,
    ),
]
EVICTION = ("t1", "transient", 6.0, "lifetime", 1, 1_000_000)  # node, class, t, reason, tasks, lost
DECISIONS = (
    [("j1", "assign")] * 3
    + [("j2", "assign")] * 4
    + [("j2", "relaunch")]
    + [("j3", "assign"), ("j3", "reserve"), ("j3", "assign"), ("j3", "relaunch")]
)
NODE_MEMORY_MB = 1024


@dataclass
class RecordedRun:
    """A run directory and the data it was written from (times already scaled)."""

    path: Path
    strategy: str
    scale: float
    nodes: list[dict] = field(default_factory=list)
    jobs: list[dict] = field(default_factory=list)
    tasks: list[dict] = field(default_factory=list)
    summary: dict = field(default_factory=dict)

    @property
    def end(self) -> float:
        return RUN_END * self.scale


def write_run(path: Path, strategy: str = "spark", scale: float = 1.0, seed: int = 1) -> RecordedRun:
    """Write a complete run directory; every time is multiplied by ``scale``."""
    path.mkdir(parents=True, exist_ok=True)
    run = RecordedRun(path, strategy, scale)
    run.tasks = [_task(row, scale) for row in TASKS]
    run.nodes = [
        {
            "node_id": n,
            "node_class": c,
            "launched_s": up * scale,
            "ended_s": None if end is None else end * scale,
            "end_reason": why,
            "price_per_hour": p,
        }
        for n, c, up, end, why, p in NODES
    ]
    run.jobs = [
        _job(job_id, workload, submit * scale, pushed, run.tasks) for job_id, workload, submit, pushed in JOBS
    ]
    run.summary = _summary(run, seed)
    (path / "scenario.yaml").write_text(yaml.safe_dump(_scenario(strategy, seed)))
    _write_csv(path / "tasks.csv", run.tasks)
    _write_csv(path / "jobs.csv", run.jobs)
    _write_csv(path / "nodes.csv", run.nodes)
    node, node_class, t, reason, running, lost = EVICTION
    _write_csv(
        path / "evictions.csv",
        [
            {
                "t_s": t * scale,
                "node_id": node,
                "node_class": node_class,
                "reason": reason,
                "lifetime_s": t * scale,
                "tasks_running": running,
                "bytes_lost": lost,
            }
        ],
    )
    _write_csv(
        path / "decisions.csv",
        [
            {
                "t_s": i * 0.5 * scale,
                "job_id": job,
                "task_id": f"{job}-task",
                "decision": kind,
                "node_id": "r0",
            }
            for i, (job, kind) in enumerate(DECISIONS)
        ],
    )
    (path / "summary.json").write_text(json.dumps(run.summary, indent=2))
    _write_events(path / "events.jsonl", run)
    return run


def _task(row: tuple, scale: float) -> dict:
    keys = (
        "task_id",
        "job_id",
        "stage",
        "index",
        "attempt",
        "node_id",
        "memory_mb",
        "start_s",
        "end_s",
        "status",
        "failure",
        "bytes_in",
        "bytes_out",
        "spill_bytes",
        "spills",
        "merge_passes",
    )
    task = dict(zip(keys, row, strict=True))
    task["start_s"] *= scale
    task["end_s"] *= scale
    task["node_class"] = "reserved" if task["node_id"].startswith("r") else "transient"
    task["peak_buffered_bytes"] = task["memory_mb"] * 2**20 // 2
    task["peak_rss_bytes"] = task["memory_mb"] * 2**20
    return task


def _job(job_id: str, workload: str, submit: float, pushed: int, tasks: list[dict]) -> dict:
    mine = [t for t in tasks if t["job_id"] == job_id]
    start = min(t["start_s"] for t in mine)
    finish = max(t["end_s"] for t in mine if t["status"] == "succeeded")
    logical = {(t["stage"], t["index"]) for t in mine}
    return {
        "job_id": job_id,
        "workload": workload,
        "submit_s": submit,
        "start_s": start,
        "finish_s": finish,
        "jct_s": finish - submit,
        "queue_s": start - submit,
        "status": "succeeded",
        "tasks": len(logical),
        "relaunched_tasks": len(mine) - len(logical),
        "bytes_pushed": pushed,
    }


def _summary(run: RecordedRun, seed: int) -> dict:
    jcts = [j["jct_s"] for j in run.jobs]
    relaunched = sum(j["relaunched_tasks"] for j in run.jobs)
    return {
        "name": f"fixture-{run.strategy}",
        "seed": seed,
        "time_scale": 1.0,
        "policy": {"scheduler": "fifo", "strategy": run.strategy, "autoscaler": "static"},
        "jobs": 3,
        "succeeded": 3,
        "failed": 0,
        "mean_jct_s": statistics.mean(jcts),
        "p50_jct_s": statistics.median(jcts),
        "p95_jct_s": statistics.quantiles(jcts, n=100, method="inclusive")[94],
        "max_jct_s": max(jcts),
        "makespan_s": max(j["finish_s"] for j in run.jobs) - min(j["submit_s"] for j in run.jobs),
        "evictions": 1,
        "relaunched_tasks": relaunched,
        "relaunched_ratio": relaunched / sum(j["tasks"] for j in run.jobs),
        "mean_short_queue_s": 0.75 * run.scale,
        "max_short_queue_s": 2.5 * run.scale,
    }


def _scenario(strategy: str, seed: int) -> dict:
    return {
        "name": f"fixture-{strategy}",
        "seed": seed,
        "time_scale": 1.0,
        "cluster": {
            "reserved": {
                "count": 1,
                "slots": 2,
                "memory_mb": NODE_MEMORY_MB,
                "price_per_hour": 1.0,
            },
            "transient": {
                "count": 2,
                "slots": 2,
                "memory_mb": NODE_MEMORY_MB,
                "price_per_hour": 0.3,
            },
        },
        "policy": {"scheduler": "fifo", "strategy": strategy, "autoscaler": "static"},
        "jobs": [
            {"workload": "wordcount", "size_mb": 8},
            {"workload": "sort", "size_mb": 12, "submit_at": 1.0, "repeat": 2, "every": 4},
        ],
        "chaos": {"transient": {"lifetime": "exponential(mean=6s)"}},
    }


def _write_csv(path: Path, rows: list[dict]) -> None:
    """``rows`` (under the journal's names) as the master writes its table: each time column
    named with its clock (``start_wall_s``, ``lifetime_trace_s``)."""
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=[disk_column(path.stem, key) for key in rows[0]])
        writer.writeheader()
        writer.writerows(
            {disk_column(path.stem, k): "" if v is None else v for k, v in row.items()} for row in rows
        )


def run_events(run: RecordedRun) -> list[dict]:
    """The journal the master would have written for this run, in time order."""
    events = [{"t": 0.0, "event": "run_started", "run_id": run.path.name, "name": run.summary["name"]}]
    for node in run.nodes:
        events.append(
            {
                "t": node["launched_s"],
                "event": "node_up",
                "node": node["node_id"],
                "class": node["node_class"],
                "pid": 1000,
            }
        )
    node, node_class, t, reason, running, lost = EVICTION
    events.append(
        {
            "t": t * run.scale,
            "event": "eviction",
            "node": node,
            "class": node_class,
            "reason": reason,
            "lifetime_s": t * run.scale,
            "tasks_running": running,
            "bytes_lost": lost,
        }
    )
    events.append(
        {
            "t": t * run.scale,
            "event": "node_lost",
            "node": node,
            "class": node_class,
            "reason": "evicted",
        }
    )
    for job in run.jobs:
        events.append(
            {
                "t": job["submit_s"],
                "event": "job_submitted",
                "job": job["job_id"],
                "workload": job["workload"],
            }
        )
        events.append(
            {
                "t": job["finish_s"],
                "event": "job_finished",
                "job": job["job_id"],
                "status": job["status"],
                "jct_s": job["jct_s"],
            }
        )
    for task in run.tasks:
        common = {
            "task": task["task_id"],
            "job": task["job_id"],
            "stage": task["stage"],
            "node": task["node_id"],
            "class": task["node_class"],
            "attempt": task["attempt"],
        }
        events.append(
            {
                "t": task["start_s"],
                "event": "task_started",
                **common,
                "index": task["index"],
                "memory_mb": task["memory_mb"],
            }
        )
        events.append(
            {
                "t": task["end_s"],
                "event": "task_finished",
                **common,
                "status": task["status"],
                "spill_bytes": task["spill_bytes"],
                "bytes_in": task["bytes_in"],
                "bytes_out": task["bytes_out"],
            }
        )
    events.append({"t": 3.0 * run.scale, "event": "some_future_event", "detail": "ignored"})
    events.append({"t": run.end, "event": "run_finished", "status": "succeeded"})
    return sorted(events, key=lambda e: e["t"])


def _write_events(path: Path, run: RecordedRun) -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in run_events(run)))


def crash(run: RecordedRun, at: float) -> list[dict]:
    """Make ``run`` look like a master that died at ``at``: only a torn journal is left."""
    for name in (
        "summary.json",
        "jobs.csv",
        "tasks.csv",
        "nodes.csv",
        "evictions.csv",
        "decisions.csv",
    ):
        (run.path / name).unlink()
    kept = [e for e in run_events(run) if e["t"] <= at and e["event"] != "run_finished"]
    lines = "".join(json.dumps(e) + "\n" for e in kept)
    (run.path / "events.jsonl").write_text(lines + '{"t": 10.6, "event": "task_sta')
    return kept
