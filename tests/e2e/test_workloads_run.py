"""Sort, wordcount and PageRank end to end: exact outputs under tight memory and evictions."""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from testbed.scenario.schema import PagerankJob, SortJob
from testbed.workloads import pagerank, sort
from tests.support.runs import JOBS, assert_clean, assert_exact, evict_first_if_none, spilled
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


async def test_every_workload_exact_under_high_eviction_rate(tmp_path: Path) -> None:
    scenario = make_scenario(
        time_scale=60,
        jobs=JOBS,
        chaos={"transient": {"lifetime": "high", "replace": True, "provisioning_delay": "30s"}},
    )
    result = await run_scenario(settings_of(scenario), tmp_path, on_event=evict_first_if_none())
    assert result.ok, result.summary
    assert result.summary["evictions"] > 0
    assert spilled(tmp_path) > 0
    assert_exact(scenario, tmp_path)
    assert_clean(tmp_path)


def kill_first_transient_to_finish_a_task(victims: list[str]) -> Callable[[Any, dict[str, Any]], None]:
    """A hook that SIGKILLs (through the provider) the first transient node to finish a task:
    it holds map outputs, so they must be recomputed."""

    def hook(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_finished" and record["class"] == "transient" and not victims:
            victims.append(record["node"])
            asyncio.get_running_loop().create_task(master.provider.evict(record["node"]))

    return hook


async def test_every_workload_exact_with_ideal_memory_and_an_agent_killed(tmp_path: Path) -> None:
    jobs = [{**job, "memory_mb": 256} for job in JOBS]
    scenario = make_scenario(jobs=jobs)
    victims: list[str] = []
    result = await run_scenario(
        settings_of(scenario), tmp_path, on_event=kill_first_transient_to_finish_a_task(victims)
    )
    assert victims and result.ok, result.summary
    assert result.summary["relaunched_tasks"] > 0
    assert spilled(tmp_path) == 0
    assert_exact(scenario, tmp_path)
    assert_clean(tmp_path)


def user_inputs(directory: Path) -> list[dict[str, Any]]:
    """Each workload on the user's files, one per form of ``input:``: sort on a directory,
    wordcount on a glob, PageRank on one file of integer ids and one of named nodes. Each
    task's ideal memory is about 10 MB (measured unconstrained), so a 1 MB budget is about
    10% of it."""
    (directory / "records").mkdir()
    for seed in (1, 2):
        with open(directory / "records" / f"part{seed}.dat", "wb") as handle:
            sort.generate(SortJob(workload="sort", size_mb=4), seed, handle)
    for file in (1, 2):  # 60,000 distinct words per file, a third of them capitalised
        words = (f"{'Ww'[j % 3 > 0]}{file}x{j}" for j in range(60_000))
        (directory / f"text{file}.txt").write_text(" ".join(words) + "\n")
    with open(directory / "graph.txt", "wb") as handle:
        pagerank.generate(PagerankJob(workload="pagerank", nodes=20_000, edges=300_000), 3, handle)
    names = [f"pkg-{i:x}" if i % 3 else f"https://example.org/{i}" for i in range(5_000)]
    rng = random.Random(4)
    (directory / "deps.tsv").write_text(
        "".join(f"{rng.choice(names)}\t{rng.choice(names)}\n" for _ in range(50_000)), encoding="utf-8"
    )
    return [
        {"workload": "sort", "input": str(directory / "records"), "maps": 2, "reduces": 2},
        {"workload": "wordcount", "input": str(directory / "text*.txt"), "maps": 2, "reduces": 2},
        {
            "workload": "pagerank",
            "input": str(directory / "graph.txt"),
            "maps": 2,
            "reduces": 2,
            "iterations": 3,
        },
        {
            "workload": "pagerank",
            "input": str(directory / "deps.tsv"),
            "maps": 2,
            "reduces": 2,
            "iterations": 3,
        },
    ]


@pytest.mark.parametrize("memory_mb", [1, 256])
async def test_every_workload_exact_on_user_inputs_with_an_agent_killed(
    tmp_path: Path, memory_mb: int
) -> None:
    inputs, run_dir = tmp_path / "inputs", tmp_path / "run"
    inputs.mkdir()
    run_dir.mkdir()
    jobs = [{**job, "memory_mb": memory_mb} for job in user_inputs(inputs)]
    scenario = make_scenario(jobs=jobs)
    victims: list[str] = []
    result = await run_scenario(
        settings_of(scenario), run_dir, on_event=kill_first_transient_to_finish_a_task(victims)
    )
    assert victims and result.ok, result.summary
    assert result.summary["relaunched_tasks"] > 0
    assert (spilled(run_dir) > 0) == (memory_mb == 1)
    assert_exact(scenario, run_dir)
    assert_clean(run_dir)


async def test_a_malformed_edge_list_fails_its_job_at_once_with_the_reason(tmp_path: Path) -> None:
    """A line the pre-run check did not see (here: written after validation) fails the job on
    its first attempt, as a data error, with the file in the reason: no retry can fix the data."""
    graph = tmp_path / "graph.txt"
    graph.write_text("# edges\n1 2\n2 3\n")
    scenario = make_scenario(jobs=[{"workload": "pagerank", "input": str(graph), "maps": 1}])
    with graph.open("a") as handle:
        handle.write("3 1 2\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = await run_scenario(settings_of(scenario), run_dir)
    assert not result.ok
    finished = [e for e in map(json.loads, (run_dir / "events.jsonl").open()) if e["event"] == "job_finished"]
    assert finished[0]["error"] == (
        f"task j000.s0.t0 failed: bad input: {graph}: expected 'src dst' per line, found '3 1 2'"
    )
    assert result.summary["errors"] == {"j000": finished[0]["error"]}
    assert result.summary["task_failures"] == {"data": 1}
    assert_clean(run_dir)
