"""The core's input replicas on hand-built states: placement, loss on eviction, reads, preferences."""

import pytest

from master.core.replicas import SOURCE, Read, Replicas, place

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


def test_preferences_keep_nodes_holding_at_least_a_tenth_of_the_bytes() -> None:
    r = Replicas({"big": ["t0", "r0"], "small": ["t1"], "mid": ["r0"]})
    sizes = {"big": 900, "small": 50, "mid": 100}
    # of 1050 bytes: t0 900, r0 1000, t1 50 (< 105)
    assert r.preferences(sizes) == {"r0": 1000, "t0": 900}
    assert r.preferences(sizes, threshold=0.01) == {"r0": 1000, "t0": 900, "t1": 50}
    assert r.preferences({}) == {}
