"""Spark's locality for narrow dependencies (NSDI'12, section 5.1), driven through the core:
a task reading a partition through a narrow dependency prefers the node that holds it, so
PageRank's iterations run where their partition of the links table is, also after a node
failure moved some of those partitions (Figure 11's return to normal)."""

from __future__ import annotations

import pytest

from master.core.events import Round
from master.core.jobs import JobRuntime
from master.recovery.spark import narrow_input_nodes
from tests.support.driver import Driver, launches, lose
from tests.support.scenarios import make_scenario

LINKS = 1
"""PageRank's links stage: the iterations (stages 2 and up) read it through a narrow dependency."""


def pagerank(strategy: str = "spark") -> Driver:
    """One PageRank job of 4 partitions on 4 transient nodes of 2 slots (and, for
    spark-checkpoint, the reserved node its checkpoints go to)."""
    scenario = make_scenario(
        policy={"strategy": strategy, "scheduler": "fifo"},
        cluster={
            "reserved": int(strategy == "spark-checkpoint"),
            "transient": 4,
            "heartbeat_interval": 0.2,
            "heartbeat_timeout": 2,
        },
        jobs=[{"workload": "pagerank", "nodes": 50, "edges": 200, "iterations": 4, "maps": 4, "reduces": 4}],
    )
    driver = Driver(scenario)
    driver.boot()
    return driver


def job(driver: Driver) -> JobRuntime:
    return driver.core.jobs["j000"]


def step(driver: Driver, rounds: int) -> None:
    """``rounds`` rounds, each finishing every task running at its start."""
    for _ in range(rounds):
        driver.advance(driver.now + 0.5)
        driver.do(Round())
        for node_id, spec in list(driver.running().values()):
            driver.finish(node_id, spec)


def narrow_launches(driver: Driver, start: int) -> list[tuple[int, int, str, str]]:
    """(stage, index, node it ran on, node holding its links partition then) of every launch
    after ``start`` that reads the links table, in launch order."""
    found = []
    for node_id, spec in launches(driver.log[start:]):
        if spec.stage > LINKS:
            found.append((spec.stage, spec.index, node_id, job(driver).tasks[(LINKS, spec.index)].node or ""))
    return found


@pytest.mark.parametrize("strategy", ["spark", "spark-checkpoint"])
def test_a_narrow_task_prefers_the_node_holding_its_parent_partition(strategy: str) -> None:
    driver = pagerank(strategy)
    assert narrow_input_nodes(job(driver), (2, 0)) == ()  # nothing computed yet
    step(driver, 2)  # the edges, then the links
    tasks = job(driver).tasks
    assert all(tasks[(LINKS, i)].status == "done" for i in range(4))
    for index in range(4):
        assert narrow_input_nodes(job(driver), (2, index)) == (tasks[(LINKS, index)].node,)
    assert narrow_input_nodes(job(driver), (LINKS, 0)) == ()  # a shuffle only: no preference


def test_after_a_node_failure_the_iterations_run_where_their_links_partition_is() -> None:
    """The lost node's links partition is recomputed on another node; from then on its
    iteration task runs there (each node has a free slot for it: 3 nodes of 2 slots, 4 tasks
    per stage), and the other partitions' tasks stay on their own nodes."""
    driver = pagerank()
    step(driver, 4)  # edges, links, scatter, the first iteration
    holders = {job(driver).tasks[(LINKS, i)].node for i in range(4)}
    assert len(holders) == 4  # one partition per node before the failure
    lost = job(driver).tasks[(LINKS, 0)].node
    assert lost is not None
    start = len(driver.log)
    lose(driver, lost)
    driver.run_to_end()
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]
    after = narrow_launches(driver, start)
    assert {4, 5, 6} <= {stage for stage, *_ in after}  # the iterations after the failure
    assert all(node == holder for _, _, node, holder in after), after
    moved = {node for _, index, node, _ in after if index == 0}
    assert len(moved) == 1 and lost not in moved
