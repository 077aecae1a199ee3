"""Pado's runtime rules (``master.recovery.pado_rules``): the commit ledger (exactly-once
commits under evictions and interleavings), the executor choice over the input cache, and
the partial-aggregation flush rule. The compiler (Algorithms 1 and 2) is tested in
``test_pado.py``; the strategy's ordering through the core in ``tests/core/test_pado_order.py``.
"""

from __future__ import annotations

import random

import pytest

from master.recovery.pado_rules import (
    AggregationLimits,
    CommitLedger,
    Executor,
    Push,
    choose_executor,
    should_flush,
)
from testbed.node.lru import LruCache

# ---------------------------------------------------------------- runtime: exactly-once commits


def test_eviction_in_the_middle_of_a_push_is_committed_exactly_once() -> None:
    """Section 3.2.5: "task outputs can be partially pushed to only some of the reserved
    executors [...] Only after receiving the commit messages, the tasks on the
    reserved executors can process the outputs. This ensures that the outputs are
    processed exactly once." """
    ledger = CommitLedger()
    manifest = {"reduce-0": (100, "c0"), "reduce-1": (80, "c1")}
    first, second = Push.of("map-3", 0), Push.of("map-3", 1)
    ledger.receive(first.push_id, "reduce-0", (100, "c0"))  # evicted before reduce-1
    assert ledger.commit(first, manifest) == "incomplete"
    ledger.discard(first.push_id)

    ledger.receive(second.push_id, "reduce-0", (100, "c0"))
    ledger.receive(second.push_id, "reduce-1", (80, "c1"))
    assert ledger.commit(second, manifest) == "accepted"
    assert ledger.commit(second, manifest) == "duplicate"  # QoS 1 redelivery
    ledger.receive(first.push_id, "reduce-1", (80, "c1"))  # a late block of the dead attempt
    assert ledger.commit(first, manifest) == "superseded"
    assert ledger.is_committed("map-3")
    assert ledger.inputs_for("reduce-0") == ledger.inputs_for("reduce-1") == {"map-3": 1}
    assert ledger.pushes_for("reduce-1") == {"map-3#1"}


def test_a_late_commit_from_an_evicted_attempt_is_refused() -> None:
    """The master serialises commits and evictions: once it has discarded the evicted
    attempt's blocks, that attempt's commit cannot be accepted any more."""
    ledger = CommitLedger()
    push = Push.of("map-0", 0)
    ledger.receive(push.push_id, "reduce-0", (5, "x"))
    ledger.discard(push.push_id)
    assert ledger.commit(push, {"reduce-0": (5, "x")}) == "incomplete"
    assert not ledger.is_committed("map-0")


def test_a_block_that_arrived_altered_is_not_committed() -> None:
    ledger = CommitLedger()
    push = Push.of("map-0", 0)
    ledger.receive(push.push_id, "reduce-0", (100, "bad"))
    assert ledger.commit(push, {"reduce-0": (100, "good")}) == "incomplete"
    assert not ledger.is_committed("map-0")
    assert ledger.inputs_for("reduce-0") == {}


def test_an_output_with_nothing_to_push_commits_at_once() -> None:
    ledger = CommitLedger()
    assert ledger.commit(Push.of("map-0", 0), {}) == "accepted"
    assert ledger.is_committed("map-0")
    assert ledger.commit(Push.of("map-0", 1), {}) == "superseded"


def test_a_partial_aggregate_commits_all_its_tasks_at_once() -> None:
    """Section 3.2.7: outputs of tasks on the same transient executor are partially
    aggregated before being pushed. The aggregate commits its tasks together; one
    that overlaps a task already delivered is refused whole."""
    ledger = CommitLedger()
    manifest = {"sum-0": (8, "s")}
    aggregate = Push("t1/agg-0", (("grad-0", 0), ("grad-1", 0), ("grad-2", 0)))
    ledger.receive(aggregate.push_id, "sum-0", (8, "s"))
    assert ledger.commit(aggregate, manifest) == "accepted"
    assert ledger.inputs_for("sum-0") == {"grad-0": 0, "grad-1": 0, "grad-2": 0}
    assert ledger.pushes_for("sum-0") == {"t1/agg-0"}

    overlapping = Push("t2/agg-0", (("grad-2", 1), ("grad-3", 0)))
    ledger.receive(overlapping.push_id, "sum-0", (8, "o"))
    assert ledger.commit(overlapping, {"sum-0": (8, "o")}) == "superseded"
    assert not ledger.is_committed("grad-3")  # the shell relaunches it alone


def test_an_aggregate_that_reached_a_destination_only_in_part_is_refused() -> None:
    """After a reserved failure, a task may have reached one destination but not the
    other; an aggregate mixing it with a fresh task cannot be split, so it is
    refused rather than delivering the fresh task to only one destination."""
    ledger = CommitLedger()
    manifest = {"d0": (1, "x"), "d1": (1, "y")}
    first = Push("agg-a", (("g0", 0), ("g1", 0)))
    for dest, block in manifest.items():
        ledger.receive(first.push_id, dest, block)
    assert ledger.commit(first, manifest) == "accepted"
    ledger.forget_destination("d1")
    mixed = Push("agg-b", (("g1", 1), ("g2", 0)))
    for dest, block in manifest.items():
        ledger.receive(mixed.push_id, dest, block)
    assert ledger.commit(mixed, manifest) == "superseded"
    assert not ledger.is_committed("g2")
    assert ledger.inputs_for("d0") == {"g0": 0, "g1": 0}


def test_a_failed_reserved_destination_is_refilled_once_by_the_reruns() -> None:
    """Section 3.2.6: a reserved executor failure loses what it held. The tasks that
    had committed to it run again; their new commits fill only that destination,
    and the surviving one keeps processing each task's first output once."""
    ledger = CommitLedger()
    manifest = {"reduce-0": (10, "a"), "reduce-1": (20, "b")}
    first, rerun = Push.of("map-0", 0), Push.of("map-0", 1)
    for dest, block in manifest.items():
        ledger.receive(first.push_id, dest, block)
    assert ledger.commit(first, manifest) == "accepted"

    assert ledger.forget_destination("reduce-1") == {"map-0"}
    assert not ledger.is_committed("map-0")
    ledger.receive(rerun.push_id, "reduce-0", (10, "a"))
    assert ledger.commit(rerun, manifest) == "incomplete"  # reduce-1 has not got it yet
    ledger.receive(rerun.push_id, "reduce-1", (20, "b"))
    assert ledger.commit(rerun, manifest) == "accepted"
    assert ledger.inputs_for("reduce-0") == {"map-0": 0}
    assert ledger.inputs_for("reduce-1") == {"map-0": 1}
    assert ledger.commit(first, manifest) == "duplicate"


@pytest.mark.parametrize("seed", range(20))
def test_commits_are_exactly_once_under_any_interleaving(seed: int) -> None:
    """Random interleavings of pushes (single tasks and aggregates), evictions
    (discard), reserved failures (forget) and commits. A destination holds at most
    one push per task; what it holds never changes until it is forgotten; and an
    accepted push had delivered, intact, every block it newly committed."""
    rng = random.Random(seed)
    destinations = ["r0", "r1", "r2"]
    tasks = ["m0", "m1", "m2", "m3"]
    pushes = [Push.of(t, a) for t in tasks for a in range(2)] + [
        Push(f"agg{k}", tuple((t, 2) for t in rng.sample(tasks, 2))) for k in range(3)
    ]
    blocks = {p.push_id: {d: (i, f"{p.push_id}@{d}") for i, d in enumerate(destinations)} for p in pushes}
    ledger = CommitLedger()
    delivered: dict[str, set[str]] = {}
    accepted = 0
    for _ in range(300):
        push = rng.choice(pushes)
        action = rng.choice(["push", "push", "push", "discard", "commit", "commit", "forget"])
        before = {d: ledger.inputs_for(d) for d in destinations}
        if action == "push":
            dest = rng.choice(destinations)
            ledger.receive(push.push_id, dest, blocks[push.push_id][dest])
            delivered.setdefault(push.push_id, set()).add(dest)
        elif action == "discard":
            ledger.discard(push.push_id)
            delivered.pop(push.push_id, None)
        elif action == "forget":
            dest = rng.choice(destinations)
            ledger.forget_destination(dest)
            before[dest] = {}
            assert ledger.inputs_for(dest) == {}
        elif ledger.commit(push, blocks[push.push_id]) == "accepted":
            accepted += 1
            for dest in destinations:
                if not any(task in before[dest] for task, _ in push.members):
                    assert dest in delivered.get(push.push_id, set())
                    assert push.push_id in ledger.pushes_for(dest)
            assert all(ledger.is_committed(task) for task, _ in push.members)
            delivered.pop(push.push_id, None)
        for dest in destinations:
            after = ledger.inputs_for(dest)
            assert {t: a for t, a in after.items() if t in before[dest]} == before[dest]
            assert all(t in after for t in tasks if ledger.is_committed(t))
    assert accepted > 0


# ---------------------------------------------------------------- runtime: input cache


def test_lru_cache_hits_refresh_and_misses_evict_the_least_recent() -> None:
    cache = LruCache(capacity_bytes=100)
    cache, hit = cache.access("model-1", 40)
    assert not hit
    cache, _ = cache.access("part-0", 40)
    cache, hit = cache.access("model-1", 40)
    assert hit
    cache, hit = cache.access("part-1", 50)  # evicts part-0, the least recently used
    assert not hit
    assert [k for k, _ in cache.entries] == ["model-1", "part-1"]
    assert cache.used_bytes == 90
    assert "part-0" not in cache


def test_lru_cache_does_not_keep_an_input_larger_than_itself() -> None:
    cache, _ = LruCache(capacity_bytes=100).access("small", 10)
    after, hit = cache.access("huge", 500)
    assert not hit
    assert after == cache


def test_cache_aware_choice_prefers_the_executor_holding_the_input() -> None:
    """Section 3.2.3: "The policy first tries to pick an executor with the input data of
    the task cached"."""
    executors = [Executor("t1", 2), Executor("t2", 2), Executor("t3", 2)]
    caches = {
        "t2": LruCache(100, (("model-1", 30),)),
        "t3": LruCache(100, (("model-1", 30), ("part-7", 50))),
    }
    assert choose_executor(["model-1", "part-7"], executors, caches, cursor=0) == ("t3", 3)
    assert choose_executor(["model-1"], executors, caches, cursor=0) == ("t2", 2)
    assert choose_executor(["model-1"], executors, caches, cursor=2) == ("t3", 3)


def test_without_cached_input_the_choice_is_round_robin_over_free_executors() -> None:
    """Section 3.2.3: "If not applicable, it picks an available executor in a round-robin
    manner, and waits until a task slot becomes available if none of the executors
    are available." """
    executors = [Executor("t1", 1), Executor("t2", 0), Executor("t3", 1)]
    node, cursor = choose_executor(["x"], executors, {}, cursor=0)
    assert (node, cursor) == ("t1", 1)
    node, cursor = choose_executor(["x"], executors, {}, cursor)
    assert (node, cursor) == ("t3", 3)
    node, cursor = choose_executor(["x"], executors, {}, cursor)
    assert (node, cursor) == ("t1", 1)
    busy_but_cached = {"t2": LruCache(100, (("x", 10),))}
    assert choose_executor(["x"], executors, busy_but_cached, 1) == ("t3", 3)
    assert choose_executor(["x"], [Executor("t1", 0)], {}, 5) == (None, 5)
    assert choose_executor(["x"], [], {}, 0) == (None, 0)


# ---------------------------------------------------------------- runtime: partial aggregation


@pytest.mark.parametrize(
    ("held_for_s", "tasks", "more_coming", "flush"),
    [
        (0.0, 0, True, False),  # nothing held
        (0.0, 0, False, False),
        (1.0, 2, True, False),  # under both caps: keep aggregating
        (5.0, 2, True, True),  # time cap reached
        (1.0, 4, True, True),  # task cap reached
        (0.1, 1, False, True),  # no further task will come: send now
    ],
)
def test_partial_aggregate_flushes_at_the_time_or_task_cap(
    held_for_s: float, tasks: int, more_coming: bool, flush: bool
) -> None:
    limits = AggregationLimits(max_delay_s=5.0, max_tasks=4)
    assert should_flush(limits, held_for_s, tasks, more_coming) is flush


def test_aggregation_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="max_tasks >= 1"):
        AggregationLimits(max_delay_s=1.0, max_tasks=0)
