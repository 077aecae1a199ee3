"""FIFO's indexed round and the indexed window take the previous implementation's decisions.

The references (tests/support/policy_reference) scanned every node for every task; on random
clusters (node classes, free slots and memory, draining nodes, preferred and excluded
nodes, duplicated ids in preferences) both must agree exactly, FIFO with its own index
(a snapshot made by hand) and with the master's (``ClusterSnapshot.free``).
"""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from master.schedulers.fifo import FifoScheduler
from master.schedulers.window import FreeNode, PendingWindow
from testbed.api.policy import ClusterSnapshot, FreeNodes, JobView, NodeView, PendingTask, RunningTask
from tests.support.policy_reference import fifo_v1, window_v1

CLASSES = ("reserved", "transient")
NODE_IDS = [f"n{i}" for i in range(12)]


@st.composite
def nodes(draw: st.DrawFn) -> tuple[NodeView, ...]:
    ids = draw(st.lists(st.sampled_from(NODE_IDS), min_size=1, max_size=12, unique=True))
    views = []
    for node_id in ids:
        slots = draw(st.integers(1, 4))
        busy = draw(st.integers(0, slots))
        memory = draw(st.sampled_from([1_000, 2_000, 4_000]))
        running = tuple(
            RunningTask(f"{node_id}/r{k}", "old", draw(st.sampled_from([0, 200, 500])), 0.0, 1.0)
            for k in range(busy)
        )
        views.append(
            NodeView(
                node_id, draw(st.sampled_from(CLASSES)), slots, memory, running, draining=draw(st.booleans())
            )
        )
    return tuple(views)


@st.composite
def tasks(draw: st.DrawFn, job_id: str) -> tuple[PendingTask, ...]:
    count = draw(st.integers(0, 8))
    return tuple(
        PendingTask(
            f"{job_id}/{i}",
            job_id,
            0,
            i,
            draw(st.sampled_from([0, 300, 700, 1_500, 5_000])),
            preferred_nodes=tuple(draw(st.lists(st.sampled_from(NODE_IDS), max_size=3))),
            allowed_classes=frozenset(draw(st.sets(st.sampled_from(CLASSES), min_size=1))),
            excluded_nodes=frozenset(draw(st.sets(st.sampled_from(NODE_IDS), max_size=4))),
        )
        for i in range(count)
    )


@st.composite
def snapshots(draw: st.DrawFn) -> ClusterSnapshot:
    jobs = tuple(
        JobView(f"j{j}", draw(st.sampled_from([0.0, 1.0, 2.0])), draw(tasks(f"j{j}")))
        for j in range(draw(st.integers(1, 4)))
    )
    return ClusterSnapshot(10.0, draw(nodes()), jobs)


@settings(max_examples=150, deadline=None)
@given(snapshots())
def test_fifo_decisions_equal_the_reference(snapshot: ClusterSnapshot) -> None:
    assert FifoScheduler().schedule(snapshot) == fifo_v1.FifoScheduler().schedule(snapshot)


def indexed(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """The snapshot with its nodes with a free slot indexed, as the master's round gives it."""
    free = {
        n.node_id: FreeNode(n.node_id, n.node_class, n.free_slots, n.free_memory_mb)
        for n in snapshot.nodes
        if not n.draining and n.free_slots > 0
    }
    by_slots: dict[tuple[str, int], list[str]] = {}
    for node in free.values():
        by_slots.setdefault((node.node_class, node.free_slots), []).append(node.node_id)
    buckets = {key: tuple(sorted(ids)) for key, ids in by_slots.items()}
    return replace(snapshot, free=FreeNodes(free, buckets))  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(snapshots())
def test_fifo_on_the_masters_index_decides_as_the_reference(snapshot: ClusterSnapshot) -> None:
    assert FifoScheduler().schedule(indexed(snapshot)) == fifo_v1.FifoScheduler().schedule(snapshot)


@settings(max_examples=150, deadline=None)
@given(snapshots())
def test_window_admits_what_the_reference_admits(snapshot: ClusterSnapshot) -> None:
    free = [FreeNode(n.node_id, n.node_class, n.free_slots, n.free_memory_mb) for n in snapshot.nodes]
    ours, reference = PendingWindow(free), window_v1.PendingWindow(free)
    for job in snapshot.jobs:
        for task in job.pending:
            admitted = ours.admits(task.allowed_classes, task.excluded_nodes, task.ideal_memory_mb)
            assert admitted == reference.admits(
                task.allowed_classes, task.excluded_nodes, task.ideal_memory_mb
            )
            assert ours.full == reference.full
    assert ours.room == reference.room
