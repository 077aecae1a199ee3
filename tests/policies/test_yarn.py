"""``scheduler: yarn``: fair/FIFO order, full-memory placement, node reservation."""

from __future__ import annotations

import pytest

from master.schedulers.yarn import Ordering, YarnScheduler, round_up
from testbed.api.policy import (
    Assign,
    LogDecision,
    Reserve,
)
from testbed.workloads.task_model import TaskModel
from tests.support.policies import assigned, busy, job, labels, node, reservations, snap, tasks

# ---------------------------------------------------------------- memory increments


def test_round_up_to_the_increment() -> None:
    assert round_up(1_050, 100) == 1_100
    assert round_up(1_000, 100) == 1_000
    assert round_up(0.1 * 3_000, 100) == 300  # 300.00000000000006 is still 300
    assert round_up(1_050, 512) == 1_536
    assert round_up(0, 100) == 100


def test_a_task_needs_its_ideal_memory_rounded_up_to_the_increment() -> None:
    pending = tasks("a", 1, 1_050)
    tight = node(running=(busy("x", 8_920, 50.0),))  # 1,080 MB free < 1,100
    decisions = YarnScheduler().schedule(snap([tight], [job("a", pending)]))
    assert assigned(decisions) == []
    assert reservations(decisions) == [("n1", "a")]

    roomy = node(running=(busy("x", 8_900, 50.0),))  # 1,100 MB free
    decisions = YarnScheduler().schedule(snap([roomy], [job("a", pending)]))
    assert assigned(decisions) == [("a/t0", "n1", 1_100)]

    coarse = snap([node()], [job("a", pending)], increment=512)
    assert assigned(YarnScheduler().schedule(coarse)) == [("a/t0", "n1", 1_536)]


def test_a_task_needs_a_free_core() -> None:
    full = node(slots=1, running=(busy("x", 100, 50.0),))
    decisions = YarnScheduler().schedule(snap([full], [job("a", tasks("a", 1, 1_000))]))
    assert decisions == []


def test_fills_nodes_in_heartbeat_order_and_logs_regular_allocations() -> None:
    nodes = [node("n2", slots=2), node("n1", slots=2)]
    decisions = YarnScheduler().schedule(snap(nodes, [job("a", tasks("a", 3, 1_000))]))
    assert [(t, n) for t, n, _ in assigned(decisions)] == [
        ("a/t0", "n2"),
        ("a/t1", "n2"),
        ("a/t2", "n1"),
    ]
    assert labels(decisions) == [("a/t0", "regular"), ("a/t1", "regular"), ("a/t2", "regular")]
    log = next(d for d in decisions if isinstance(d, LogDecision))
    assert log.detail["allocation_ratio"] == 1.0


def test_models_override_the_tasks_own_memory_and_duration() -> None:
    pending = tasks("a", 1, 500, duration=1.0)
    scheduler = YarnScheduler(models={("a", 0): TaskModel(2_000, 42.0)})
    decisions = scheduler.schedule(snap([node()], [job("a", pending)]))
    assign = next(d for d in decisions if isinstance(d, Assign))
    assert (assign.memory_mb, assign.predicted_duration_s, assign.elastic) == (2_000, 42.0, False)


def test_draining_nodes_and_disallowed_classes_get_nothing() -> None:
    nodes = [node("drain", draining=True), node("t1", node_class="transient"), node("r1")]
    pending = tasks("a", 1, 1_000, allowed_classes=frozenset({"reserved"}))
    decisions = YarnScheduler().schedule(snap(nodes, [job("a", pending)]))
    assert assigned(decisions) == [("a/t0", "r1", 1_000)]


# ---------------------------------------------------------------- ordering


def _one_free_core_two_jobs(ordering: Ordering, **b_kw) -> list[tuple[str, str, int]]:
    one_core = node(slots=3, running=(busy("x", 100, 50.0), busy("y", 100, 60.0)))
    jobs = [
        job("a", tasks("a", 1, 1_000), submitted=0.0, running=2),
        job("b", tasks("b", 1, 1_000), submitted=5.0, **b_kw),
    ]
    return assigned(YarnScheduler(ordering).schedule(snap([one_core], jobs)))


def test_fair_share_serves_the_job_with_fewest_running_tasks_first() -> None:
    assert _one_free_core_two_jobs("fair") == [("b/t0", "n1", 1_000)]


def test_fair_share_counts_running_tasks_relative_to_weight() -> None:
    # a: 2 running / weight 1 = 2; b: 3 running / weight 1 = 3 -> a first
    assert _one_free_core_two_jobs("fair", running=3) == [("a/t0", "n1", 1_000)]
    # b: 3 running / weight 6 = 0.5 -> b first
    assert _one_free_core_two_jobs("fair", running=3, weight=6.0) == [("b/t0", "n1", 1_000)]


def test_fifo_serves_jobs_in_submission_order() -> None:
    assert _one_free_core_two_jobs("fifo") == [("a/t0", "n1", 1_000)]


def test_fair_share_alternates_as_tasks_start() -> None:
    jobs = [job("a", tasks("a", 3, 1_000)), job("b", tasks("b", 3, 1_000), submitted=1.0)]
    decisions = YarnScheduler().schedule(snap([node(slots=4)], jobs))
    assert [t for t, _, _ in assigned(decisions)] == ["a/t0", "b/t0", "a/t1", "b/t1"]


# ---------------------------------------------------------------- reservations


def test_a_node_too_full_for_the_head_job_is_reserved_for_it() -> None:
    n1 = node(running=(busy("x", 8_000, 50.0),))  # 2,000 MB free
    jobs = [job("big", tasks("big", 1, 3_000)), job("small", tasks("small", 1, 500), running=1)]
    decisions = YarnScheduler().schedule(snap([n1], jobs))
    # "small" would fit, but the node is reserved for the head of the queue
    assert assigned(decisions) == []
    assert reservations(decisions) == [("n1", "big")]
    assert labels(decisions) == [("big/t0", "reserved")]


def test_a_reserved_node_takes_only_the_reserving_jobs_tasks() -> None:
    n1 = node(running=(busy("x", 8_000, 50.0),), reserved_for="big")
    jobs = [job("big", tasks("big", 1, 3_000), running=5), job("small", tasks("small", 1, 500))]
    decisions = YarnScheduler().schedule(snap([n1], jobs))
    assert decisions == []  # "small" heads the queue and fits, but the node is big's


def test_a_reservation_is_lifted_when_the_reserving_job_is_placed_there() -> None:
    n1 = node(running=(busy("x", 6_000, 50.0),), reserved_for="big")  # 4,000 free
    jobs = [job("big", tasks("big", 1, 3_000), running=5), job("small", tasks("small", 1, 500))]
    decisions = YarnScheduler().schedule(snap([n1], jobs))
    assert decisions[:1] == [Assign("big/t0", "n1", 3_000, False, 10.0)]
    assert reservations(decisions) == [("n1", None)]
    # once lifted, the rest of the node is open to the queue again
    assert assigned(decisions)[1:] == [("small/t0", "n1", 500)]


def test_a_reservation_is_lifted_when_the_job_has_nothing_left_to_run() -> None:
    n1 = node(reserved_for="gone")
    decisions = YarnScheduler().schedule(snap([n1], [job("small", tasks("small", 1, 500))]))
    assert reservations(decisions) == [("n1", None)]
    assert assigned(decisions) == [("small/t0", "n1", 500)]


def test_a_full_reserved_node_still_loses_a_stale_reservation() -> None:
    full = node(slots=1, running=(busy("x", 100, 50.0),), reserved_for="gone")
    assert YarnScheduler().schedule(snap([full], [])) == [Reserve("n1", None)]


def test_no_reservation_for_a_task_larger_than_the_whole_node() -> None:
    small_node = node(memory=2_000)
    jobs = [job("huge", tasks("huge", 1, 3_000)), job("b", tasks("b", 1, 500), running=1)]
    decisions = YarnScheduler().schedule(snap([small_node], jobs))
    assert reservations(decisions) == []
    assert assigned(decisions) == [("b/t0", "n1", 500)]


def test_schedule_is_a_pure_function_of_the_snapshot() -> None:
    n1 = node(running=(busy("x", 8_000, 50.0),))
    state = snap([n1, node("n2", slots=1)], [job("a", tasks("a", 3, 1_500))])
    scheduler = YarnScheduler()
    assert scheduler.schedule(state) == scheduler.schedule(state)


def test_built_from_scenario_options_which_are_checked() -> None:
    assert YarnScheduler.from_options({"ordering": "fifo"}).ordering == "fifo"
    with pytest.raises(ValueError, match="odering\n  Extra inputs are not permitted"):
        YarnScheduler.from_options({"odering": "fifo"})
    with pytest.raises(ValueError, match="ordering"):
        YarnScheduler.from_options({"ordering": "drf"})
