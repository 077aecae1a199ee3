"""Start-up is paced: at most ``cluster.start_window`` nodes start at once, and a node is up
(judged by its heartbeats) only once its agent has warmed its task forkserver."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from master.shell.run import run_scenario
from tests.support.runs import assert_clean
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


async def test_nodes_start_a_window_at_a_time_and_the_summary_says_the_cluster_was_complete(
    tmp_path: Path,
) -> None:
    cluster = {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "start_window": 1}
    job = {"workload": "sleep", "tasks": 4, "duration": 0.2}
    result = await run_scenario(settings_of(make_scenario(cluster=cluster, jobs=[job])), tmp_path)
    assert result.ok, result.summary
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    starting, most = 0, 0
    for event in events:
        if event["event"] == "node_launching":
            starting += 1
            most = max(most, starting)
        elif event["event"] == "node_up":
            starting -= 1
    assert most == 1 and sum(e["event"] == "node_up" for e in events) == 4
    first_task = next(i for i, e in enumerate(events) if e["event"] == "task_started")
    assert all(e["event"] != "node_launching" for e in events[first_task:])
    assert result.summary["cluster"]["started"] == {"reserved": 1, "transient": 3}
    assert result.summary["cluster_shortfall"] is None
    assert_clean(tmp_path)
