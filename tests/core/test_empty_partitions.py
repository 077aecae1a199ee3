"""A reducer and the empty partitions of its parents (MLR's treeAggregate layout: map ``i``
writes only partition ``i % reduces``): not fetched, and their loss neither fails nor holds
up a running reducer; a reducer not launched yet still waits for every parent, as Spark's
(``JobRuntime.parents``). Hand-built job states, no I/O."""

from __future__ import annotations

import pytest

from master.core.jobs import JobRuntime
from master.recovery.lineage import PhysicalPlan, PlanStage, StageDep, TaskState, recover
from testbed.plan import Dependency, JobPlan, StagePlan

MAPS, REDUCES = 4, 2


def tree_aggregate() -> JobRuntime:
    """Four maps on nodes m0..m3, map ``i`` writing only partition ``i % 2``; two reducers."""
    plan = JobPlan(
        "t",
        (
            StagePlan("t.map", MAPS, REDUCES),
            StagePlan("t.reduce", REDUCES, 1, (Dependency(0, "shuffle"),), final=True),
        ),
    )
    job = JobRuntime("j", "t", "t", plan, 0.0, 64)
    for i in range(MAPS):
        attempt = job.launched((0, i), f"m{i}", 64, 0.0)
        sizes = tuple(100 if p == i % REDUCES else 0 for p in range(REDUCES))
        assert job.succeeded((0, i), attempt, f"http://m{i}", f"j.s0.t{i}.a0", sizes)
    return job


def test_a_reducer_is_told_only_of_the_blocks_not_empty_for_it() -> None:
    job = tree_aggregate()
    for reducer in range(REDUCES):
        (refs,) = job.input_refs((1, reducer))
        assert [r.block for r in refs] == [f"j.s0.t{i}.a0" for i in range(reducer, MAPS, REDUCES)]


def test_losing_a_block_empty_for_a_running_reducer_neither_fails_nor_reruns_anything() -> None:
    job = tree_aggregate()
    job.launched((1, 0), "r0", 64, 1.0)  # reads maps 0 and 2; maps 1 and 3 are empty for it
    other = job.launched((1, 1), "r1", 64, 1.0)
    assert job.succeeded((1, 1), other, "http://r1", "j.s1.t1.a0", ())  # the other one is through
    assert job.node_lost("m1", "http://m1") == []
    assert job.tasks[(1, 0)].status == "running"
    lost = job.tasks[(0, 1)]
    assert (lost.status, lost.available) == ("done", False)  # lost, and nobody reads it: not rerun
    assert job.relaunched == 0


def test_losing_a_block_a_running_reducer_reads_reruns_its_map() -> None:
    job = tree_aggregate()
    job.launched((1, 0), "r0", 64, 1.0)
    job.node_lost("m2", "http://m2")
    assert job.tasks[(0, 2)].status == "pending"  # recomputed for the reducer still fetching it
    assert job.tasks[(1, 0)].status == "running"  # it fails only if its fetch does (the agent's report)


def test_a_reducer_not_launched_yet_waits_for_every_map_even_one_empty_for_it() -> None:
    job = tree_aggregate()
    job.node_lost("m1", "http://m1")  # map 1 wrote only reducer 1's partition
    assert job.tasks[(0, 1)].status == "pending"
    assert list(job.ready()) == [(0, 1)]  # the reducers wait for it: Spark's stage-level wait


def test_a_running_reducer_that_fails_then_needs_every_map_again() -> None:
    job = tree_aggregate()
    attempt = job.launched((1, 0), "r0", 64, 1.0)
    other = job.launched((1, 1), "r1", 64, 1.0)
    assert job.succeeded((1, 1), other, "http://r1", "j.s1.t1.a0", ())
    job.node_lost("m1", "http://m1")
    assert job.tasks[(0, 1)].status == "done"  # empty for the running reducer: not rerun
    job.failed((1, 0), attempt, counts_as_failure=False)  # e.g. another input's fetch failed
    assert job.tasks[(0, 1)].status == "pending"  # to launch again, it waits for every map
    assert [key for key in job.ready() if key[0] == 1] == []


@pytest.mark.parametrize("other_reducer", ["pending", "done"])
def test_the_runtime_recovers_what_the_pure_lineage_model_decides_with_empty_partitions(
    other_reducer: str,
) -> None:
    """``lineage.recover`` (the RDD paper's recovery, pure) and ``JobRuntime`` agree on every
    single map node's loss with reducer 0 running: a running reducer needs only the maps it
    reads (maps 1 and 3 are empty for it), a pending one every map."""
    plan = PhysicalPlan(
        (
            PlanStage(0, ("t.map",), MAPS),
            PlanStage(1, ("t.reduce",), REDUCES, (StageDep(0, "wide"),), final=True),
        )
    )
    for lost in range(MAPS):
        job = tree_aggregate()
        job.launched((1, 0), "r0", 64, 1.0)
        if other_reducer == "done":
            attempt = job.launched((1, 1), "r1", 64, 1.0)
            assert job.succeeded((1, 1), attempt, "http://r1", "j.s1.t1.a0", ())
        states = {
            key: TaskState("done", output_nodes=frozenset({r.node or ""}), partition_bytes=r.partition_bytes)
            if r.status == "done"
            else TaskState("running", node=r.node)
            for key, r in job.tasks.items()
            if r.status in ("done", "running")
        }
        decision = recover(plan, states, {f"m{lost}"})
        job.node_lost(f"m{lost}", f"http://m{lost}")
        pending = {k for k, r in job.tasks.items() if r.status == "pending" and k[0] == 0}
        assert pending == set(decision.recompute), lost
        read_by_reducer_0 = lost % REDUCES == 0
        assert bool(decision.recompute) == (read_by_reducer_0 or other_reducer == "pending"), lost
