"""The transient cost model prices a map output's exposure: the eviction of its node after the
map ended but before its reduces read the output (``PendingTask.exposed_s``, ``loss_s``)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from master.schedulers.firmament import FirmamentScheduler
from master.schedulers.firmament.costs import TransientCostModel, TransientRequest, duration_bucket
from master.schedulers.firmament.machines import MachineTable
from master.schedulers.firmament.network import scaled
from testbed.api.policy import JobView, NodeView, PendingTask
from tests.support.firmament import node, placed, risk, snap

NOW = 600.0
"""The transient node launched at 0 is 10 minutes old."""


def task(stage: int = 0, duration: float = 1.0, exposed: float = 0.0, loss: float = 0.0) -> PendingTask:
    return PendingTask(f"j0/s{stage}", "j0", stage, 0, 100, duration, exposed_s=exposed, loss_s=loss)


def costs(
    model: TransientCostModel, pending: PendingTask, nodes: list[NodeView], now: float = NOW
) -> list[float]:
    return model.machine_costs(
        model.request_key(pending), MachineTable.of(nodes, now), np.arange(len(nodes))
    ).tolist()


def test_a_map_prefers_a_reserved_node_once_its_outputs_exposure_is_priced() -> None:
    """Pado's high rate, a 1 s map: its own run's risk is below the solver's resolution, so the
    model without exposure is indifferent; a minute of exposure and 20 s of work at stake is not."""
    nodes = [node("t0", "transient", slots=1), node("r0", slots=1)]
    model = TransientCostModel(risk("high"))
    assert [scaled(c) for c in costs(model, task(), nodes)] == [0, 0]  # indifferent
    exposed = task(exposed=60.0, loss=20.0)
    transient, reserved = costs(model, exposed, nodes)
    assert reserved == 0.0 and transient > 0.5
    jobs = [JobView("j0", 0.0, (exposed,))]
    assert placed(FirmamentScheduler(model).schedule(snap(nodes, jobs, now=NOW))) == {"j0/s0": "r0"}


def test_a_map_waits_for_a_safe_slot_while_waiting_costs_less_than_its_exposure() -> None:
    nodes = [node("t0", "transient", slots=1), node("r0", slots=1, running=1)]
    model = TransientCostModel(risk("high"))
    exposed = task(exposed=60.0, loss=20.0)
    (loss, _) = costs(model, exposed, nodes)
    scheduler = FirmamentScheduler(model)
    jobs = [JobView("j0", 0.0, (exposed,))]
    assert placed(scheduler.schedule(snap(nodes, jobs, now=NOW))) == {}
    assert placed(scheduler.schedule(snap(nodes, jobs, now=NOW + 2 * loss - 0.2))) == {}
    assert placed(scheduler.schedule(snap(nodes, jobs, now=NOW + 2 * loss + 0.2))) == {"j0/s0": "t0"}


def test_the_exposure_adds_the_risk_after_the_run_times_the_work_lost() -> None:
    nodes = [node("t0", "transient"), node("t1", "transient", launched=500.0), node("r0")]
    model = TransientCostModel(risk({"exponential": {"mean": "10m"}}))
    exposed = task(duration=8.0, exposed=60.0, loss=20.0)
    request = model.request_key(exposed)
    assert request == TransientRequest(8.0, duration_bucket(60.0), duration_bucket(20.0))
    table = MachineTable.of(nodes, NOW)
    during, within = model.risk.over(table, 8.0), model.risk.over(table, request.exposed_s)
    expected = during * 8.0 + (within - during) * request.loss_s
    assert np.allclose(costs(model, exposed, nodes), expected)


def test_a_final_stage_task_is_priced_as_before() -> None:
    """No later stage reads its output: its own run's risk alone, P(T < d) x d."""
    nodes = [node("t0", "transient"), node("t1", "transient", launched=500.0), node("r0")]
    model = TransientCostModel(risk({"exponential": {"mean": "10m"}}))
    final = task(stage=1, duration=30.0)
    bucket = duration_bucket(30.0)
    assert model.request_key(final) == TransientRequest(bucket)
    expected = model.risk.over(MachineTable.of(nodes, NOW), bucket) * bucket
    assert costs(model, final, nodes) == expected.tolist()


def test_an_exposure_no_longer_than_the_run_adds_nothing() -> None:
    nodes = [node("t0", "transient"), node("r0")]
    model = TransientCostModel(risk({"exponential": {"mean": "10m"}}))
    assert costs(model, task(duration=30.0, exposed=20.0, loss=50.0), nodes) == costs(
        model, task(duration=30.0), nodes
    )


def test_a_preference_arc_into_a_transient_holder_carries_its_risk() -> None:
    """The map's 32 MB split is on a transient node only: its preference arc there costs the
    node's risk as well as nothing to read, a reserved node 0.06 to read it across the core (so
    the map waits a round, as Quincy's tasks do before any wait costs more than that)."""
    nodes = [node("t0", "transient", slots=1, zone="a"), node("r0", slots=1, zone="b")]
    split = 32 * 2**20
    local = PendingTask("j0/s0", "j0", 0, 0, 100, 1.0, input_bytes=split, input_on_node=(("t0", split),))
    jobs = [JobView("j0", 0.0, (local,))]
    model = TransientCostModel(risk("high"))
    assert placed(FirmamentScheduler(model).schedule(snap(nodes, jobs, now=NOW))) == {"j0/s0": "t0"}
    exposed = replace(local, exposed_s=60.0, loss_s=20.0)
    jobs, scheduler = [JobView("j0", 0.0, (exposed,))], FirmamentScheduler(model)
    assert placed(scheduler.schedule(snap(nodes, jobs, now=NOW))) == {}
    assert placed(scheduler.schedule(snap(nodes, jobs, now=NOW + 1.0))) == {"j0/s0": "r0"}


def test_a_task_is_priced_by_its_expected_run_not_its_jobs_default_estimate() -> None:
    """A reduce of a job that gives no estimate (``est_duration_s`` 1 s) whose stage the core
    expects to run 16 s (``expected_run_s``): 16 s of work at risk on a transient node, not 1 s,
    so it takes the reserved one."""
    nodes = [node("t0", "transient", slots=1), node("r0", slots=1)]
    model = TransientCostModel(risk("high"))
    reduce = replace(task(stage=1), expected_run_s=16.0)
    assert model.request_key(reduce) == TransientRequest(16.0)
    assert model.request_key(task(stage=1)) == TransientRequest(1.0)  # no estimate: the job's
    transient, reserved = costs(model, reduce, nodes)
    assert reserved == 0.0 and scaled(transient) > scaled(costs(model, task(stage=1), nodes)[0])
    jobs = [JobView("j0", 0.0, (reduce,))]
    assert placed(FirmamentScheduler(model).schedule(snap(nodes, jobs, now=NOW))) == {"j0/s1": "r0"}
