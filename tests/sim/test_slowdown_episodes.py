"""Slowdown episodes (``chaos.slowdown.episodes``) on the simulator: a node's cores slowed for
the episode only (known answers of processor sharing), and a run's controller slowing the nodes
``testbed chaos plan`` lists, at its times."""

from __future__ import annotations

from pathlib import Path

import pytest

from master.chaos.plan import plan_slowdowns
from master.event_heap import EventHeap
from master.sim.cpu import NodeCpu
from testbed.scenario.schema import parse_scenario
from testbed.wire.protocol import LaunchTask
from tests.support.cpu_agents import fleet, map_task, run, succeeded
from tests.support.sim import events, rows, simulate, sleep_task
from tests.support.slowdowns import CLUSTER, EPISODE, JOBS


def test_a_job_runs_factor_times_slower_during_the_episode_only() -> None:
    """10 s of work from 0 on one core, 4x slower from 2 to 4: 2 s done by 2, 0.5 s more by 4,
    the 7.5 s left at full speed: through at 11.5. A second job beside it from 0 shares the
    core: half a core each, a quarter of that during the episode: 1 s each by 2, 0.25 s more
    by 4, then 8.75 s left each at half a core: 21.5."""
    heap, done = EventHeap(), []
    cpu = NodeCpu(heap, 1.0)
    cpu.run(10.0, lambda: done.append(heap.now))
    heap.at(2.0, 0, lambda: cpu.slow(4.0))
    heap.at(4.0, 0, lambda: cpu.slow(1.0))
    while heap.step():
        pass
    assert done == pytest.approx([11.5])
    heap, done = EventHeap(), []
    cpu = NodeCpu(heap, 1.0)
    for _ in range(2):
        cpu.run(10.0, lambda: done.append(heap.now))
    heap.at(2.0, 0, lambda: cpu.slow(4.0))
    heap.at(4.0, 0, lambda: cpu.slow(1.0))
    while heap.step():
        pass
    assert done == pytest.approx([21.5, 21.5])


def test_an_attempt_on_an_episode_node_is_slowed_while_the_episode_lasts() -> None:
    """A 10 MiB sort map (1 s per MiB) launched at 2.0 computes from 2.5 (its launch overhead):
    10 s alone, through at 12.5. With the node 4x slower from 5 to 9: 2.5 s done by 5, 1 s
    more by 9, 6.5 s left: 15.5. A sleep of 1 s launched at 6 (begun at 6.5, in the episode)
    takes 4 s: 10.5; one launched at 10 (after it) takes its 1 s: 11.5."""
    heap, agents, heard = fleet()
    agents.command("transient-0", LaunchTask(task=map_task(0, 10.0)))
    heap.at(5.0, 0, lambda: agents.slow("transient-0", 4.0))
    heap.at(9.0, 0, lambda: agents.slow("transient-0", 1.0))
    heap.at(6.0, 0, lambda: agents.command("transient-0", LaunchTask(task=sleep_task(1, 1.0))))
    heap.at(10.0, 0, lambda: agents.command("reserved-0", LaunchTask(task=sleep_task(2, 1.0))))
    run(heap)
    assert succeeded(heard) == {
        "j000.s0.t0": pytest.approx(15.5),
        "j000.s0.t1": pytest.approx(10.5),
        "j000.s0.t2": pytest.approx(11.5),
    }


def test_the_run_slows_the_planned_nodes_at_the_planned_times(tmp_path: Path) -> None:
    """Six 100 s sleeps on two nodes, one of them 3x slower from 150 s to 250 s: the node the
    plan names is journaled slowed then and back at 250 s, its task begun in the episode takes
    300 s, every other task 100 s."""
    chaos = {"slowdown": {"episodes": [EPISODE]}}
    simulate(tmp_path, cluster=CLUSTER, jobs=JOBS, chaos=chaos)
    scenario = parse_scenario({"name": "sim-test", "seed": 3, "timeout": 3600, "cluster": CLUSTER,
                               "jobs": JOBS, "chaos": chaos})  # fmt: skip
    (planned,) = plan_slowdowns(scenario, 3600)
    journaled = events(tmp_path / "run", "slowdown_episode")
    assert [(e["node"], e["factor"], e["began"]) for e in journaled] == [
        (planned.node_id, 3.0, True),
        (planned.node_id, 1.0, False),
    ]
    assert [e["t"] for e in journaled] == pytest.approx([150.0, 250.0])  # time 0 is the sim's 0
    slowed = set()
    for task in rows(tmp_path / "run", "tasks"):
        start, span = float(task["start_s"]), float(task["end_s"]) - float(task["start_s"])
        if task["node_id"] == planned.node_id and 150 <= start < 250:
            slowed.add(task["task_id"])
            assert span == pytest.approx(300.0, abs=1.0)
        else:
            assert span == pytest.approx(100.0, abs=1.0)
    assert len(slowed) == 1


def test_no_episode_no_event(tmp_path: Path) -> None:
    simulate(tmp_path, cluster=CLUSTER, jobs=JOBS, chaos={"slowdown": {"nodes": {"reserved-0": 2}}})
    assert events(tmp_path / "run", "slowdown_episode") == []
