"""Spark's stage plan and lineage recovery, with and without checkpoints, on hand-built states.

Section numbers refer to the RDD paper (NSDI'12) unless the Pado paper is named.
"""

from __future__ import annotations

import json
import random

import pytest

from master.recovery.lineage import (
    PhysicalPlan,
    PlanStage,
    StageDep,
    TaskKey,
    TaskState,
    checkpoint_node,
    executor_classes,
    recover,
    spark_plan,
)
from testbed.workloads.pagerank.lineage_dag import pagerank_dag
from testbed.workloads.sort.lineage_dag import sort_dag
from testbed.workloads.wordcount.lineage_dag import wordcount_dag


def done(*nodes: str) -> TaskState:
    return TaskState("done", output_nodes=frozenset(nodes))


def running(node: str, inputs_fetched: bool = False) -> TaskState:
    return TaskState("running", node=node, inputs_fetched=inputs_fetched)


# ---------------------------------------------------------------- the plan


def test_shuffle_workloads_are_a_map_stage_and_a_final_reduce_stage() -> None:
    for build, ops in ((wordcount_dag, ("reduce", "write")), (sort_dag, ("sort", "write"))):
        plan = spark_plan(build(6, 3))
        assert plan.stages[1] == PlanStage(1, ops, 3, (StageDep(0, "wide"),), final=True)
        assert plan.stages[0].tasks == 6 and plan.stages[0].deps == ()
        assert not plan.stages[0].final
        assert plan.checkpointed_stages() == {0}
        assert plan.total_tasks == 9


def test_pagerank_is_one_stage_per_iteration() -> None:
    """Section 5.1: stages pipeline narrow transformations and end at shuffles, "or any
    already computed partitions": links are read by every iteration, so they keep
    their partitions; each iteration reads the previous shuffle and the
    co-partitioned links, and emits the next shuffle."""
    plan = spark_plan(pagerank_dag(partitions=4, iterations=3))
    assert [(s.operators, s.deps, s.final) for s in plan.stages] == [
        (("read-edges",), (), False),
        (("links",), (StageDep(0, "wide"),), False),
        (("ranks-0", "contribs-1"), (StageDep(1, "narrow"),), False),
        (("ranks-1", "contribs-2"), (StageDep(1, "narrow"), StageDep(2, "wide")), False),
        (("ranks-2", "contribs-3"), (StageDep(1, "narrow"), StageDep(3, "wide")), False),
        (("ranks-3", "write"), (StageDep(4, "wide"),), True),
    ]
    assert all(s.tasks == 4 for s in plan.stages)
    assert plan.checkpointed_stages() == {0, 2, 3, 4}


def test_plan_json_names_the_checkpointed_stages_only_under_spark_checkpoint() -> None:
    plan = spark_plan(wordcount_dag(2, 1))
    spark = json.loads(plan.to_json("spark"))
    checkpoint = json.loads(plan.to_json("spark-checkpoint"))
    assert spark["checkpointed_stages"] == [] and checkpoint["checkpointed_stages"] == [0]
    assert spark["stages"][1] == {
        "id": 1,
        "operators": ["reduce", "write"],
        "tasks": 1,
        "deps": [{"stage": 0, "kind": "wide"}],
        "final": True,
    }


@pytest.mark.parametrize(
    ("stages", "message"),
    [
        ((PlanStage(1, ("a",), 1),), "stage 1 is at position 0"),
        ((PlanStage(0, ("a",), 0),), "at least one task"),
        ((PlanStage(0, ("a",), 1, (StageDep(0, "wide"),)),), "not an earlier stage"),
        (
            (PlanStage(0, ("a",), 2), PlanStage(1, ("b",), 3, (StageDep(0, "narrow"),))),
            "joins 2 tasks to 3",
        ),
    ],
)
def test_plan_validation(stages: tuple[PlanStage, ...], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PhysicalPlan(stages)


def test_executor_classes_per_strategy() -> None:
    """Pado paper, section 5.1.2: Spark "runs executors on both transient and reserved
    containers"; Spark-checkpoint "runs executors on transient containers"."""
    assert executor_classes("spark") == {"reserved", "transient"}
    assert executor_classes("spark-checkpoint") == {"transient"}


def test_checkpoints_spread_over_the_reserved_nodes_deterministically() -> None:
    reserved = ["r2", "r1", "r3"]
    chosen = [checkpoint_node((s, i), reserved) for s in range(3) for i in range(20)]
    assert chosen == [checkpoint_node((s, i), list(reversed(reserved))) for s in range(3) for i in range(20)]
    assert set(chosen) == {"r1", "r2", "r3"}
    with pytest.raises(ValueError, match="at least one reserved node"):
        checkpoint_node((0, 0), [])


# ---------------------------------------------------------------- recovery: one shuffle


SORT = spark_plan(sort_dag(maps=4, reduces=2))


def sort_state(reducers: dict[int, TaskState]) -> dict[TaskKey, TaskState]:
    maps = {(0, 0): done("t1"), (0, 1): done("t1"), (0, 2): done("t2"), (0, 3): done("t3")}
    return {**maps, **{(1, i): s for i, s in reducers.items()}}


def test_lost_map_outputs_are_recomputed_for_an_unfinished_reducer() -> None:
    """Section 5.1: "If some stages have become unavailable (e.g., because an output
    from the 'map side' of a shuffle was lost), we resubmit tasks to compute the
    missing partitions in parallel." """
    state = sort_state({0: done("t2"), 1: running("t2")})
    rec = recover(SORT, state, {"t1"})
    assert rec.relaunch == frozenset()
    assert rec.recompute == {(0, 0), (0, 1)}
    assert rec.lost_outputs == {(0, 0), (0, 1)}


def test_a_task_running_on_the_lost_node_is_relaunched() -> None:
    state = sort_state({0: running("t1"), 1: running("t2", inputs_fetched=True)})
    rec = recover(SORT, state, {"t1"})
    assert rec.relaunch == {(1, 0)}
    assert rec.recompute == {(0, 0), (0, 1)}
    assert rec.resubmit() == [(0, 0), (0, 1), (1, 0)]


def test_nothing_is_recomputed_when_no_unfinished_task_needs_the_lost_outputs() -> None:
    """Reducers that finished, or that already hold all their input, need no map output."""
    finished = recover(SORT, sort_state({0: done("t2"), 1: done("t1")}), {"t1"})
    assert finished.recompute == frozenset() and finished.relaunch == frozenset()
    assert finished.lost_outputs == {(0, 0), (0, 1)}  # reducer 1's output is final: kept
    fetched = recover(SORT, sort_state({0: done("t2"), 1: running("t2", True)}), {"t1"})
    assert fetched.recompute == frozenset()


def test_a_pending_reducer_needs_every_map_output() -> None:
    rec = recover(SORT, sort_state({0: done("t2")}), {"t1", "t3"})
    assert rec.recompute == {(0, 0), (0, 1), (0, 3)}


# ---------------------------------------------------------------- recovery: the critical chain

PAGERANK = spark_plan(pagerank_dag(partitions=2, iterations=4))
"""Stages: 0 read-edges, 1 links, 2..5 iterations 1..4, 6 ranks-4 + write."""


def pagerank_state(checkpointed: frozenset[TaskKey] = frozenset()) -> dict[TaskKey, TaskState]:
    """Iterations 1 to 3 done, partition p always on node t{p}; iteration 4 running.
    Outputs in ``checkpointed`` also have a copy on the stable-storage node r0."""
    state: dict[TaskKey, TaskState] = {}
    for stage in range(5):
        for p in range(2):
            copies = {f"t{p}", "r0"} if (stage, p) in checkpointed else {f"t{p}"}
            state[(stage, p)] = done(*copies)
    state[(5, 0)] = running("t0")
    state[(5, 1)] = running("t1")
    return state


def all_checkpoints() -> frozenset[TaskKey]:
    return frozenset((s, p) for s in PAGERANK.checkpointed_stages() for p in range(2))


def test_spark_cascades_back_to_the_first_iteration_and_the_input() -> None:
    """Pado paper, section 5.2.1: "an eviction of a transient container can result in a
    loss of intermediate results of all previous iterations [...] Spark has to
    relaunch the tasks that output the lost data to recover from the eviction, from
    the initial iteration." Losing t0 loses partition 0 of every iteration."""
    rec = recover(PAGERANK, pagerank_state(), {"t0"})
    assert rec.relaunch == {(5, 0)}
    assert rec.recompute == {(0, 0), (1, 0), (2, 0), (3, 0), (4, 0)}
    assert rec.chain_stages() == [0, 1, 2, 3, 4]


def test_spark_checkpoint_reads_checkpoints_instead_of_recomputing_parents() -> None:
    """Pado paper, section 5.2.1: "This lets Spark-checkpoint avoid the cascading
    recomputations that Spark suffers from." Only the links partition, which no
    shuffle reads, is rebuilt, from the checkpointed edge shuffle."""
    rec = recover(PAGERANK, pagerank_state(all_checkpoints()), {"t0"})
    assert rec.relaunch == {(5, 0)}
    assert rec.recompute == {(1, 0)}
    assert rec.chain_stages() == [1]


def test_a_checkpoint_still_in_flight_protects_nothing() -> None:
    """Checkpoints are asynchronous: an output whose copy has not reached stable storage
    is lost with its node; recovery then goes back one shuffle, to the next
    checkpoint that did complete."""
    rec = recover(PAGERANK, pagerank_state(all_checkpoints() - {(4, 0)}), {"t0"})
    assert rec.recompute == {(1, 0), (4, 0)}


def test_losing_the_other_node_too_recomputes_both_partitions() -> None:
    rec = recover(PAGERANK, pagerank_state(), {"t0", "t1"})
    assert rec.relaunch == {(5, 0), (5, 1)}
    assert rec.recompute == {(s, p) for s in range(5) for p in range(2)}


def test_final_outputs_are_never_lost() -> None:
    state = pagerank_state()
    state[(5, 0)] = done("t0")
    state[(5, 1)] = done("t1")
    state[(6, 0)] = done("t0")
    state[(6, 1)] = running("t1")
    rec = recover(PAGERANK, state, {"t0"})
    assert (6, 0) not in rec.lost_outputs
    assert rec.recompute == {(5, 0), (4, 0), (3, 0), (2, 0), (1, 0), (0, 0)}


# ---------------------------------------------------------------- recovery: a property


@pytest.mark.parametrize("seed", range(25))
def test_after_recovery_every_unfinished_task_can_get_its_inputs(seed: int) -> None:
    """Random progress and placements, random losses, with and without checkpoints.
    Once ``recover``'s answer is applied (those tasks back to pending), every task
    that still needs inputs finds each of them available or about to be
    recomputed; and every recomputed task is needed by some unfinished task."""
    rng = random.Random(seed)
    plan = spark_plan(pagerank_dag(partitions=3, iterations=3))
    nodes = ["t0", "t1", "t2", "t3"]
    checkpointed = plan.checkpointed_stages() if seed % 2 else frozenset()
    frontier = rng.randrange(len(plan.stages))
    state: dict[TaskKey, TaskState] = {}
    for stage_id, index in plan.task_keys():
        node = rng.choice(nodes)
        if stage_id < frontier:
            copies = {node, "r0"} if stage_id in checkpointed and rng.random() < 0.8 else {node}
            state[(stage_id, index)] = done(*copies)
        elif stage_id == frontier and rng.random() < 0.7:
            state[(stage_id, index)] = running(node, inputs_fetched=rng.random() < 0.3)
    lost = set(rng.sample(nodes, rng.randint(1, 2)))
    rec = recover(plan, state, lost)

    after = dict(state)
    for key in rec.relaunch | rec.recompute:
        after.pop(key)
    for key in rec.lost_outputs - rec.recompute:
        after[key] = TaskState("done", output_nodes=frozenset())  # forgotten, never read again
    for key in plan.task_keys():
        s = after.get(key, TaskState())
        if s.status == "pending" or (s.status == "running" and not s.inputs_fetched):
            for parent in plan.inputs(key):
                p = after.get(parent, TaskState())
                assert p.status != "done" or plan.stages[parent[0]].final or p.output_nodes - lost
    needed: set[TaskKey] = set()
    for key in plan.task_keys():
        s = after.get(key, TaskState())
        if s.status == "pending" or (s.status == "running" and not s.inputs_fetched):
            needed |= set(plan.inputs(key))
    assert rec.recompute <= needed
