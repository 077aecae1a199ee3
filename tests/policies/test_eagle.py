"""The Eagle scheduler on hand-built snapshots."""

from __future__ import annotations

import pytest

from master.schedulers.eagle import (
    EagleScheduler,
    long_node_ids,
    node_ordinal,
    short_partition_size,
    split_partitions,
)
from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    Dequeue,
    Enqueue,
    JobView,
    NodeView,
    PendingTask,
    RunningTask,
)


def node(
    node_id: str,
    partition: str = "general",
    node_class: str = "reserved",
    slots: int = 1,
    running: tuple[RunningTask, ...] = (),
    queued: tuple[str, ...] = (),
    draining: bool = False,
) -> NodeView:
    return NodeView(
        node_id,
        node_class,  # type: ignore[arg-type]
        slots,
        1024,
        running=running,
        partition=partition,  # type: ignore[arg-type]
        queued=queued,
        draining=draining,
    )


def busy(task_id: str, long: bool, until: float = 100.0) -> RunningTask:
    return RunningTask(task_id, "busy-job", 64, started=0.0, expected_end=until, long=long)


def task(task_id: str, job_id: str, long: bool = False, est: float = 1.0) -> PendingTask:
    return PendingTask(task_id, job_id, 0, 0, 64, est_duration_s=est, long=long)


def job(job_id: str, *tasks: PendingTask, submitted: float = 0.0) -> JobView:
    return JobView(job_id, submitted, tasks, total_tasks=len(tasks))


def snap(nodes: list[NodeView], jobs: list[JobView], now: float = 0.0) -> ClusterSnapshot:
    return ClusterSnapshot(now, tuple(nodes), tuple(jobs))


def placements(decisions: list) -> dict[str, str]:
    return {d.task_id: d.node_id for d in decisions if isinstance(d, Assign | Enqueue)}


# ----------------------------------------------------------------- partitions


def test_split_puts_the_highest_ordinals_in_the_short_partition() -> None:
    ids = [f"reserved-{i}" for i in (10, 2, 0, 1, 3, 9, 4, 5, 6, 7, 8, 11)]
    parts = split_partitions(ids, 0.25)
    assert sorted(i for i, p in parts.items() if p == "short") == [
        "reserved-10",
        "reserved-11",
        "reserved-9",
    ]
    assert sum(p == "general" for p in parts.values()) == 9


@pytest.mark.parametrize(
    ("reserved", "fraction", "expected"),
    [(80, 0.02, 2), (10, 0.05, 1), (10, 0.25, 3), (4, 0.0, 0), (2, 0.9, 1), (1, 0.5, 0)],
)
def test_short_partition_size(reserved: int, fraction: float, expected: int) -> None:
    assert short_partition_size(reserved, fraction) == expected


def test_short_fraction_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="short_fraction"):
        short_partition_size(10, 1.0)


def test_ordinal_sorts_numbers_numerically() -> None:
    assert sorted(["n10", "n9", "n100"], key=node_ordinal) == ["n9", "n10", "n100"]


# ------------------------------------------------------------------- long tasks


def test_long_tasks_never_go_to_the_short_partition() -> None:
    nodes = [
        node("g0", running=(busy("x0", long=True),)),
        node("g1", running=(busy("x1", long=False, until=5.0),)),
        node("s0", "short"),
        node("s1", "short"),
    ]
    long_job = job("L", *(task(f"L{i}", "L", long=True, est=50) for i in range(4)))
    decisions = EagleScheduler().schedule(snap(nodes, [long_job]))
    placed = placements(decisions)
    assert set(placed) == {"L0", "L1", "L2", "L3"}
    assert set(placed.values()) <= {"g0", "g1"}
    assert not any(isinstance(d, Assign) for d in decisions)  # the general partition is full


def test_long_task_goes_to_the_general_node_with_the_least_wait() -> None:
    nodes = [
        node("g0", running=(busy("x0", long=True, until=500.0),)),
        node("g1", running=(busy("x1", long=False, until=3.0),)),
        node("s0", "short"),
    ]
    decisions = EagleScheduler().schedule(snap(nodes, [job("L", task("L0", "L", long=True))]))
    assert decisions == [Enqueue("L0", "g1")]


def test_long_task_starts_at_once_on_a_free_general_slot() -> None:
    nodes = [node("g0", running=(busy("x0", long=True),)), node("g1"), node("s0", "short")]
    decisions = EagleScheduler().schedule(snap(nodes, [job("L", task("L0", "L", long=True))]))
    assert decisions == [Assign("L0", "g1", 64, predicted_duration_s=1.0)]


# ------------------------------------------------------------------ short tasks


def test_short_probes_avoid_nodes_running_long_tasks() -> None:
    long_nodes = [node(f"g{i}", running=(busy(f"x{i}", long=True),)) for i in range(6)]
    free_nodes = [node("g6", slots=64), node("s0", "short", slots=64)]
    tasks = [task(f"S{i}", "S") for i in range(40)]
    decisions = EagleScheduler(probes=2).schedule(snap(long_nodes + free_nodes, [job("S", *tasks)]))
    assert set(placements(decisions).values()) <= {"g6", "s0"}
    assert len(placements(decisions)) == 40


def test_a_queued_long_task_sets_the_long_bit_too() -> None:
    nodes = [node("g0", queued=("L0",)), node("g1")]
    snapshot = snap(nodes, [job("L", task("L0", "L", long=True))])
    assert long_node_ids(snapshot) == {"g0"}


def test_probing_picks_the_least_loaded_probed_node() -> None:
    nodes = [
        node("g0", running=(busy("a", long=False, until=9.0),), queued=("q0",)),
        node("g1", running=(busy("b", long=False, until=2.0),)),
        node("s0", "short", running=(busy("c", long=False, until=5.0),)),
    ]
    queued = job("Q", task("q0", "Q", est=4.0))
    # probes >= nodes: every node is probed, the least estimated wait wins
    decisions = EagleScheduler(probes=3).schedule(snap(nodes, [queued, job("S", task("S0", "S"))]))
    assert placements(decisions)["S0"] == "g1"


def test_probe_samples_are_deterministic_and_seeded() -> None:
    nodes = [node(f"g{i}", slots=8) for i in range(16)]
    snapshot = snap(nodes, [job("S", *(task(f"S{i}", "S") for i in range(30)))])
    first = EagleScheduler(seed=1).schedule(snapshot)
    assert EagleScheduler(seed=1).schedule(snapshot) == first
    assert EagleScheduler(seed=2).schedule(snapshot) != first


def test_short_task_queues_when_no_probed_node_is_free() -> None:
    nodes = [node("g0", running=(busy("a", long=False, until=3.0),))]
    decisions = EagleScheduler().schedule(snap(nodes, [job("S", task("S0", "S"))]))
    assert decisions == [Enqueue("S0", "g0")]


def test_draining_nodes_take_no_new_tasks_but_run_their_queue() -> None:
    nodes = [node("g0", slots=2, queued=("q0",), draining=True), node("g1")]
    jobs = [job("Q", task("q0", "Q")), job("S", task("S0", "S"), submitted=1.0)]
    decisions = EagleScheduler().schedule(snap(nodes, jobs))
    assert placements(decisions) == {"q0": "g0", "S0": "g1"}


# ----------------------------------------------------------------------- queues


def queue_snapshot() -> ClusterSnapshot:
    """One free slot, three queued tasks of jobs with 9 s, 2 s and 5 s of work left."""
    nodes = [node("g0", queued=("a0", "b0", "c0"))]
    jobs = [
        job("A", task("a0", "A", est=3.0), task("a1", "A", est=6.0)),
        job("B", task("b0", "B", est=2.0)),
        job("C", task("c0", "C", est=5.0)),
    ]
    return snap(nodes, jobs)


def test_fifo_starts_the_oldest_queued_task() -> None:
    decisions = EagleScheduler(queue_order="fifo").schedule(queue_snapshot())
    assert next(d for d in decisions if isinstance(d, Assign)).task_id == "a0"


def test_srpt_starts_the_task_of_the_job_with_the_least_work_left() -> None:
    decisions = EagleScheduler(queue_order="srpt").schedule(queue_snapshot())
    assert next(d for d in decisions if isinstance(d, Assign)).task_id == "b0"


def test_srpt_ranks_by_job_work_left_not_by_task_duration() -> None:
    nodes = [node("g0", queued=("a0", "b0"))]
    jobs = [
        job("A", task("a0", "A", est=1.0), task("a1", "A", est=20.0)),
        job("B", task("b0", "B", est=3.0)),
    ]
    decisions = EagleScheduler(queue_order="srpt").schedule(snap(nodes, jobs))
    assert [d.task_id for d in decisions if isinstance(d, Assign)] == ["b0"]


def test_unknown_queue_order_is_refused() -> None:
    with pytest.raises(ValueError, match="queue_order"):
        EagleScheduler(queue_order="lifo")  # type: ignore[arg-type]


def test_a_task_is_never_started_twice_in_one_round() -> None:
    nodes = [node("s0", "short", queued=("S0",)), node("t0", "short", "transient", queued=("S0",))]
    decisions = EagleScheduler().schedule(snap(nodes, [job("S", task("S0", "S"))]))
    assert decisions == [
        Assign("S0", "s0", 64, predicted_duration_s=1.0),
        Dequeue("S0", "t0", "copy started on s0"),
    ]


def test_the_same_snapshot_gets_the_same_decisions() -> None:
    nodes = [node(f"g{i}", slots=2, running=(busy(f"x{i}", long=i % 2 == 0),)) for i in range(6)]
    nodes += [node("s0", "short", slots=2)]
    jobs = [
        job("L", *(task(f"L{i}", "L", long=True, est=60) for i in range(5))),
        job("S", *(task(f"S{i}", "S") for i in range(9)), submitted=1.0),
    ]
    snapshot = snap(nodes, jobs)
    scheduler = EagleScheduler(queue_order="srpt")
    assert scheduler.schedule(snapshot) == scheduler.schedule(snapshot)
