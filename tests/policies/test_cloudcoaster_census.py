"""CloudCoaster's census kept across snapshots takes the decisions of the census counted
afresh in every snapshot (tests/support/policy_reference/cloudcoaster_v2.py) on random sequences
of snapshots: views kept from one snapshot to the next (as the core keeps those of nodes
that did not change), changed, new or gone."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from master.autoscalers.cloudcoaster import CloudCoasterAutoscaler
from testbed.api.policy import ClusterSnapshot, JobView, NodeView, PendingTask, RunningTask
from tests.support.policy_reference import cloudcoaster_v2

CLASSES = ("reserved", "transient")


@st.composite
def views(draw: st.DrawFn, node_id: str, task_ids: list[str]) -> NodeView:
    node_class = "transient" if node_id.startswith("transient") else "reserved"
    running = tuple(
        RunningTask(f"{node_id}/{k}", "old", 100, 0.0, 50.0, long=draw(st.booleans()))
        for k in range(draw(st.integers(0, 2)))
    )
    return NodeView(
        node_id,
        node_class,  # type: ignore[arg-type]
        2,
        1_000,
        running,
        draining=draw(st.booleans()),
        launched=draw(st.sampled_from([0.0, 3.0, 9.0])),
        partition="short" if node_class == "transient" else draw(st.sampled_from(["general", "short"])),
        queued=tuple(draw(st.lists(st.sampled_from(task_ids), max_size=2, unique=True))),
    )


@st.composite
def sequences(draw: st.DrawFn) -> list[ClusterSnapshot]:
    """Snapshots in time order; each node keeps its last view object unless it is redrawn."""
    task_ids = [f"j{j}/{i}" for j in range(3) for i in range(3)] + ["gone/0"]
    ids = [f"{c}-{n}" for n in range(8) for c in CLASSES]
    current: dict[str, NodeView] = {}
    snapshots = []
    for step in range(draw(st.integers(1, 6))):
        for node_id in ids:
            if draw(st.integers(0, 3)) == 0 or node_id not in current:  # new or changed
                current[node_id] = draw(views(node_id, task_ids))
        present = draw(st.lists(st.sampled_from(ids), min_size=1, unique=True))
        pending = [
            PendingTask(t, t.split("/")[0], 0, 0, 100, long=draw(st.booleans()))
            for t in draw(st.lists(st.sampled_from(task_ids[:-1]), unique=True))
        ]
        jobs: dict[str, list[PendingTask]] = {}
        for task in pending:
            jobs.setdefault(task.job_id, []).append(task)
        job_views = tuple(JobView(job_id, 0.0, tuple(tasks)) for job_id, tasks in jobs.items())
        nodes = tuple(current[n] for n in present)
        snapshots.append(ClusterSnapshot(10.0 * step, nodes, job_views))
    return snapshots


@settings(max_examples=200, deadline=None)
@given(
    sequences(),
    st.sampled_from([0.3, 0.95]),
    st.sampled_from([0.5, 3.0]),
    st.sampled_from([0.0, 0.5, 1.0]),
    st.integers(0, 4),
    st.integers(0, 3),
)
def test_the_kept_census_decides_as_one_counted_afresh(
    snapshots: list[ClusterSnapshot], threshold: float, r: float, p: float, n: int, provisioning: int
) -> None:
    knobs = {"threshold": threshold, "r": r, "p": p, "provisioning_delay_s": 5.0, "short_on_demand": n}
    ours = CloudCoasterAutoscaler(**knobs)
    for snapshot in snapshots:
        reference = cloudcoaster_v2.CloudCoasterAutoscaler(**knobs)
        assert ours.decide(snapshot, provisioning) == reference.decide(snapshot, provisioning)
        assert ours.facts(snapshot) == reference.facts(snapshot)
        assert ours.wake_at(snapshot, provisioning) == reference.wake_at(snapshot, provisioning)
        assert ours.replaced_ids(snapshot) == reference.replaced_ids(snapshot)
