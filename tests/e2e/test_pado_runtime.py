"""Pado's runtime with real agents: a reserved node failure mid-stage (section 3.2.6)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from master.run import run_scenario
from tests.conftest import make_scenario
from tests.e2e.test_wordcount_run import assert_clean
from tests.e2e.test_workloads_run import assert_exact

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

    result = await run_scenario(scenario, tmp_path, on_event=kill_a_reserved_node)
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
