"""Stage-DAG jobs on the simulator: the same core runs them on the model agents, costed by
each stage's StageCost, recovered by lineage after evictions and placed by Pado."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

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
