"""Runs in tests and their checks: the tables rebuilt from the journal, a clean end (no agent
left), exact outputs, the jobs the end-to-end runs submit, a lone task run faithfully."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path
from typing import Any

from master.shell.run import RunResult, run_scenario
from testbed.journal.tables import rebuild_tables
from testbed.node.cgroups import CpuCgroups, CpuStats, slot_group
from testbed.scenario.schema import WordcountJob
from testbed.workloads.check import check_output
from testbed.workloads.wordcount import reference_output
from tests.support.processes import process_alive
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of


def assert_tables_from_events(run_dir: Path) -> None:
    """The CSVs the run wrote are those its ``events.jsonl`` makes, byte for byte."""
    with tempfile.TemporaryDirectory() as elsewhere:
        rebuilt = Path(elsewhere)
        counts = rebuild_tables(run_dir / "events.jsonl", rebuilt)
        written = sorted(p.name for p in run_dir.glob("*.csv"))
        assert sorted(f"{table}.csv" for table in counts) == written
        for name in written:
            assert (rebuilt / name).read_bytes() == (run_dir / name).read_bytes(), name


def expected_counts(size_mb: float, maps: int, seed: int):
    job = WordcountJob(workload="wordcount", size_mb=size_mb, maps=maps)
    return reference_output(job, seed)


def agent_pids(run_dir: Path) -> list[int]:
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return [e["pid"] for e in events if e["event"] == "node_up"]


def assert_clean(run_dir: Path) -> None:
    """Nothing the run started is left: no agent process, no node directory; and the tables
    it wrote are those its events make."""
    assert not any(process_alive(pid) for pid in agent_pids(run_dir))
    assert not (run_dir / "nodes").exists() or not any((run_dir / "nodes").iterdir())
    assert_tables_from_events(run_dir)


# memory_mb is each task's budget: 1 MB is far below these tasks' ideal memory, so they spill.
JOBS = [
    {"workload": "sort", "size_mb": 3, "maps": 3, "reduces": 2, "memory_mb": 1},
    {"workload": "wordcount", "size_mb": 3, "maps": 3, "reduces": 2, "memory_mb": 1},
    {
        "workload": "pagerank",
        "nodes": 3000,
        "edges": 20000,
        "iterations": 4,
        "maps": 2,
        "reduces": 3,
        "memory_mb": 1,
    },
]


def assert_exact(scenario: Any, run_dir: Path) -> None:
    for ordinal, job in enumerate(scenario.jobs):
        seed = job.seed if job.seed is not None else scenario.seed * 1000 + ordinal
        assert check_output(job, seed, run_dir / "outputs" / f"j{ordinal:03d}") == []


def spilled(run_dir: Path) -> int:
    import csv

    return sum(int(r["spill_bytes"] or 0) for r in csv.DictReader((run_dir / "tasks.csv").open()))


def evict_first_if_none() -> Any:
    """A fast run may end before the first drawn lifetime does: then evict, through the chaos
    controller, the first transient node to finish a task, so every run sees an eviction."""
    evicted: list[str] = []

    def hook(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "eviction":
            evicted.append(record["node"])
        elif record["event"] == "task_finished" and record["class"] == "transient" and not evicted:
            evicted.append(record["node"])
            asyncio.get_running_loop().create_task(master.chaos.evict(record["node"]))

    return hook


async def run_a_lone_task(
    cgroups: CpuCgroups, tmp_path: Path, run_id: str | None, backend: str = "local"
) -> tuple[RunResult, float]:
    """One CPU-bound task of 1 trace second alone on a node of 2 cpus and 2 slots at dilation 4
    (4 wall seconds: 1 s of CPU at one slot's 1 / 4 core, 2 s at the node's 2 / 4): the run and
    the task's CPU seconds, checked to have run in slot 0's group with slot 1's holding no one
    back and within its quota. ``run_id`` names the run's groups (None: the master's own)."""
    scenario = make_scenario(
        cluster={"reserved": {"count": 1, "slots": 2, "cpus": 2}, "transient": 0},
        jobs=[{"workload": "sleep", "tasks": 1, "duration": "1s", "cpu_bound": True}],
        fidelity={"mode": "faithful", "dilation": 4},
    )
    slots: list[CpuStats] = []
    cpu_s: list[float] = []

    def at_the_end(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_finished":
            node = cgroups.run_dir(run_id or master.run_id) / record["node"]
            slots.extend(cgroups.stats(slot_group(node, slot)) for slot in (0, 1))
            cpu_s.append(record["cpu_s"])

    result = await run_scenario(settings_of(scenario), tmp_path, backend=backend, on_event=at_the_end)
    assert result.ok, result.summary
    assert slots[0].periods > 10 and slots[1].throttled_periods == 0
    assert result.summary["fidelity"]["task_cpu_per_quota"] <= 1.1
    return result, cpu_s[0]
