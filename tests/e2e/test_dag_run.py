"""Stage DAGs end to end on local agents: the shipped join (two shuffled parents, a narrow
stage, a shuffle to the sink) exact under evictions on every recovery strategy."""

from __future__ import annotations

import asyncio
import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from testbed.app.cli import main
from testbed.scenario.schema import load_scenario
from tests.support.plugins import write_doc_files
from tests.support.runs import assert_clean, assert_exact, evict_first_if_none
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

CLUSTER = {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 5}
JOIN = {
    "workload": "testbed.workloads.join:JoinAggregate",
    "options": {"customers": 3000, "orders": 40000, "customer_tasks": 2, "order_tasks": 4},
    "reduces": 3,
    "memory_mb": 1,
}


@pytest.mark.parametrize("strategy", ["spark", "spark-checkpoint", "pado"])
async def test_the_join_is_exact_under_evictions(tmp_path: Path, strategy: str) -> None:
    scenario = make_scenario(
        time_scale=60,
        cluster=CLUSTER,
        jobs=[JOIN, {**JOIN, "options": {**JOIN["options"], "orders": 20000}}],
        policy={"strategy": strategy},
        chaos={"transient": {"lifetime": "high", "replace": True, "provisioning_delay": "30s"}},
    )
    result = await run_scenario(settings_of(scenario), tmp_path, on_event=evict_first_if_none())
    assert result.ok, result.summary
    assert result.summary["evictions"] > 0
    assert_exact(scenario, tmp_path)
    plan: dict[str, Any] = json.loads((tmp_path / "dags" / "j000.json").read_text())
    stages = plan["physical_stages"]
    assert [s["operators"] for s in stages] == [["customers"], ["orders"], ["join"], ["partial"], ["total"]]
    assert [d["kind"] for d in stages[2]["deps"]] == ["shuffle", "shuffle"]
    if strategy == "pado":
        assert [s["executors"] for s in stages] == [["transient"]] * 2 + [["reserved"]] * 3
        assert result.summary["bytes_pushed"] > 0
    if strategy == "spark-checkpoint":
        assert result.summary["bytes_checkpointed"] > 0
    assert_clean(tmp_path)


async def test_lineage_recomputes_what_the_evicted_node_held_of_every_parent(tmp_path: Path) -> None:
    """The node of the first transient ``partial`` task (stage 3) dies as it finishes: its
    output, and the join output and source outputs it held, are gone before ``total`` reads
    them, so Spark's lineage reruns what they came from, through both of the join's parents."""
    scenario = make_scenario(cluster={**CLUSTER, "reserved": 0, "transient": 4}, jobs=[JOIN],
                             policy={"strategy": "spark"})  # fmt: skip
    evicted: list[str] = []

    def evict_a_partial_node(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_finished" and ".s3." in record["task"] and not evicted:
            evicted.append(record["node"])
            asyncio.get_running_loop().create_task(master.chaos.evict(record["node"]))

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=evict_a_partial_node)
    assert evicted and result.ok, result.summary
    assert_exact(scenario, tmp_path)
    runs = Counter(
        r["task_id"] for r in csv.DictReader((tmp_path / "tasks.csv").open()) if r["status"] == "succeeded"
    )
    rerun_stages = {task.split(".")[1] for task, n in runs.items() if n > 1}
    assert "s3" in rerun_stages, runs  # the lost partial output, recomputed from its narrow parent
    assert result.summary["relaunched_tasks"] >= 1
    assert_clean(tmp_path)


async def test_the_docs_dag_workload_runs_on_local_agents_under_an_eviction(tmp_path: Path) -> None:
    plugins = tmp_path / "my-workloads"
    plugins.mkdir()
    write_doc_files(plugins)
    scenario = load_scenario(plugins / "mutual.yaml", ["time_scale=60"])
    run_dir = tmp_path / "run"
    result = await run_scenario(settings_of(scenario), run_dir, on_event=evict_first_if_none())
    assert result.ok and result.summary["evictions"] > 0, result.summary
    assert main(["check-output", "--run", str(run_dir)]) == 0
    assert_clean(run_dir)
