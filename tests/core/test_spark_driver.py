"""Spark's driver-side stages, driven through the core: MLR's model updates run in Spark's
driver (MLlib sends the aggregated gradients to "the master process, which uses them to
update its model. As the master process is never evicted, the critical chain does not exceed
the current iteration": Pado, EuroSys'17, section 5.2.2), which the paper's engines ran on a
reserved container. The spark baselines run them on a reserved node, so an eviction never
loses a model, and spark-checkpoint does not copy what the driver holds."""

from __future__ import annotations

import pytest

from master.core.events import Round
from master.core.jobs import JobRuntime
from master.recovery.spark import driver_stages
from tests.support.driver import Driver, launches, lose
from tests.support.scenarios import make_scenario

ITERATIONS = 3
MODELS = {3, 6, 9}
"""MLR's model stages: points, then per iteration gradient, aggregate, model."""


def mlr(strategy: str, reserved: int = 1) -> Driver:
    scenario = make_scenario(
        policy={"strategy": strategy, "scheduler": "fifo"},
        cluster={"reserved": reserved, "transient": 4, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
        jobs=[
            {
                "workload": "mlr",
                "points": 400,
                "features": 4,
                "classes": 3,
                "iterations": ITERATIONS,
                "maps": 4,
                "reduces": 2,
            }
        ],
    )
    driver = Driver(scenario)
    driver.boot()
    return driver


def job(driver: Driver) -> JobRuntime:
    return driver.core.jobs["j000"]


def step(driver: Driver) -> None:
    """One round, finishing (and, for a checkpoint copy, pushing) every task running at its start."""
    driver.advance(driver.now + 0.5)
    driver.do(Round())
    for node_id, spec in list(driver.running().values()):
        driver.finish(node_id, spec)
        if spec.push:
            driver.push(node_id, spec)


def node_class(driver: Driver, node_id: str) -> str:
    return driver.core.nodes[node_id].node_class


def test_the_model_updates_are_mlrs_driver_stages() -> None:
    assert driver_stages(job(mlr("spark")).plan) == MODELS


@pytest.mark.parametrize("strategy", ["spark", "spark-checkpoint"])
def test_an_eviction_never_loses_a_model_it_lives_on_the_driver(strategy: str) -> None:
    """Every model update runs on the reserved node; the transient nodes holding the second
    iteration's aggregates are lost once its model is computed, and nothing of the model's
    lineage is recomputed: the critical chain ends at the driver (before the change, the
    models ran on transient nodes and this test saw models 1 and 2 recomputed)."""
    driver = mlr(strategy)
    while job(driver).tasks[(6, 0)].status != "done":
        step(driver)
    holders = {job(driver).tasks[(5, i)].node for i in range(2)}
    for node_id in sorted(n for n in holders if n is not None and node_class(driver, n) == "transient"):
        lose(driver, node_id)
    driver.run_to_end()
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]
    models = [(node_id, spec) for node_id, spec in launches(driver.log) if spec.stage in MODELS]
    assert [spec.stage for _, spec in models] == sorted(MODELS)  # each once: none recomputed
    assert {node_class(driver, node_id) for node_id, _ in models} == {"reserved"}
    assert all(spec.push == () for _, spec in models)  # the driver's model is not checkpointed


def test_without_a_reserved_node_the_driver_work_runs_beside_the_executors() -> None:
    driver = mlr("spark", reserved=0)
    driver.run_to_end()
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]
    models = [node_id for node_id, spec in launches(driver.log) if spec.stage in MODELS]
    assert len(models) == ITERATIONS and {node_class(driver, n) for n in models} == {"transient"}
