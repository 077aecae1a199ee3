"""The master's recovery shell against the pure models: JobRuntime's lineage recovery
gives what ``lineage.recover`` decides, with and without checkpoint replicas, and
the strategies map our physical plans onto Algorithm 1's placement."""

from __future__ import annotations

from typing import Any

import pytest

from master.core.jobs import JobRuntime
from master.recovery.lineage import PhysicalPlan, PlanStage, StageDep, TaskState, recover
from master.recovery.pado_compiler import compile_pado
from master.recovery.spark import logical_dag, physical_operators, shuffle_consumers, stage_classes
from testbed.plan import Dependency, JobPlan, StagePlan
from tests.support.workloads import pagerank_plan


def as_lineage(plan: JobPlan) -> PhysicalPlan:
    kinds: dict[str, Any] = {"shuffle": "wide", "narrow": "narrow"}
    return PhysicalPlan(
        tuple(
            PlanStage(
                s, (st.op,), st.tasks, tuple(StageDep(d.stage, kinds[d.kind]) for d in st.deps), st.final
            )  # type: ignore[arg-type]
            for s, st in enumerate(plan.stages)
        )
    )


def run_until(job: JobRuntime, running_stage: int, checkpointed: frozenset[int] = frozenset()) -> None:
    """Every stage before ``running_stage`` done (task i on node t<i>), that one running."""
    for stage, index in job.tasks:
        if stage > running_stage:
            continue
        node = f"t{index % 2}"
        attempt = job.launched((stage, index), node, 64, 0.0)
        if stage < running_stage:
            job.succeeded((stage, index), attempt, f"http://{node}", f"b{stage}.{index}", (1, 1, 1))
            if stage in checkpointed:
                job.add_replica((stage, index), f"b{stage}.{index}", "http://r0")


def states(job: JobRuntime) -> dict[tuple[int, int], TaskState]:
    out = {}
    for key, r in job.tasks.items():
        if r.status == "done":
            nodes = {u.removeprefix("http://") for u in (r.location or "", *r.replicas) if u}
            out[key] = TaskState("done", output_nodes=frozenset(nodes) or frozenset({"gone"}))
        elif r.status == "running":
            out[key] = TaskState("running", node=r.node)
    return out


@pytest.mark.parametrize("checkpoint", [False, True])
def test_job_runtime_recovers_what_lineage_recover_decides(checkpoint: bool) -> None:
    plan = pagerank_plan()
    lineage = as_lineage(plan)
    checkpointed = lineage.checkpointed_stages() if checkpoint else frozenset()
    job = JobRuntime("j", "pr", "pagerank", plan, 0.0, 64)
    run_until(job, running_stage=5, checkpointed=checkpointed)
    before = states(job)
    decision = recover(lineage, before, {"t0"})
    job.node_lost("t0", "http://t0")
    pending = {k for k, r in job.tasks.items() if r.status == "pending" and k[0] <= 5}
    assert pending == set(decision.resubmit())
    if checkpoint:  # only the links partitions that lived on t0: the checkpoints serve the rest
        assert decision.chain_stages() == [1]
    else:
        assert decision.chain_stages() == [0, 1, 2, 3, 4]


def test_a_recomputed_output_counts_as_bytes_recomputed_an_interrupted_one_does_not() -> None:
    job = JobRuntime("j", "pr", "pagerank", pagerank_plan(), 0.0, 64)
    run_until(job, running_stage=2)
    job.node_lost("t0", "http://t0")
    for key in [(0, 0), (1, 0), (2, 0)]:
        attempt = job.launched(key, "t1", 64, 1.0)
        job.succeeded(key, attempt, "http://t1", f"b{key}", (1, 1, 1))
    assert job.bytes_recomputed == 2 * 3  # edges 0 and links 0 again; scatter 0 ran once
    assert job.relaunched == 3


def test_pado_maps_algorithm_1_onto_the_physical_stages() -> None:
    plan = pagerank_plan(iterations=4)
    classes = stage_classes(compile_pado(logical_dag(plan)), plan)  # type: ignore[arg-type]
    assert classes == ["transient"] + ["reserved"] * 6
    assert shuffle_consumers(plan, 0) == [1]
    assert physical_operators(plan)[-1] == ("ranks-4", "write")
    two_stage = JobPlan(
        "sort",
        (
            StagePlan("sort.map", 3, 2),
            StagePlan("sort.reduce", 2, 1, (Dependency(0, "shuffle"),), final=True),
        ),
    )
    assert stage_classes(compile_pado(logical_dag(two_stage)), two_stage) == ["transient", "reserved"]  # type: ignore[arg-type]


def test_relaunches_after_task_errors_are_counted_apart_from_evictions_and_lost_data() -> None:
    job = JobRuntime("j", "pr", "pagerank", pagerank_plan(), 0.0, 64)
    run_until(job, running_stage=2)
    for _ in range(2):  # scatter 0 fails twice by itself (say a missing file): two error relaunches
        attempt = job.tasks[(2, 0)].attempt
        assert job.failed((2, 0), attempt, counts_as_failure=True, error="FileNotFoundError")
        job.launched((2, 0), "t0", 64, 2.0)
    assert job.failed((2, 1), job.tasks[(2, 1)].attempt, counts_as_failure=False)  # a fetch failure
    job.launched((2, 1), "t1", 64, 2.0)
    job.node_lost("t0", "http://t0")  # an eviction: edges 0, links 0 and scatter 0 again
    for key in [(0, 0), (1, 0), (2, 0)]:
        job.launched(key, "t1", 64, 3.0)
    assert job.error_relaunches == 2
    assert job.relaunched == 1 + 3
