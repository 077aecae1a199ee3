"""A large recorded run (hundreds of nodes, thousands of attempts), seeded, for the report's
scaling tests: every node runs attempts back to back in each of its slots, a tenth of the
transient nodes are evicted, several at the same instant."""

from __future__ import annotations

import json
import random
from pathlib import Path

import yaml

from tests.support.recorded_run import _write_csv

SLOTS = 4


def write_large_run(path: Path, nodes: int = 1000, seed: int = 5, end: float = 600.0) -> dict:
    rng = random.Random(seed)
    path.mkdir(parents=True, exist_ok=True)
    reserved = nodes // 2  # a scenario allows at most 500 nodes per class
    node_rows, tasks, evictions = [], [], []
    for n in range(nodes):
        node_class = "reserved" if n < reserved else "transient"
        node_id = f"{node_class[0]}{n}"
        evicted_at = (
            round(rng.choice([120.0, 300.0, 450.0]), 1) if node_class == "transient" and n % 10 == 0 else None
        )
        node_rows.append(
            {
                "node_id": node_id,
                "node_class": node_class,
                "launched_s": 0.0,
                "ended_s": evicted_at,
                "end_reason": "evicted" if evicted_at else "",
                "price_per_hour": 1.0 if node_class == "reserved" else 0.3,
            }
        )
        if evicted_at:
            evictions.append(
                {
                    "t_s": evicted_at,
                    "node_id": node_id,
                    "node_class": node_class,
                    "reason": "storm",
                    "lifetime_s": evicted_at,
                    "tasks_running": SLOTS,
                    "bytes_lost": 1000,
                }
            )
        for _slot in range(SLOTS):
            t = rng.uniform(0, 5)
            while t < (evicted_at or end) - 1:
                length = rng.uniform(100, 300)
                stop = min(t + length, evicted_at or end)
                lost = evicted_at is not None and stop == evicted_at
                tasks.append(_task(len(tasks), node_id, node_class, t, stop, "lost" if lost else "succeeded"))
                t = stop + rng.uniform(0, 2)
    jobs = _jobs(tasks)
    _write_csv(path / "nodes.csv", node_rows)
    _write_csv(path / "tasks.csv", tasks)
    _write_csv(path / "jobs.csv", jobs)
    _write_csv(path / "evictions.csv", evictions)
    scenario = {
        "name": "large",
        "seed": seed,
        "time_scale": 1.0,
        "cluster": {
            "reserved": {"count": reserved, "slots": SLOTS, "memory_mb": 4096, "price_per_hour": 1.0},
            "transient": {
                "count": nodes - reserved,
                "slots": SLOTS,
                "memory_mb": 4096,
                "price_per_hour": 0.3,
            },
        },
        "policy": {"scheduler": "fifo", "strategy": "spark", "autoscaler": "static"},
        "jobs": [{"workload": "sleep", "tasks": 10, "duration": 10}],
    }
    (path / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    events = [{"t": 0.0, "event": "run_started", "run_id": "large", "name": "large"}]
    events.append({"t": end, "event": "run_finished", "status": "succeeded"})
    (path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return {"nodes": node_rows, "tasks": tasks, "evictions": evictions}


def _task(number: int, node_id: str, node_class: str, start: float, stop: float, status: str) -> dict:
    job = f"j{number % 50:03d}"
    return {
        "task_id": f"{job}-s0-t{number}",
        "job_id": job,
        "stage": "0",
        "index": number,
        "attempt": 0,
        "node_id": node_id,
        "node_class": node_class,
        "memory_mb": 512,
        "start_s": round(start, 3),
        "end_s": round(stop, 3),
        "status": status,
        "failure": "",
        "bytes_in": 1000,
        "bytes_out": 1000,
        "spill_bytes": 0,
        "spills": 0,
        "merge_passes": 0,
    }


def _jobs(tasks: list[dict]) -> list[dict]:
    jobs = []
    for job in sorted({t["job_id"] for t in tasks}):
        mine = [t for t in tasks if t["job_id"] == job]
        finish = max(t["end_s"] for t in mine)
        jobs.append(
            {
                "job_id": job,
                "workload": "sleep",
                "submit_s": 0.0,
                "start_s": min(t["start_s"] for t in mine),
                "finish_s": finish,
                "jct_s": finish,
                "queue_s": min(t["start_s"] for t in mine),
                "status": "succeeded",
                "tasks": len(mine),
                "relaunched_tasks": 0,
            }
        )
    return jobs
