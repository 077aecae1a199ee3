"""MLR end to end with its model read by broadcast once per node (``testbed.workloads.broadcast``):
the model exact against the reference with a node evicted, and the later iterations'
gradients reading their node's copy of the model; under Spark, each aggregate fetching only the
gradients written to it (MLlib's treeAggregate)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from testbed.scenario.schema import Scenario
from testbed.wire.blocks import FRAME_HEADER
from testbed.workloads.mlr import vector_bytes
from tests.support.runs import assert_clean, assert_exact, evict_first_if_none
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

JOB = {
    "workload": "mlr",
    "points": 6000,
    "features": 40,
    "classes": 6,
    "iterations": 3,
    "maps": 6,
    "reduces": 2,
    "memory_mb": 64,
}
"""Stages: points 0; per iteration k = 0, 1, 2: gradients 1 + 3k, aggregates 2 + 3k, model 3 + 3k.
The gradients of iterations 2 and 3 (stages 4 and 7) read the model of stage 3 and 6."""


def mlr_scenario(strategy: str) -> Scenario:
    """``JOB`` on 1 reserved node and 2 transient of 3 slots, at the high eviction rate."""
    return make_scenario(
        time_scale=60,
        cluster={
            "reserved": 1,
            "transient": {"count": 2, "slots": 3},
            "heartbeat_interval": 0.2,
            "heartbeat_timeout": 5,
        },
        jobs=[JOB],
        policy={"strategy": strategy},
        chaos={"transient": {"lifetime": "high", "replace": True, "provisioning_delay": "30s"}},
    )


async def test_mlr_is_exact_with_its_model_read_once_per_node_under_an_eviction(tmp_path: Path) -> None:
    scenario = mlr_scenario("pado")  # the gradients on transient nodes, the model on the reserved one
    evict = evict_first_if_none()
    copies: dict[str, set[str]] = {}
    """Node -> its copies seen when one of its gradients of stage 4 or 7 succeeded."""

    def hook(master: Any, record: dict[str, Any]) -> None:
        evict(master, record)
        finished = record["event"] == "task_finished" and record["status"] == "succeeded"
        if finished and record["stage"] in (4, 7):
            found = (tmp_path / "nodes" / record["node"] / "broadcast").glob("*.index")  # none once gone
            copies.setdefault(record["node"], set()).update(path.name for path in found)

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=hook)
    assert result.ok, result.summary
    assert result.summary["evictions"] > 0
    assert_exact(scenario, tmp_path)
    made = set().union(*copies.values())
    assert made, copies  # the transient nodes' gradients read the reserved node's model through copies
    models = ("j000.s3.t0.a", "j000.s6.t0.a")
    assert all(name.startswith(models) and name.endswith(".p0.index") for name in made), made
    assert_clean(tmp_path)


async def test_mlr_is_exact_under_spark_each_aggregate_fetching_only_its_gradients(tmp_path: Path) -> None:
    """Spark's treeAggregate under an eviction: gradient ``i`` is written whole into partition
    ``i % 2``, and each aggregate attempt that succeeds fetched exactly its 3 gradients (the
    master never names an empty partition), whichever were recomputed."""
    scenario = mlr_scenario("spark")
    result = await run_scenario(settings_of(scenario), tmp_path, on_event=evict_first_if_none())
    assert result.ok, result.summary
    assert result.summary["evictions"] > 0
    assert_exact(scenario, tmp_path)
    values = (JOB["features"] + 1) * JOB["classes"]
    vector = vector_bytes(values) - FRAME_HEADER.size  # one frame; a task counts its payload
    rows = list(csv.DictReader((tmp_path / "tasks.csv").open()))
    aggregates = [r for r in rows if int(r["stage"]) in (2, 5, 8) and r["status"] == "succeeded"]
    assert len(aggregates) >= 6
    assert {int(r["bytes_in"]) for r in aggregates} == {3 * vector}
    assert_clean(tmp_path)
