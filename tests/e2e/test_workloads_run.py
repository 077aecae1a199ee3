"""Sort, wordcount and PageRank end to end: exact outputs under tight memory and evictions."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from master.run import run_scenario
from testbed.workloads.check import check_output
from tests.conftest import make_scenario
from tests.e2e.test_wordcount_run import assert_clean

pytestmark = pytest.mark.e2e

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


async def test_every_workload_exact_under_high_eviction_rate(tmp_path: Path) -> None:
    scenario = make_scenario(
        time_scale=60,
        jobs=JOBS,
        chaos={"transient": {"lifetime": "high", "replace": True, "provisioning_delay": "30s"}},
    )
    result = await run_scenario(scenario, tmp_path, on_event=evict_first_if_none())
    assert result.ok, result.summary
    assert result.summary["evictions"] > 0
    assert spilled(tmp_path) > 0
    assert_exact(scenario, tmp_path)
    assert_clean(tmp_path)


def evict_first_if_none() -> Any:
    """A fast run may end before the first drawn lifetime does: then evict, through the chaos
    controller, the first transient node to finish a task, so every run sees an eviction."""
    evicted: list[str] = []

    def hook(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "eviction":
            evicted.append(record["node"])
        elif record["event"] == "task_finished" and record["class"] == "transient" and not evicted:
            evicted.append(record["node"])
            asyncio.get_running_loop().create_task(master.chaos.evict(record["node"], "manual"))

    return hook


async def test_every_workload_exact_with_ideal_memory_and_an_agent_killed(tmp_path: Path) -> None:
    jobs = [{**job, "memory_mb": 256} for job in JOBS]
    scenario = make_scenario(jobs=jobs)
    victims: list[str] = []

    def evict_busiest_transient(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_finished" and record["class"] == "transient" and not victims:
            victims.append(record["node"])
            asyncio.get_running_loop().create_task(master.provider.evict(record["node"]))

    result = await run_scenario(scenario, tmp_path, on_event=evict_busiest_transient)
    assert victims and result.ok, result.summary
    assert result.summary["relaunched_tasks"] > 0
    assert spilled(tmp_path) == 0
    assert_exact(scenario, tmp_path)
    assert_clean(tmp_path)
