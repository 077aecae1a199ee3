"""Stage-DAG jobs on the simulator: the same core runs them on the model agents, costed by
each stage's StageCost, recovered by lineage after evictions and placed by Pado."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from testbed.api import JobDag, JobInputs, StageCost, StageInput, StageSpec, Workload
from tests.support.sim import events, rows, simulate

JOIN = {
    "workload": "testbed.workloads.join:JoinAggregate",
    "options": {"customers": 200_000, "orders": 2_000_000, "customer_tasks": 4, "order_tasks": 16},
    "reduces": 8,
}
CLUSTER = {"reserved": {"count": 2, "slots": 2}, "transient": {"count": 8, "slots": 1}}
STORM = {"storms": [{"at": "3s", "evict": {"count": 4, "kind": "transient", "select": "busiest"}}]}


@pytest.mark.parametrize("strategy", ["spark", "spark-checkpoint", "pado"])
def test_the_join_runs_on_the_model_agents_through_an_eviction_storm(tmp_path: Path, strategy: str) -> None:
    result = simulate(tmp_path, cluster=CLUSTER, chaos=STORM, jobs=[JOIN], policy={"strategy": strategy})
    assert result.ok, result.summary
    assert len(events(result.run_dir, "eviction")) == 4
    tasks = rows(result.run_dir, "tasks")
    done = Counter(r["task_id"] for r in tasks if r["status"] == "succeeded")
    assert {t for t in done} == {f"j000.s{s}.t{i}" for s, n in enumerate([4, 16, 8, 8, 8]) for i in range(n)}
    by_class = {(r["stage"], r["node_class"]) for r in tasks if r["status"] == "succeeded"}
    if strategy == "pado":  # Algorithm 1: the sources on transient nodes, the rest reserved
        assert {c for s, c in by_class if s in ("0", "1")} == {"transient"}
        assert {c for s, c in by_class if s not in ("0", "1")} == {"reserved"}
    if strategy == "spark":  # the storm's lost outputs are recomputed by lineage
        assert max(done.values()) > 1 and result.summary["relaunched_tasks"] > 0
    sources = [float(r["end_s"]) - float(r["start_s"]) for r in tasks if r["stage"] == "1"]
    assert min(sources) > 0.5  # costed by StageCost: 0.4 s/MB of a 2.9 MB generated split


def test_a_dag_stage_cost_is_overridden_by_the_scenarios_ops(tmp_path: Path) -> None:
    ops = {"testbed.workloads.join:JoinAggregate.orders": {"s_per_mb": 40.0, "output_ratio": 1.0}}
    slow = simulate(tmp_path, "slow", cluster=CLUSTER, jobs=[JOIN], simulation={"ops": ops})
    base = simulate(tmp_path, "base", cluster=CLUSTER, jobs=[JOIN])
    assert slow.summary["makespan_s"] > 10 * base.summary["makespan_s"]


class Fork(Workload):
    """A source shuffled into two consumers, joined again: a stage read by two many-to-many
    edges, and a stage reading two parents."""

    def dag(self, job: JobInputs) -> JobDag:
        cost, body = StageCost(0.2, 1.0, source_mb=4.0), "m:f"  # never run: the simulator costs it
        return JobDag(
            (
                StageSpec("rows", body, 8, 4, cost=cost),
                StageSpec("left", body, 4, 2, (StageInput("rows"),), cost=cost),
                StageSpec("right", body, 4, 2, (StageInput("rows"),), cost=cost),
                StageSpec("both", body, 2, 1, (StageInput("left"), StageInput("right")), cost=cost),
            )
        )


def test_pado_pushes_a_transient_stage_into_each_of_its_many_to_many_consumers(tmp_path: Path) -> None:
    job = {"workload": f"{__name__}:Fork", "reduces": 2}
    result = simulate(tmp_path, cluster=CLUSTER, jobs=[job], policy={"strategy": "pado"})
    assert result.ok, result.summary
    pushes = [e for e in events(result.run_dir, "push_commit") if e["verdict"] == "accepted"]
    assert {e["task"].split(".")[1] for e in pushes} == {"s0"}
    assert len(pushes) == 8 and result.summary["bytes_pushed"] > 0
    done = [r for r in rows(result.run_dir, "tasks") if r["status"] == "succeeded"]
    assert {r["node_class"] for r in done if r["stage"] in ("1", "2", "3")} == {"reserved"}
    receivers = {(e["task"], e["node"]) for e in events(result.run_dir, "push_received")}
    assert len(receivers) == 16  # each of the 8 pushes reached both reserved nodes (its receivers there)
