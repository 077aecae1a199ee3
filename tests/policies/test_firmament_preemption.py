"""Firmament's ``preemption: true``: running tasks in the flow network with Quincy's
continuation and preemption costs, and their moves read back as ``Preempt`` and ``Migrate``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
import yaml

from master.schedulers.firmament import FirmamentScheduler
from master.schedulers.firmament.costs import EvictionRisk, QuincyCostModel, TransientCostModel
from master.schedulers.firmament.network import FlowNetwork, extract
from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    Decision,
    JobView,
    Migrate,
    NodeView,
    PendingTask,
    Preempt,
    RunningTask,
)
from testbed.chaosmodels.lifetimes import parse_lifetime
from tests.support.cli import assert_validate_refuses

BIG = PendingTask("big/t0", "big", 0, 0, 800, 60.0)
"""A task that fits only where a running task's memory is given back (800 of 1,000 MB)."""


def running(started: float) -> RunningTask:
    return RunningTask("small/t0", "small", 200, started, started + 600.0)


def snap(now: float, nodes: list[NodeView], excluded: frozenset[str] = frozenset()) -> ClusterSnapshot:
    big = replace(BIG, excluded_nodes=excluded)
    return ClusterSnapshot(now, tuple(nodes), (JobView("big", 0.0, (big,)),))


def waited_100s(scheduler: FirmamentScheduler, nodes: list[NodeView]) -> list[Decision]:
    """The big task seen at 0 (no machine then), then a round at 100 s with ``nodes``."""
    scheduler.schedule(snap(0.0, []))
    return scheduler.schedule(snap(100.0, nodes))


def host(small_started: float) -> NodeView:
    return NodeView("m0", "reserved", 1, 1000, (running(small_started),))


def simplex_flows(net: FlowNetwork) -> tuple[int, np.ndarray]:
    graph = nx.MultiDiGraph()
    for index, supply in enumerate(net.supplies):
        graph.add_node(index, demand=-supply)
    for arc in range(net.num_arcs):
        graph.add_edge(
            net.tails[arc], net.heads[arc], key=arc, capacity=net.capacities[arc], weight=net.costs[arc]
        )
    cost, flow = nx.network_simplex(graph)
    flows = np.zeros(net.num_arcs, dtype=np.int64)
    for arc in range(net.num_arcs):
        flows[arc] = flow[net.tails[arc]][net.heads[arc]][arc]
    return int(cost), flows


def test_a_task_that_waited_longer_than_a_short_one_ran_preempts_it_and_networkx_agrees() -> None:
    """The big task's wait (100 s x 0.5 = 50) costs more than preempting the small task after
    5 s (its preemption cost 0.5 x 5 = 2.5, above its continuation cost by its 5 s run). The
    machine's one slot is the small task's; its memory has room for both."""
    scheduler = FirmamentScheduler(QuincyCostModel(), preemption=True)
    decisions = waited_100s(scheduler, [host(95.0)])
    assert decisions == [Preempt("small/t0", "firmament"), Assign("big/t0", "m0", 800)]
    assert scheduler.last is not None
    net, solution = scheduler.last
    cost, flows = simplex_flows(net)
    assert solution.cost == cost == 750  # the small task's 2.5 + 5 (x 100); the big one placed at 0
    assert extract(net, flows) == extract(net, solution.flows) == {"big/t0": "m0"}


def test_a_task_that_ran_longer_than_the_wait_is_worth_is_not_preempted() -> None:
    """After 100 s of run the small task's continuation (-100) outweighs the big task's wait (50)."""
    scheduler = FirmamentScheduler(QuincyCostModel(), preemption=True)
    decisions = waited_100s(scheduler, [host(0.0)])
    assert [d for d in decisions if isinstance(d, Preempt | Migrate | Assign)] == []


def test_a_task_migrates_to_make_room_where_only_the_waiting_one_may_go() -> None:
    """The big task may not go to m1 (it failed there before); the small one may: it moves."""
    scheduler = FirmamentScheduler(QuincyCostModel(), preemption=True)
    spare = NodeView("m1", "reserved", 1, 1000)
    nodes = [host(95.0), spare]
    scheduler.schedule(snap(0.0, [], excluded=frozenset({"m1"})))
    decisions = scheduler.schedule(snap(100.0, nodes, excluded=frozenset({"m1"})))
    assert decisions == [Migrate("small/t0", "m1", "firmament"), Assign("big/t0", "m0", 800)]
    net, solution = scheduler.last  # type: ignore[misc]
    assert solution.cost == simplex_flows(net)[0] == 500  # the small task's move: its 5 s run


def test_a_preemption_frees_a_slot_not_memory() -> None:
    """Where the big task's memory fits only once the small task has left, it waits: the flow
    cannot say whether a task that may leave does, so memory is counted as used by it."""
    scheduler = FirmamentScheduler(QuincyCostModel(), preemption=True)
    small_host = NodeView("m0", "reserved", 1, 900, (running(95.0),))  # 700 free: the big one needs 800
    assert waited_100s(scheduler, [small_host]) == []


def test_transient_moves_a_task_off_a_node_told_to_rebalance() -> None:
    """Under the transient model a task on a node with a rebalance recommendation (certain to
    go) would lose its 600 s; moving it costs the 10 s it has run: it migrates to the reserved node."""
    risk = EvictionRisk(
        {("transient", None): parse_lifetime({"fixed": "1h"}), ("reserved", None): parse_lifetime("none")}
    )
    scheduler = FirmamentScheduler(TransientCostModel(risk), preemption=True)
    doomed = NodeView("t0", "transient", 2, 4000, (running(90.0),), rebalance=True)
    safe = NodeView("r0", "reserved", 1, 4000)
    small = PendingTask("new/t0", "new", 0, 0, 100, 10.0)
    decisions = scheduler.schedule(ClusterSnapshot(100.0, (doomed, safe), (JobView("new", 100.0, (small,)),)))
    assert decisions == [Migrate("small/t0", "r0", "firmament")]  # the new task, just seen, waits:
    # t0 would cost it its 10 s, waiting nothing yet


def test_without_preemption_running_tasks_stay_pinned() -> None:
    scheduler = FirmamentScheduler(QuincyCostModel())
    assert waited_100s(scheduler, [host(95.0)]) == []


def test_validate_refuses_a_preemption_that_is_no_boolean(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = {
        "name": "bad",
        "cluster": {"reserved": 1, "transient": 1},
        "policy": {"scheduler": "firmament", "options": {"firmament": {"preemption": "yes"}}},
        "jobs": [{"workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 1}],
    }
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    assert_validate_refuses(path, "policy.options.firmament", "preemption", capsys)
