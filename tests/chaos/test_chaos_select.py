"""Victim selection for eviction storms."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from master.chaos.select import select_victims, victim_count
from testbed.api.policy import NodeView, RunningTask
from testbed.scenario.chaos import EvictSpec


def node(node_id: str, node_class: str = "transient", launched: float = 0.0, tasks: int = 0):
    running = tuple(RunningTask(f"{node_id}-t{i}", "job", 64, 0.0, 1.0) for i in range(tasks))
    return NodeView(node_id, node_class, 4, 1024, running=running, launched=launched)  # type: ignore[arg-type]


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


CLUSTER = [
    node("reserved-0", "reserved", launched=0.0, tasks=4),
    node("transient-0", launched=10.0, tasks=1),
    node("transient-1", launched=40.0, tasks=3),
    node("transient-2", launched=20.0, tasks=0),
    node("transient-10", launched=30.0, tasks=2),
]


@pytest.mark.parametrize(
    ("evict", "candidates", "expected"),
    [
        (EvictSpec(count=2), 5, 2),
        (EvictSpec(count=9), 5, 5),
        (EvictSpec(fraction=0.5), 3, 2),  # 1.5 rounds half up
        (EvictSpec(fraction=0.5), 5, 3),
        (EvictSpec(fraction=0.25), 10, 3),  # 2.5 rounds half up
        (EvictSpec(fraction=0.2), 10, 2),
        (EvictSpec(fraction=0.35), 10, 4),  # 3.5 despite 0.35 * 10 = 3.4999...
        (EvictSpec(fraction=0.01), 3, 1),  # at least one
        (EvictSpec(fraction=1.0), 7, 7),
        (EvictSpec(fraction=0.5), 0, 0),
        (EvictSpec(count=1), 0, 0),
    ],
)
def test_victim_count(evict, candidates, expected):
    assert victim_count(evict, candidates) == expected


@pytest.mark.parametrize(
    ("select", "expected"),
    [
        ("oldest", ["transient-0", "transient-2", "transient-10"]),
        ("youngest", ["transient-1", "transient-10", "transient-2"]),
        ("busiest", ["transient-1", "transient-10", "transient-0"]),
    ],
)
def test_ranked_strategies_pick_in_order(select, expected):
    evict = EvictSpec(count=3, select=select)
    assert select_victims(CLUSTER, evict, rng()) == expected


def test_most_data_uses_stored_bytes_and_missing_nodes_count_as_empty():
    stored = {"transient-2": 5_000, "transient-10": 9_000, "reserved-0": 10**9}
    evict = EvictSpec(count=2, select="most-data")
    assert select_victims(CLUSTER, evict, rng(), stored) == ["transient-10", "transient-2"]


def test_kind_filters_the_class():
    reserved = EvictSpec(count=5, kind="reserved", select="busiest")
    assert select_victims(CLUSTER, reserved, rng()) == ["reserved-0"]
    everything = EvictSpec(fraction=1.0, kind="any", select="busiest")
    assert select_victims(CLUSTER, everything, rng())[0] == "reserved-0"
    assert len(select_victims(CLUSTER, everything, rng())) == 5


def test_fraction_applies_to_the_matching_class_only():
    assert len(select_victims(CLUSTER, EvictSpec(fraction=0.5), rng())) == 2  # of 4 transient


def test_no_candidates_means_no_victims():
    assert select_victims([], EvictSpec(count=3), rng()) == []
    assert select_victims(CLUSTER[:1], EvictSpec(count=1), rng()) == []


def test_same_seed_same_victims_whatever_the_input_order():
    evict = EvictSpec(count=2)
    shuffled = [CLUSTER[i] for i in (4, 2, 0, 3, 1)]
    for seed in range(20):
        assert select_victims(CLUSTER, evict, rng(seed)) == select_victims(shuffled, evict, rng(seed))


def test_random_selection_is_uniform_over_nodes():
    picks = Counter(select_victims(CLUSTER, EvictSpec(count=1), rng(seed))[0] for seed in range(2000))
    assert set(picks) == {"transient-0", "transient-1", "transient-2", "transient-10"}
    assert all(450 <= count <= 550 for count in picks.values())


def test_ties_are_broken_at_random_not_by_name():
    same_age = [node(f"transient-{i}", launched=5.0) for i in range(4)]
    firsts = {select_victims(same_age, EvictSpec(count=1, select="oldest"), rng(s))[0] for s in range(50)}
    assert len(firsts) == 4
