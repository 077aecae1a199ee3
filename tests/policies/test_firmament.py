"""``scheduler: firmament``: min-cost flow placement on hand-built snapshots."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from master.schedulers.firmament import FirmamentScheduler, cost_model
from master.schedulers.firmament.costs import (
    GB,
    CostModel,
    OctopusCostModel,
    QuincyCostModel,
    TaskInput,
    TransientCostModel,
    TransientRequest,
)
from master.schedulers.firmament.machines import MachineTable
from master.schedulers.firmament.network import CLASS, CLUSTER, MACHINE, ZONE, build
from testbed.api.policy import (
    Assign,
    Decision,
    JobView,
    LogDecision,
    PendingTask,
)
from tests.support.cli import assert_validate_refuses
from tests.support.firmament import node, placed, risk, snap


def job(job_id: str, count: int, memory: int = 100, duration: float = 10.0, **kw: object) -> JobView:
    pending = tuple(PendingTask(f"{job_id}/t{i}", job_id, 0, i, memory, duration, **kw) for i in range(count))
    return JobView(job_id, 0.0, pending)


def per_node(decisions: list[Decision]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for node_id in placed(decisions).values():
        counts[node_id] = counts.get(node_id, 0) + 1
    return counts


@pytest.mark.parametrize("name", ["trivial", "octopus", "quincy", "transient"])
def test_every_free_slot_is_filled_and_none_beyond(name: str) -> None:
    nodes = [
        node("r0", slots=3),
        node("t0", "transient", slots=2, zone="a"),
        node("t1", "transient", running=1),
    ]
    decisions = FirmamentScheduler(cost_model({"cost_model": name})).schedule(snap(nodes, [job("j0", 10)]))
    assert per_node(decisions) == {"r0": 3, "t0": 2, "t1": 1}
    assert all(isinstance(d, Assign) and d.memory_mb == 100 for d in decisions)


def test_a_task_gets_arcs_only_to_machines_where_its_memory_fits() -> None:
    nodes = [node("small", slots=4, memory=500), node("big", slots=4, memory=1300)]
    decisions = FirmamentScheduler(CostModel()).schedule(snap(nodes, [job("j0", 5, memory=600)]))
    assert per_node(decisions) == {"big": 2}  # two of 600 MB fit in 1,300; none in 500


def test_two_request_classes_never_overcommit_a_machines_memory() -> None:
    """Each request class's arc takes one 600 MB task into the 1,000 MB machine: the flow may
    send both, and the second waits (deferred) rather than overcommit the node."""
    nodes = [node("n0", slots=2, memory=1000)]
    jobs = [job("a", 1, memory=600, allowed_classes=frozenset({"reserved"})), job("b", 1, memory=600)]
    decisions = FirmamentScheduler(CostModel()).schedule(snap(nodes, jobs))
    assert len(placed(decisions)) == 1
    assert all(d.decision == "deferred" for d in decisions if isinstance(d, LogDecision))


def test_draining_nodes_classes_and_exclusions_are_respected() -> None:
    nodes = [node("r0"), node("t0", "transient"), node("t1", "transient", draining=True)]
    jobs = [
        job("only-transient", 3, allowed_classes=frozenset({"transient"})),
        job("not-r0", 2, excluded_nodes=frozenset({"r0"})),
    ]
    decisions = FirmamentScheduler(CostModel()).schedule(snap(nodes, jobs))
    where = placed(decisions)
    assert "t1" not in where.values()
    assert all(where[t] == "t0" for t in where if t.startswith("only-transient"))
    assert all(where[t] != "r0" for t in where if t.startswith("not-r0"))
    assert per_node(decisions) == {"t0": 2}  # r0 would take only-transient's or not-r0's: neither


def test_running_tasks_are_pinned() -> None:
    """A running task is never moved: its slot is not offered, and no decision names it."""
    nodes = [node("n0", slots=3, running=2)]
    decisions = FirmamentScheduler(OctopusCostModel()).schedule(snap(nodes, [job("j0", 3)]))
    assert per_node(decisions) == {"n0": 1}
    assert not any("busy" in d.task_id for d in decisions if isinstance(d, Assign))


def test_octopus_spreads_load_to_the_least_loaded_machine() -> None:
    nodes = [node("loaded", slots=6, running=3), node("idle", slots=6)]
    decisions = FirmamentScheduler(OctopusCostModel()).schedule(snap(nodes, [job("j0", 3)]))
    assert per_node(decisions) == {"idle": 3}


def test_preferred_nodes_win_under_the_trivial_model() -> None:
    nodes = [node("a", slots=4), node("b", slots=4)]
    decisions = FirmamentScheduler(CostModel()).schedule(snap(nodes, [job("j0", 2, preferred_nodes=("b",))]))
    assert per_node(decisions) == {"b": 2}


def test_quincy_places_a_task_where_its_input_lives() -> None:
    """10 GB of input: 8 GB on n1 (zone a), 2 GB on n3 (zone b). n1 costs 4 (2 GB across the
    core), n3 16; zone a costs 12 (its worst machine, n0: 8 GB over the rack's switch, 2 across
    the core), zone b 18; the cluster aggregator 20 (zone c holds none of it)."""
    nodes = [node(f"n{i}", zone=zone) for i, zone in enumerate("aabbcc")]
    found = TaskInput(10 * GB, {"n1": 8 * GB, "n3": 2 * GB})
    model = QuincyCostModel(inputs=lambda task: found)
    racks = {n.node_id: (n.node_class, n.zone) for n in nodes}
    task = job("j0", 1).pending[0]
    preferences = model.preferences(task, racks)
    assert preferences.machines == {"n1": 4.0, "n3": 16.0}
    assert preferences.racks == {("reserved", "a"): 12.0, ("reserved", "b"): 18.0}
    assert model.cluster_cost(task, racks) == 20.0
    scheduler = FirmamentScheduler(model)  # it waits while waiting costs less than 4 (8 s)
    assert placed(scheduler.schedule(snap(nodes, [job("j0", 1)], now=0.0))) == {}
    assert placed(scheduler.schedule(snap(nodes, [job("j0", 1)], now=8.0))) == {"j0/t0": "n1"}
    assert QuincyCostModel(preference_threshold=0.3, inputs=lambda t: found).preferences(
        task, racks
    ).machines == {"n1": 4.0}


def test_quincy_waiting_grows_with_the_time_since_the_task_was_first_seen() -> None:
    """A task is placed on a machine costing 10 only once it has waited 20 s (0.5 per second)."""
    nodes = [node("n0")]
    model = QuincyCostModel(inputs=lambda task: TaskInput(5 * GB, {}))  # 5 GB across the core: 10
    scheduler = FirmamentScheduler(model)
    jobs = [job("j0", 1)]
    assert placed(scheduler.schedule(snap(nodes, jobs, now=100.0))) == {}
    assert placed(scheduler.schedule(snap(nodes, jobs, now=119.0))) == {}
    assert placed(scheduler.schedule(snap(nodes, jobs, now=120.0))) == {"j0/t0": "n0"}


def test_transient_prefers_a_node_that_is_not_evicted() -> None:
    nodes = [node("t0", "transient", slots=1), node("r0", slots=1)]
    model = TransientCostModel(risk({"exponential": {"mean": "60s"}}))
    decisions = FirmamentScheduler(model).schedule(snap(nodes, [job("j0", 1, duration=30.0)]))
    assert placed(decisions) == {"j0/t0": "r0"}


def test_transient_waits_until_waiting_costs_more_than_the_expected_loss() -> None:
    """Only a transient node is free: P(evicted within 32 s | mean 60 s) = 0.413, so the
    expected loss is 13.2 s of work, which waiting (0.5 per second) outweighs after 26.4 s."""
    nodes = [node("t0", "transient", slots=1), node("r0", slots=1, running=1)]
    scheduler = FirmamentScheduler(TransientCostModel(risk({"exponential": {"mean": "60s"}})))
    jobs = [job("j0", 1, duration=32.0)]
    assert placed(scheduler.schedule(snap(nodes, jobs, now=0.0))) == {}
    assert placed(scheduler.schedule(snap(nodes, jobs, now=26.0))) == {}
    assert placed(scheduler.schedule(snap(nodes, jobs, now=27.0))) == {"j0/t0": "t0"}


def test_transient_prefers_the_older_node_when_the_hazard_falls_with_age() -> None:
    nodes = [node("young", "transient", slots=1, launched=990.0), node("old", "transient", slots=1)]
    model = TransientCostModel(risk({"weibull": {"shape": 0.5, "scale": "10m"}}))
    young, old = model.machine_costs(TransientRequest(10.0), MachineTable.of(nodes, 1000.0), np.arange(2))
    assert old < young / 5
    scheduler = FirmamentScheduler(model)  # once the task has waited long enough to take a risk
    assert placed(scheduler.schedule(snap(nodes, [job("j0", 1)], now=1000.0))) == {}
    assert placed(scheduler.schedule(snap(nodes, [job("j0", 1)], now=1010.0))) == {"j0/t0": "old"}


def test_transient_counts_a_rebalance_recommendation_as_a_certain_eviction() -> None:
    nodes = [node("t0", "transient", rebalance=True), node("t1", "transient")]
    model = TransientCostModel(risk({"fixed": "1h"}))
    costs = model.machine_costs(TransientRequest(10.0), MachineTable.of(nodes, 0.0), np.arange(2))
    assert costs.tolist() == [10.0, 0.0]


def test_the_network_has_the_dissertations_levels() -> None:
    """Cluster aggregator, node class and zone aggregators between the tasks and the machines."""
    nodes = [node("r0"), node("t0", "transient", zone="a"), node("t1", "transient", zone="b")]
    tasks = list(job("j0", 2).pending)
    net = build(snap(nodes, [job("j0", 2)]), CostModel(), {}, tasks)
    labels = {
        kind: sorted(net.labels[i] for i, k in enumerate(net.kinds) if k == kind) for kind in set(net.kinds)
    }
    assert labels[CLUSTER] == ["X 100 MB"]
    assert labels[CLASS] == ["C reserved", "C transient"]
    assert labels[ZONE] == ["Z transient/a", "Z transient/b"]
    assert labels[MACHINE] == ["r0", "t0", "t1"]


def test_a_failing_solver_places_nothing_and_says_so() -> None:
    """A wait cost beyond the solver's range (a real failure of OR-Tools: BAD_COST_RANGE): the
    round journals it and leaves the task pending; the scheduler keeps working."""
    nodes = [node("n0")]
    inputs = {"j0": TaskInput(GB, {})}  # j0's input must cross the core: it waits, and its wait grows
    scheduler = FirmamentScheduler(QuincyCostModel(wait_factor=1e20, inputs=lambda t: inputs.get(t.job_id)))
    scheduler.schedule(snap(nodes, [job("j0", 1)], now=0.0))
    decisions = scheduler.schedule(snap(nodes, [job("j0", 1)], now=1e6))
    assert not placed(decisions)
    assert [d.decision for d in decisions if isinstance(d, LogDecision)] == ["solver_failed: BAD_COST_RANGE"]
    assert placed(scheduler.schedule(snap(nodes, [job("j1", 1)], now=1e6))) == {"j1/t0": "n0"}


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="cost_model: unknown cost model 'qincy'"):
        cost_model({"cost_model": "qincy"})
    with pytest.raises(ValueError, match="wait_factor"):
        cost_model({"cost_model": "quincy", "wait_factor": -1})
    with pytest.raises(ValueError, match="unknown firmament options"):
        cost_model({"preempt": True})
    with pytest.raises(ValueError, match="preemption: expected true or false"):
        cost_model({"preemption": "yes"})
    with pytest.raises(ValueError, match="not trivial's"):
        cost_model({"cost_model": "trivial", "wait_factor": 1})


def test_validate_refuses_an_unknown_cost_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = {
        "name": "bad",
        "cluster": {"reserved": 1, "transient": 1},
        "policy": {"scheduler": "firmament", "options": {"firmament": {"cost_model": "qincy"}}},
        "jobs": [{"workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 1}],
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    assert_validate_refuses(path, "policy.options.firmament", "unknown cost model 'qincy'", capsys)
