"""Running scenarios on the simulator in tests, and reading what they journaled."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from master.shell.run import RunResult, run_blocking
from master.sim.run import SimBackend, sim_settings
from testbed.journal.tables import measured_rows
from testbed.scenario.schema import parse_scenario
from testbed.wire.protocol import TaskSpec


def simulate(tmp: Path, name: str = "run", **fields: Any) -> RunResult:
    data: dict[str, Any] = {"name": "sim-test", "seed": 3, "timeout": 3600, **fields}
    run_dir = tmp / name
    run_dir.mkdir()
    return run_blocking(sim_settings(parse_scenario(data)), run_dir, SimBackend())


def events(run_dir: Path, kind: str | None = None) -> list[dict[str, Any]]:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    return [r for r in records if kind is None or r["event"] == kind]


def rows(run_dir: Path, table: str) -> list[dict[str, str]]:
    """``<table>.csv``'s rows under the journal's names and clock (``<x>_s``: a simulated run's
    wall seconds are its emulated seconds)."""
    return measured_rows(run_dir / f"{table}.csv")


def sleep_task(index: int, seconds: float, **extra: Any) -> TaskSpec:
    return TaskSpec(
        task_id=f"j000.s0.t{index}",
        job_id="j000",
        stage=0,
        index=index,
        attempt=0,
        op="sleep.run",
        memory_mb=64,
        params={"duration_s": seconds},
        final=True,
        **extra,
    )


SCENARIO: dict[str, Any] = {
    "time_scale": 60,
    "cluster": {
        "reserved": {"count": 1, "slots": 2, "memory_mb": 512},
        "transient": {"count": 6, "slots": 1, "memory_mb": 256},
    },
    "chaos": {
        "transient": {"lifetime": "high", "replace": True},
        "storms": [{"at": "30s", "evict": {"count": 2}}],
    },
    "jobs": [
        {"workload": "pagerank", "nodes": 2000, "edges": 20000, "iterations": 4, "maps": 4, "reduces": 4},
        {"workload": "sort", "size_mb": 16, "maps": 8, "reduces": 4, "submit_at": "10s"},
        {"workload": "wordcount", "size_mb": 8, "maps": 6, "reduces": 3, "submit_at": "20s"},
    ],
}
