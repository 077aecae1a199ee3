"""Eagle's cheaper round (per task, then with lazy node states) and CloudCoaster's
once-per-snapshot census take the previous implementations' decisions
(tests/support/policy_reference) on random partitioned clusters; Eagle's probe drawn by rejection
changes only the sample (the round before it, given the same sampler, decides the same)."""

from __future__ import annotations

import dataclasses
import gc
import operator
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from master.autoscalers.cloudcoaster import CloudCoasterAutoscaler
from master.schedulers.eagle import EagleScheduler, _probed, node_ordinal
from master.schedulers.eagle_kept import KeptNodes
from testbed.api.policy import ClusterSnapshot, JobView, NodeView, PendingTask, RunningTask
from tests.support.policy_reference import cloudcoaster_v1, eagle_v1, eagle_v2, eagle_v3

CLASSES = ("reserved", "transient")


@st.composite
def snapshots(draw: st.DrawFn) -> ClusterSnapshot:
    pending = []
    for j in range(draw(st.integers(1, 5))):
        for i in range(draw(st.integers(0, 5))):
            pending.append(
                PendingTask(
                    f"j{j}/{i}",
                    f"j{j}",
                    0,
                    i,
                    draw(st.sampled_from([500, 1_000, 3_000])),
                    draw(st.sampled_from([0.5, 2.0, 60.0])),
                    allowed_classes=frozenset(draw(st.sets(st.sampled_from(CLASSES), min_size=1))),
                    long=draw(st.booleans()),
                )
            )
    task_ids = [t.task_id for t in pending] + ["gone/0"]
    nodes = []
    for n in range(draw(st.integers(1, 10))):
        node_class = draw(st.sampled_from(CLASSES))
        slots = draw(st.integers(1, 3))
        running = tuple(
            RunningTask(
                f"r{n}/{k}", "old", 1_000, 0.0, draw(st.sampled_from([5.0, 50.0])), long=draw(st.booleans())
            )
            for k in range(draw(st.integers(0, slots)))
        )
        nodes.append(
            NodeView(
                f"{node_class}-{n}",
                node_class,
                slots,
                draw(st.sampled_from([2_000, 4_000])),
                running,
                draining=draw(st.booleans()),
                launched=draw(st.sampled_from([0.0, 9.0])),
                partition="short"
                if node_class == "transient"
                else draw(st.sampled_from(["general", "short"])),
                queued=tuple(draw(st.lists(st.sampled_from(task_ids), max_size=3, unique=True))),
            )
        )
    jobs = {}
    for task in pending:
        jobs.setdefault(task.job_id, []).append(task)
    views = tuple(JobView(job_id, float(len(tasks) % 2), tuple(tasks)) for job_id, tasks in jobs.items())
    return ClusterSnapshot(10.0, tuple(nodes), views)


EAGLE_ROUNDS = (
    snapshots(),
    st.integers(1, 3),  # probes
    st.sampled_from(["fifo", "srpt"]),  # queue order
    st.booleans(),  # on-demand copies
    st.integers(0, 3),  # seed
)
"""A snapshot and Eagle's knobs: what both equivalence tests draw."""


@settings(max_examples=150, deadline=None)
@given(*EAGLE_ROUNDS)
def test_eagle_decisions_equal_the_reference(
    snapshot: ClusterSnapshot, probes: int, order: str, copies: bool, seed: int
) -> None:
    knobs = {"probes": probes, "queue_order": order, "on_demand_copies": copies, "seed": seed}
    ours = eagle_v3.EagleScheduler(**knobs).schedule(snapshot)  # type: ignore[arg-type]
    assert ours == eagle_v1.EagleScheduler(**knobs).schedule(snapshot)  # type: ignore[arg-type]


@settings(max_examples=150, deadline=None)
@given(snapshots(), st.sampled_from([0.3, 0.95]), st.sampled_from([0.5, 3.0]), st.integers(0, 3))
def test_cloudcoaster_decisions_equal_the_reference(
    snapshot: ClusterSnapshot, threshold: float, r: float, provisioning: int
) -> None:
    knobs = {"threshold": threshold, "r": r, "p": 0.5, "provisioning_delay_s": 5.0, "short_on_demand": 2}
    ours, reference = CloudCoasterAutoscaler(**knobs), cloudcoaster_v1.CloudCoasterAutoscaler(**knobs)
    for _ in range(2):  # the second time from the census of the same snapshot
        assert ours.decide(snapshot, provisioning) == reference.decide(snapshot, provisioning)
        assert ours.facts(snapshot) == reference.facts(snapshot)
        assert ours.wake_at(snapshot, provisioning) == reference.wake_at(snapshot, provisioning)


def test_a_short_task_never_probes_a_node_a_long_task_took_earlier_in_the_round() -> None:
    """The clear nodes are kept for the round: a long placement must refresh them."""
    nodes = tuple(NodeView(f"reserved-{i}", "reserved", 1, 4_000) for i in range(3))
    jobs = (
        JobView("a", 0.0, (PendingTask("a/0", "a", 0, 0, 1_000, 1.0),)),
        JobView("b", 1.0, (PendingTask("b/0", "b", 0, 0, 1_000, 60.0, long=True),)),
        JobView("c", 2.0, (PendingTask("c/0", "c", 0, 0, 1_000, 1.0),)),
    )
    for seed in range(20):
        decisions = EagleScheduler(probes=1, seed=seed).schedule(ClusterSnapshot(10.0, nodes, jobs))
        placed = {d.task_id: d.node_id for d in decisions}
        assert placed["c/0"] != placed["b/0"]


@settings(max_examples=150, deadline=None)
@given(*EAGLE_ROUNDS)
def test_eagle_lazy_node_states_take_the_eager_rounds_decisions(
    snapshot: ClusterSnapshot, probes: int, order: str, copies: bool, seed: int
) -> None:
    knobs = {"probes": probes, "queue_order": order, "on_demand_copies": copies, "seed": seed}
    ours = eagle_v3.EagleScheduler(**knobs).schedule(snapshot)  # type: ignore[arg-type]
    assert ours == eagle_v2.EagleScheduler(**knobs).schedule(snapshot)  # type: ignore[arg-type]


class _DrawingV3(eagle_v3.EagleScheduler):
    """The round before the probe drew by rejection, with the new sampler (``_probed``)."""

    def _sample(self, round_: eagle_v3._Round, task: PendingTask) -> list[eagle_v3._NodeState]:  # type: ignore[override]
        views = round_.placeable_views(task)
        probed = _probed(self.seed, task.task_id, views, self.probes, lambda v: not round_.long(v))
        return [round_.nodes[view.node_id] for view in probed]


@settings(max_examples=150, deadline=None)
@given(*EAGLE_ROUNDS)
def test_eagle_drawn_probes_change_only_the_sample(
    snapshot: ClusterSnapshot, probes: int, order: str, copies: bool, seed: int
) -> None:
    knobs = {"probes": probes, "queue_order": order, "on_demand_copies": copies, "seed": seed}
    ours = EagleScheduler(**knobs).schedule(snapshot)  # type: ignore[arg-type]
    assert ours == _DrawingV3(**knobs).schedule(snapshot)  # type: ignore[arg-type]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.booleans(), min_size=1, max_size=12),
    st.integers(1, 4),
    st.integers(0, 3),
    st.text(min_size=1, max_size=6),
)
def test_a_probe_is_distinct_clear_nodes_or_all_when_none_is_clear(
    long_bits: list[bool], probes: int, seed: int, task_id: str
) -> None:
    nodes = [NodeView(f"reserved-{i}", "reserved", 1, 4_000) for i in range(len(long_bits))]
    is_long = dict(zip([n.node_id for n in nodes], long_bits, strict=True))
    probed = _probed(seed, task_id, nodes, probes, lambda v: not is_long[v.node_id])
    clear = [n for n in nodes if not is_long[n.node_id]] or nodes
    assert len({n.node_id for n in probed}) == len(probed) == min(probes, len(clear))
    assert all(n in clear for n in probed)
    assert probed == _probed(seed, task_id, nodes, probes, lambda v: not is_long[v.node_id])


def test_a_probe_is_uniform_over_the_clear_nodes() -> None:
    """Rejection keeps the sample uniform: 40 nodes, 10 clear (every 4th), 2 probes, 4,000 tasks."""
    nodes = [NodeView(f"reserved-{i}", "reserved", 1, 4_000) for i in range(40)]
    counts = Counter(
        n.node_id
        for t in range(4_000)
        for n in _probed(0, f"j/{t}", nodes, 2, lambda v: int(v.node_id.split("-")[1]) % 4 == 0)
    )
    assert set(counts) == {f"reserved-{i}" for i in range(0, 40, 4)}
    assert min(counts.values()) > 700 and max(counts.values()) < 900  # 800 expected, sd ~27


@settings(max_examples=60, deadline=None)
@given(st.lists(snapshots(), min_size=2, max_size=4), *EAGLE_ROUNDS[1:])
def test_an_eagle_kept_across_rounds_decides_as_a_fresh_one(
    rounds: list[ClusterSnapshot], probes: int, order: str, copies: bool, seed: int
) -> None:
    """What Eagle keeps from round to round (its nodes' ordinal order) changes no decision."""
    knobs = {"probes": probes, "queue_order": order, "on_demand_copies": copies, "seed": seed}
    kept = EagleScheduler(**knobs)  # type: ignore[arg-type]
    for snapshot in rounds + rounds[:1]:
        assert kept.schedule(snapshot) == EagleScheduler(**knobs).schedule(snapshot)  # type: ignore[arg-type]


@st.composite
def histories(draw: st.DrawFn) -> list[ClusterSnapshot]:
    """Snapshots that share view objects, as the master's do: each the last with some nodes'
    views replaced by another snapshot's (its node ids renamed), some nodes gone, some joining."""
    first = draw(snapshots())
    rounds = [first]
    for _ in range(draw(st.integers(1, 4))):
        other = draw(snapshots())
        nodes = list(rounds[-1].nodes)
        for i in draw(st.lists(st.integers(0, len(nodes) - 1), max_size=len(nodes))):
            donor = other.nodes[i % len(other.nodes)]
            nodes[i] = dataclasses.replace(donor, node_id=nodes[i].node_id, node_class=nodes[i].node_class)
        if len(nodes) > 1 and draw(st.booleans()):
            del nodes[draw(st.integers(0, len(nodes) - 1))]
        if draw(st.booleans()):  # a node joins, at a drawn place
            joining = dataclasses.replace(other.nodes[-1], node_id=f"reserved-{100 + len(rounds)}")
            joining = dataclasses.replace(joining, node_class="reserved")
            nodes.insert(draw(st.integers(0, len(nodes))), joining)
        rounds.append(dataclasses.replace(other, nodes=tuple(nodes)))
    return rounds


@settings(max_examples=100, deadline=None)
@given(histories(), *EAGLE_ROUNDS[1:])
def test_an_eagle_kept_across_rounds_of_shared_views_decides_as_a_fresh_one(
    rounds: list[ClusterSnapshot], probes: int, order: str, copies: bool, seed: int
) -> None:
    """What Eagle keeps across rounds by the views that changed (``eagle_kept.KeptNodes``)."""
    knobs = {"probes": probes, "queue_order": order, "on_demand_copies": copies, "seed": seed}
    kept = EagleScheduler(**knobs)  # type: ignore[arg-type]
    for snapshot in rounds + rounds[:1]:
        assert kept.schedule(snapshot) == EagleScheduler(**knobs).schedule(snapshot)  # type: ignore[arg-type]


ALLOWED = [frozenset({"reserved"}), frozenset({"transient"}), frozenset(CLASSES)]


@settings(max_examples=150, deadline=None)
@given(histories())
def test_the_kept_nodes_are_a_fresh_walks(rounds: list[ClusterSnapshot]) -> None:
    """``KeptNodes`` updated snapshot after snapshot holds what one built from the last holds."""
    kept = KeptNodes(node_ordinal)
    for snapshot in rounds:
        kept.update(snapshot.nodes)
        fresh = KeptNodes(node_ordinal)
        fresh.update(snapshot.nodes)
        assert kept.views == {view.node_id: view for view in snapshot.nodes}
        assert [v.node_id for v in kept.queueing_in_order()] == [v.node_id for v in fresh.queueing_in_order()]
        for allowed in ALLOWED:
            ours, theirs = kept.placeable_of(allowed), fresh.placeable_of(allowed)
            assert len(ours) == len(theirs) and all(map(operator.is_, ours, theirs))
            general, reference = kept.general_of(allowed), fresh.general_of(allowed)
            assert general.free == reference.free and set(general.queued) == set(reference.queued)
            assert general.busy.keys() == reference.busy.keys()
            assert all(map(operator.is_, general.busy.values(), map(reference.busy.get, general.busy)))


def test_a_round_leaves_no_reference_cycle() -> None:
    """A simulation runs the cycle collector once in 2^20 events: a round that is a cycle
    (its node states pointing back at it) piles up gigabytes over a simulated day."""
    nodes = tuple(
        NodeView(f"reserved-{i}", "reserved", 1, 4_000, partition="short" if i > 5 else "general")
        for i in range(8)
    )
    tasks = tuple(PendingTask(f"a/{i}", "a", 0, i, 1_000, 60.0, long=i % 2 == 0) for i in range(12))
    snapshot = ClusterSnapshot(10.0, nodes, (JobView("a", 0.0, tasks),))
    scheduler = EagleScheduler(probes=2)
    gc.collect()
    gc.disable()
    try:
        for _ in range(5):
            assert scheduler.schedule(snapshot)
        assert gc.collect() == 0
    finally:
        gc.enable()
