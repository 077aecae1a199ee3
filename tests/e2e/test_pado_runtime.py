"""Pado's runtime with real agents: partial aggregation on transient nodes and
cache-aware scheduling over the agents' task input caches (section 3.2.7), and a
reserved node failure mid-stage (section 3.2.6)."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from testbed.workloads.wordcount import generate_split
from tests.support.masters import shell_act
from tests.support.runs import assert_clean, assert_exact
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


def events(run_dir: Path, name: str) -> list[dict[str, Any]]:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["event"] == name]


def stage_of(task_id: str) -> int:
    return int(task_id.rpartition(".s")[2].partition(".t")[0])


async def test_pado_reserved_failure_pauses_the_stage_and_recomputes_lost_parents(tmp_path: Path) -> None:
    """PageRank under Pado runs links and every iteration on the reserved nodes. One of the
    two reserved nodes is killed when the second iteration's first task starts: the links
    partitions it held must be received again (their edge-reader pushes reopened and
    committed anew), the iterations' lost partitions recomputed, and no task of the
    running iteration may start again before the lost links partitions exist."""
    paused_stage = 4  # stages: 0 edges, 1 links, 2 scatter, 3 iteration 1, 4 iteration 2, ...
    scenario = make_scenario(
        cluster={"reserved": 2, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 5},
        jobs=[
            {
                "workload": "pagerank",
                "nodes": 3000,
                "edges": 20000,
                "iterations": 4,
                "maps": 3,
                "reduces": 4,
                "memory_mb": 64,
            }
        ],
        policy={"strategy": "pado"},
    )
    killed: dict[str, Any] = {}

    def kill_a_reserved_node(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_started" and record["stage"] == paused_stage and not killed:
            killed.update(t=record["t"], node="reserved-1")
            asyncio.get_running_loop().create_task(master.provider.evict("reserved-1"))

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=kill_a_reserved_node)
    assert killed and result.ok, result.summary
    assert_exact(scenario, tmp_path)
    lost = [r for r in events(tmp_path, "node_lost") if r["node"] == "reserved-1"]
    assert lost, "the reserved node was never declared lost"
    t_lost = lost[0]["t"]
    after = [r for r in events(tmp_path, "task_finished") if r["t"] >= t_lost and r["status"] == "succeeded"]
    # the links partitions set up on the lost node (odd indices) were received and built again
    relinked = {r["task"] for r in after if stage_of(r["task"]) == 1}
    assert relinked == {"j000.s1.t1", "j000.s1.t3"}
    recommits = [
        r
        for r in events(tmp_path, "push_commit")
        if r["t"] >= t_lost and r["verdict"] == "accepted" and stage_of(r["task"]) == 0
    ]
    assert {r["task"] for r in recommits} == {f"j000.s0.t{i}" for i in range(3)}
    # the edge readers run again on their nodes and read their splits from the input cache
    assert result.summary["cache_hits"] == 3
    # the lost partitions of the finished iterations were recomputed, parents first
    recomputed = {r["task"] for r in after if stage_of(r["task"]) in (2, 3)}
    assert {"j000.s2.t1", "j000.s2.t3", "j000.s3.t1", "j000.s3.t3"} <= recomputed
    # the running stage paused: nothing of it (or later) started before links was whole again
    links_back = max(r["t"] for r in after if stage_of(r["task"]) == 1)
    restarted = [
        r for r in events(tmp_path, "task_started") if r["t"] >= t_lost and r["stage"] >= paused_stage
    ]
    assert restarted and min(r["t"] for r in restarted) >= links_back
    assert all(r["node"] != "reserved-1" for r in restarted)
    assert_clean(tmp_path)


def job_rows(run_dir: Path) -> dict[str, dict[str, str]]:
    return {r["job_id"]: r for r in csv.DictReader((run_dir / "jobs.csv").open())}


async def test_pado_places_a_task_where_its_input_is_cached(tmp_path: Path) -> None:
    """Job A reads files a and b (one map each); job B, submitted once A is done, reads b
    again. The scheduler alone would put B's map on transient-2 (the least loaded node,
    highest id), where A read a; the cache-aware choice puts it on the node that read b,
    which serves it from its cache."""
    inputs = tmp_path / "inputs"
    inputs.mkdir()
    text = b"".join(generate_split(3, 0, 400_000, 2000))
    for name in ("a", "b"):
        (inputs / name).write_bytes(text)
    job_a = {"workload": "wordcount", "input": str(inputs), "maps": 2, "reduces": 2, "memory_mb": 64}
    job_b = {**job_a, "input": str(inputs / "b"), "maps": 1, "submit_at": "600s"}
    scenario = make_scenario(
        cluster={"reserved": 1, "transient": {"count": 3, "slots": 1}, "heartbeat_interval": 0.2},
        jobs=[job_a, job_b],
        policy={"strategy": "pado"},
    )

    def submit_b_after_a(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "job_finished" and record["job"] == "j000":
            submit = master.core.submit_job
            asyncio.get_running_loop().call_soon(shell_act, master, submit, scenario.jobs[1], 1)

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = await run_scenario(settings_of(scenario), run_dir, on_event=submit_b_after_a)
    assert result.ok, result.summary
    assert_exact(scenario, run_dir)
    rows = job_rows(run_dir)
    assert (rows["j000"]["cache_hits"], rows["j000"]["cache_misses"]) == ("0", "2")
    assert (rows["j001"]["cache_hits"], rows["j001"]["cache_misses"]) == ("1", "0")
    assert int(rows["j001"]["bytes_from_cache"]) >= len(text)
    started = {r["task"]: r["node"] for r in events(run_dir, "task_started")}
    reader_of_b = started["j000.s0.t1"]
    assert started["j001.s0.t0"] == reader_of_b != "transient-2"
    assert result.summary["cache_hits"] == 1
    assert_clean(run_dir)


def accepted_commits(run_dir: Path) -> list[dict[str, Any]]:
    return [r for r in events(run_dir, "push_commit") if r["verdict"] == "accepted"]


def map_bytes_out(run_dir: Path) -> int:
    rows = csv.DictReader((run_dir / "tasks.csv").open())
    return sum(int(r["bytes_out"]) for r in rows if r["stage"] == "0" and r["status"] == "succeeded")


def aggregating_wordcount(**pado: Any) -> Any:
    return make_scenario(
        cluster={"reserved": 1, "transient": {"count": 2, "slots": 1}, "heartbeat_interval": 0.2},
        jobs=[{"workload": "wordcount", "size_mb": 3, "maps": 6, "reduces": 2, "memory_mb": 64}],
        policy={
            "strategy": "pado",
            "options": {"pado": {"aggregate_max_tasks": 3, "aggregate_max_delay_s": 60, **pado}},
        },
    )


async def test_pado_aggregates_map_outputs_on_their_node_and_commits_each_once(tmp_path: Path) -> None:
    """Six wordcount maps on two transient nodes: each node merges its finished outputs
    (at most three) into one block per receiver partition, pushed and committed as one
    push naming all its tasks. Counts merge, so fewer bytes travel than the maps wrote."""
    scenario = aggregating_wordcount()
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    assert_exact(scenario, tmp_path)
    flushes = events(tmp_path, "aggregate_flush")
    assert flushes and max(len(f["tasks"]) for f in flushes) >= 2
    assert all(len(f["tasks"]) <= 3 for f in flushes)
    commits = accepted_commits(tmp_path)
    assert sorted(r["task"] for r in commits) == [f"j000.s0.t{i}" for i in range(6)]
    assert {r["push"] for r in commits} == {f["block"] for f in flushes}
    assert 0 < result.summary["bytes_pushed"] < map_bytes_out(tmp_path)
    assert_clean(tmp_path)


async def test_pado_relaunches_every_task_of_an_aggregate_lost_before_its_commit(tmp_path: Path) -> None:
    """The node holding the first aggregate of two or more outputs is killed as soon as
    the aggregate is flushed (pushes slowed to 1 Mbit/s): the aggregate never commits,
    every task it covered runs again, and each map output is still counted once."""
    scenario = aggregating_wordcount(push_bandwidth_mbps=1)
    victim: dict[str, Any] = {}

    def evict_first_aggregator(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "aggregate_flush" and len(record["tasks"]) >= 2 and not victim:
            victim.update(record)
            asyncio.get_running_loop().create_task(master.provider.evict(record["node"]))

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=evict_first_aggregator)
    assert victim and result.ok, result.summary
    assert_exact(scenario, tmp_path)
    commits = accepted_commits(tmp_path)
    assert victim["block"] not in {r["push"] for r in commits}
    assert sorted(r["task"] for r in commits) == [f"j000.s0.t{i}" for i in range(6)]
    relaunched = {r["task"] for r in events(tmp_path, "task_started") if r["attempt"] >= 1}
    assert set(victim["tasks"]) <= relaunched
    assert all(r["attempt"] >= 1 for r in commits if r["task"] in victim["tasks"])
    assert_clean(tmp_path)


@pytest.mark.parametrize("incremental", [True, False])
async def test_pado_receivers_process_pushes_as_they_are_committed(tmp_path: Path, incremental: bool) -> None:
    """Four wordcount maps on two one-slot transient nodes push to two reducers. Incremental
    receivers start as soon as they are set up, before any push is committed, and read
    each committed push as it comes; otherwise a receiver starts once all of its inputs
    are committed. Either way every map output is counted once."""
    scenario = make_scenario(
        cluster={"reserved": 1, "transient": {"count": 2, "slots": 1}, "heartbeat_interval": 0.2},
        jobs=[{"workload": "wordcount", "size_mb": 2, "maps": 4, "reduces": 2, "memory_mb": 64}],
        policy={
            "strategy": "pado",
            "options": {"pado": {"aggregate_max_tasks": 1, "incremental_receivers": incremental}},
        },
    )
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    assert_exact(scenario, tmp_path)
    commits = [r["t"] for r in accepted_commits(tmp_path)]
    assert len(commits) == 4
    receivers = [r["t"] for r in events(tmp_path, "task_started") if r["stage"] == 1]
    assert len(receivers) == 2
    if incremental:
        assert max(receivers) < min(commits)
    else:
        assert min(receivers) >= max(commits)
    assert_clean(tmp_path)
