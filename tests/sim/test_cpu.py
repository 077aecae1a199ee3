"""The simulator's CPU model (master.sim.cpu): a node's cores shared by its attempts and its
agent's copies, on hand-built cases whose answers are known."""

from __future__ import annotations

import pytest

from master.event_heap import EventHeap
from master.sim.cpu import NodeCpu
from master.sim.nodes import url_of
from testbed.wire.protocol import CancelTask, LaunchTask, PushDelivered, PushTarget, TaskUpdate
from tests.support.cpu_agents import MB, SPEC, fleet, map_task, run, succeeded


def ends(cores: float, jobs: list[tuple[float, float, bool]]) -> list[float]:
    """Each job's end: (start, CPU seconds, agent's) on a node of ``cores``."""
    heap, done = EventHeap(), [0.0] * len(jobs)
    cpu = NodeCpu(heap, cores)
    for i, (start, work, agent) in enumerate(jobs):
        heap.at(
            start,
            0,
            lambda i=i, work=work, agent=agent: cpu.run(work, lambda: done.__setitem__(i, heap.now), agent),
        )
    while heap.step():
        pass
    return done


def test_blocks_served_are_one_job_of_the_agent_whose_end_moves_with_each_block() -> None:
    """0.25 s of serving at 0 and 0.25 s more at 0.1: one job, through at 0.5; a copy of 0.5 s
    from 0.2 shares the agent's one core with it from then: the serving has 0.3 s left at
    0.2, at half speed both run until the serving ends at 0.8, the copy's 0.2 s left then alone:
    1.0. Each block adds no event but the serving's end when it comes."""
    heap, copied = EventHeap(), []
    cpu = NodeCpu(heap, 4.0)
    heap.at(0.0, 0, lambda: cpu.serve(0.25))
    heap.at(0.1, 0, lambda: cpu.serve(0.25))
    heap.at(0.2, 0, lambda: cpu.run(0.5, lambda: copied.append(heap.now), agent=True))
    ended = []
    while heap.step():
        if cpu.serving is None and not ended:
            ended.append(heap.now)
    assert ended == pytest.approx([0.8]) and copied == pytest.approx([1.0])


def test_two_attempts_on_one_core_take_twice_as_long() -> None:
    assert ends(1.0, [(0.0, 1.0, False), (0.0, 1.0, False)]) == pytest.approx([2.0, 2.0])


def test_attempts_that_fit_the_cores_each_get_one() -> None:
    assert ends(2.0, [(0.0, 1.0, False), (0.0, 1.0, False)]) == pytest.approx([1.0, 1.0])
    assert ends(4.0, [(0.0, 3.0, False)]) == pytest.approx([3.0])  # one thread, one core


def test_half_a_core_runs_an_attempt_at_half_speed() -> None:
    assert ends(0.5, [(0.0, 1.0, False)]) == pytest.approx([2.0])


def test_a_later_attempt_slows_the_first_from_its_start() -> None:
    """1 s of work from 0 and 0.25 s from 0.5 on one core: alone until 0.5, then half each:
    the second ends at 1.0 (its 0.25 s at half), the first has 0.25 s left then, so 1.25."""
    assert ends(1.0, [(0.0, 1.0, False), (0.5, 0.25, False)]) == pytest.approx([1.25, 1.0])


def test_the_agent_is_one_thread_for_all_its_jobs() -> None:
    """Two copies' CPU (0.5 s each) on a 4-core node: one core for both, so both end at 1.0;
    an attempt beside them keeps its own core."""
    assert ends(4.0, [(0.0, 0.5, True), (0.0, 0.5, True), (0.0, 1.0, False)]) == pytest.approx(
        [1.0, 1.0, 1.0]
    )


def test_a_cancelled_job_gives_its_share_back() -> None:
    heap, done = EventHeap(), []
    cpu = NodeCpu(heap, 1.0)
    first = cpu.run(1.0, lambda: done.append(("first", heap.now)))
    cpu.run(1.0, lambda: done.append(("second", heap.now)))
    heap.at(0.5, 0, lambda: cpu.stop(first))  # the second did 0.25 s at half a core
    while heap.step():
        pass
    assert done == [("second", pytest.approx(1.25))]


def test_two_attempts_on_a_one_cpu_node_take_twice_as_long() -> None:
    heap, agents, heard = fleet()
    for index in (0, 1):
        agents.command("transient-0", LaunchTask(task=map_task(index, 1.0)))
    run(heap)
    assert succeeded(heard) == {
        "j000.s0.t0": pytest.approx(2.5 + 2.0),
        "j000.s0.t1": pytest.approx(2.5 + 2.0),
    }
    reported = [
        m.metrics.compute_s for _, _, m in heard if isinstance(m, TaskUpdate) and m.state == "succeeded"
    ]
    assert reported == pytest.approx([2.0, 2.0])  # as long as it took, as a real worker reports it


def test_one_attempt_alone_computes_at_one_core_and_without_sharing_always() -> None:
    heap, agents, heard = fleet()
    agents.command("transient-0", LaunchTask(task=map_task(0, 1.0)))
    run(heap)
    assert succeeded(heard) == {"j000.s0.t0": pytest.approx(2.5 + 1.0)}
    heap, agents, heard = fleet({**SPEC, "simulation": {**SPEC["simulation"], "cpu_sharing": False}})
    for index in (0, 1):
        agents.command("transient-0", LaunchTask(task=map_task(index, 1.0)))
    run(heap)
    assert list(succeeded(heard).values()) == pytest.approx([2.5 + 1.0, 2.5 + 1.0])


def test_a_copy_beside_an_attempt_stretches_it_by_the_copys_cpu() -> None:
    """Map 0 (1 MiB, 1 s) ends at 3.5 and copies its output to the reserved node: its sender's
    CPU is 0.25 s. Map 1, launched at 3.0 on the same 1-cpu node, computes from 3.5 (its
    launch overhead) beside the copy: half a core each until the copy's 0.25 s are done at
    4.0, so map 1 ends 0.25 s late, at 3.5 + 1.0 + 0.25. The copy's link takes 1.048576 s;
    then the receiver's 0.5 s: it lands at 3.5 + 1.048576 + 0.5."""
    heap, agents, heard = fleet()
    target = PushTarget(node_id="reserved-0", url=url_of("reserved-0"), partitions=(0,))
    agents.command("transient-0", LaunchTask(task=map_task(0, 1.0, push=(target,))))
    heap.at(3.0, 0, lambda: agents.command("transient-0", LaunchTask(task=map_task(1, 1.0))))
    run(heap)
    assert succeeded(heard) == {"j000.s0.t0": pytest.approx(3.5), "j000.s0.t1": pytest.approx(4.75)}
    (delivered,) = [t for t, _, m in heard if isinstance(m, PushDelivered)]
    assert delivered == pytest.approx(3.5 + MB / 1e6 + 0.5)


def test_a_cancelled_attempt_frees_its_share() -> None:
    heap, agents, heard = fleet()
    for index in (0, 1):
        agents.command("transient-0", LaunchTask(task=map_task(index, 1.0)))
    heap.at(3.0, 0, lambda: agents.command("transient-0", CancelTask(task_id="j000.s0.t0", attempt=0)))
    run(heap)
    assert succeeded(heard) == {"j000.s0.t1": pytest.approx(3.0 + 0.75)}  # 0.25 s done at half, 0.75 alone


def test_the_same_run_twice_is_the_same() -> None:
    outcomes = []
    for _ in range(2):
        heap, agents, heard = fleet()
        target = PushTarget(node_id="reserved-0", url=url_of("reserved-0"), partitions=(0,))
        for index in range(3):
            agents.command("transient-0", LaunchTask(task=map_task(index, 0.5 + index, push=(target,))))
        run(heap)
        outcomes.append([(t, node, type(m).__name__, getattr(m, "task_id", "")) for t, node, m in heard])
    assert outcomes[0] == outcomes[1]

