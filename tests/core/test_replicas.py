"""The core's input replicas on hand-built states: placement, loss on eviction, reads, preferences."""

import pytest

from master.core.replicas import SOURCE, Read, Replicas, place
from master.schedulers.firmament.costs import GB, QuincyCostModel, TaskInput
from master.schedulers.firmament.machines import Rack
from testbed.api.policy import PendingTask

NODES = ["r0", "r1", "t0", "t1", "t2"]
SPLITS = [f"s{i}" for i in range(20)]


def test_each_split_gets_n_distinct_nodes_the_same_for_a_seed() -> None:
    a = place(SPLITS, NODES, 2, seed=7)
    assert all(len(set(h)) == 2 and set(h) <= set(NODES) for h in a.holders.values())
    assert place(SPLITS, list(reversed(NODES)), 2, seed=7) == a
    assert place(SPLITS, NODES, 2, seed=8) != a


def test_placement_uses_every_node_over_many_splits() -> None:
    held = {n for h in place(SPLITS, NODES, 2, seed=1).holders.values() for n in h}
    assert held == set(NODES)


@pytest.mark.parametrize("n", [-1, 6])
def test_replication_outside_zero_to_node_count_is_refused(n: int) -> None:
    with pytest.raises(ValueError, match="input_replication"):
        place(SPLITS, NODES, n, seed=1)


def test_an_evicted_node_loses_its_replicas_and_reads_fall_back() -> None:
    r = Replicas({"a": ["t0", "t1"], "b": ["t1"], "c": ["r0"]})
    assert r.read_from("a", "t0") == Read("local", "t0")
    assert r.read_from("a", "r1") == Read("remote", "t0")
    assert r.lose("t1") == ["a", "b"]
    assert r.holders == {"a": ["t0"], "b": [], "c": ["r0"]}
    assert r.read_from("b", "t1") == Read("source", SOURCE)
    assert r.lose("t0") == ["a"]
    assert r.read_from("a", "t0") == Read("source", SOURCE)


def test_held_bytes_make_quincys_preference_arcs() -> None:
    """4 GB of splits: t0 holds 3 GB, r0 1 GB + 0.3 GB, t1 0.3 GB (under 10%, no arc)."""
    r = Replicas({"big": ["t0", "r0"], "small": ["t1", "r0"], "mid": ["t0"]})
    sizes = {"big": 1 * GB, "small": 3 * GB // 10, "mid": 2 * GB, "src": 7 * GB // 10}
    assert r.held(sizes) == {"r0": 13 * GB // 10, "t0": 3 * GB, "t1": 3 * GB // 10}
    assert r.held({}) == {}
    racks: dict[str, Rack] = {"r0": ("reserved", None), "t0": ("transient", None), "t1": ("transient", None)}
    found = TaskInput(sum(sizes.values()), r.held(sizes))
    task = PendingTask("j0/t0", "j0", 0, 0, 100, 10.0)
    arcs = QuincyCostModel(inputs=lambda t: found).preferences(task, racks).machines
    assert set(arcs) == {"r0", "t0"}
    assert arcs["t0"] < arcs["r0"]
