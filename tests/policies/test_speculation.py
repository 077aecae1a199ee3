"""The speculators' rules on hand-built snapshots (wall seconds, no clock, no core)."""

from __future__ import annotations

import pytest

from master.policy_setup import make_speculator
from master.speculation.rules import HadoopSpeculator, LateSpeculator, SparkSpeculator, percentile
from testbed.api.speculation import AttemptView, SpeculationNode, SpeculationSnapshot, TaskGroup
from testbed.scenario.loading import ScenarioError
from tests.support.scenarios import make_scenario


def attempt(index: int, node: str, started: float, score: float, rate: float, **extra) -> AttemptView:
    fields = {"job_id": "j0", "stage": 0, "attempt": 0, "memory_mb": 100, **extra}
    return AttemptView(f"j0.s0.t{index}", index=index, node_id=node, started=started, score=score,
                       rate=rate, **fields)  # fmt: skip


def node(node_id: str, free: int = 0, slots: int = 2, **extra) -> SpeculationNode:
    return SpeculationNode(node_id, "transient", slots, free, 1000 * free, **extra)


def snapshot(now, attempts, tasks=None, finished=(), pending=0, nodes=None) -> SpeculationSnapshot:
    tasks = tasks if tasks is not None else len(attempts) + len(finished)
    group = TaskGroup("j0", 0, tasks, pending, tuple(finished))
    nodes = nodes if nodes is not None else (node("busy"), node("free-a", free=1), node("free-b", free=1))
    return SpeculationSnapshot(now, tuple(attempts), (group,), tuple(nodes))


# ------------------------------------------------------------------ hadoop 0.20


def test_hadoop_copies_a_task_below_the_average_minus_the_gap_after_60_s():
    # scores 0.9, 0.9, 0.3: the average is 0.7, so 0.3 < 0.5 is a straggler, 0.9 is not
    running = [
        attempt(0, "busy", 0, 0.9, 0.01),
        attempt(1, "busy", 0, 0.9, 0.01),
        attempt(2, "busy", 0, 0.3, 0.003),
    ]
    decisions = HadoopSpeculator().speculate(snapshot(61.0, running))
    assert [(d.task_id, d.node_id) for d in decisions] == [("j0.s0.t2", "free-a")]


def test_hadoop_waits_60_s_for_pending_tasks_and_the_gap():
    running = [
        attempt(0, "busy", 0, 0.9, 0.01),
        attempt(1, "busy", 0, 0.9, 0.01),
        attempt(2, "busy", 0, 0.3, 0.003),
    ]
    assert HadoopSpeculator().speculate(snapshot(59.0, running)) == []  # not yet 60 s
    assert HadoopSpeculator().speculate(snapshot(61.0, running, tasks=4, pending=1)) == []  # a task waits
    close = [attempt(0, "busy", 0, 0.6, 0.01), attempt(1, "busy", 0, 0.45, 0.01)]
    assert HadoopSpeculator().speculate(snapshot(61.0, close)) == []  # 0.45 >= 0.525 - 0.2


def test_hadoop_counts_finished_tasks_as_progress_one():
    # one task running at 0.7, three finished: average (3 + 0.7) / 4 = 0.925 > 0.7 + 0.2
    decisions = HadoopSpeculator().speculate(
        snapshot(100.0, [attempt(3, "busy", 0, 0.7, 0.007)], finished=(50, 50, 50))
    )
    assert [d.task_id for d in decisions] == ["j0.s0.t3"]


def test_no_rule_copies_a_task_twice_nor_on_its_own_node():
    copied = [
        attempt(0, "busy", 0, 0.9, 0.01, copies=2),
        attempt(0, "free-a", 50, 0.1, 0.01, copies=2, speculative=True),
        attempt(1, "busy", 0, 0.9, 0.01),
        attempt(2, "busy", 0, 0.9, 0.01),
    ]
    for rule in (HadoopSpeculator(), LateSpeculator(), SparkSpeculator()):
        assert all(
            d.task_id != "j0.s0.t0" for d in rule.speculate(snapshot(1000.0, copied, finished=(1,) * 20))
        )
    alone = [attempt(0, "busy", 0, 0.9, 0.01), attempt(1, "free-a", 0, 0.1, 0.001)]
    decisions = HadoopSpeculator().speculate(
        snapshot(100.0, alone, nodes=(node("busy"), node("free-a", free=1)))
    )
    assert decisions == []  # its only free node is its own


# ------------------------------------------------------------------ LATE


def late_cluster(rates: dict[str, float]) -> list[AttemptView]:
    """One attempt per node, started at 0, each at its rate (score = rate x 100 s)."""
    return [attempt(i, name, 0, min(0.99, rate * 100), rate) for i, (name, rate) in enumerate(rates.items())]


def test_late_copies_the_longest_time_left_below_the_slow_task_threshold():
    rates = {
        "n0": 0.009,
        "n1": 0.009,
        "n2": 0.009,
        "n3": 0.009,
        "n4": 0.002,
        "n5": 0.004,
        "n6": 0.009,
        "n7": 0.009,
    }
    nodes = [node(n, free=0) for n in rates] + [node("idle", free=1)]
    decisions = LateSpeculator().speculate(snapshot(100.0, late_cluster(rates), nodes=nodes))
    # the 25th percentile of the rates is 0.00775: n4 (400 s left) and n5 (150 s) qualify, n4 first
    assert [(d.task_id, d.node_id) for d in decisions] == [("j0.s0.t4", "idle")]


def test_late_time_left_is_one_minus_score_over_rate():
    assert attempt(0, "n", 0, 0.2, 0.004).time_left() == pytest.approx(200.0)
    assert attempt(0, "n", 0, 0.0, 0.0).time_left() == float("inf")


def test_late_speculative_cap_is_ten_percent_of_the_slots():
    rates = {f"s{i}": 0.001 + 0.0001 * i for i in range(8)} | {f"f{i}": 0.009 for i in range(24)}
    nodes = [node(n, free=0, slots=1) for n in rates] + [node(f"idle{i}", free=1, slots=1) for i in range(8)]
    snap = snapshot(100.0, late_cluster(rates), nodes=nodes)  # 40 slots: cap 4, 8 stragglers
    assert len(LateSpeculator().speculate(snap)) == 4
    assert len(LateSpeculator(cap=1.0).speculate(snap)) == 8
    copy = attempt(99, "idle0", 50, 0.1, 0.002, speculative=True, copies=2)
    nodes[len(rates)] = node("idle0", free=0, slots=1)
    assert len(LateSpeculator().speculate(snapshot(100.0, [*late_cluster(rates), copy], nodes=nodes))) == 3


def test_late_never_copies_before_60_s_nor_onto_a_slow_node():
    rates = {"n0": 0.009, "n1": 0.009, "n2": 0.009, "n3": 0.009, "n4": 0.002, "slow": 0.001}
    busy = [node(n, free=0) for n in rates if n != "slow"]
    only_slow = snapshot(100.0, late_cluster(rates), nodes=[*busy, node("slow", free=1)])
    # speeds' 25th percentile is 0.00375: n4 and the node "slow" are slow nodes
    assert LateSpeculator().slow_nodes(only_slow) == {"n4", "slow"}
    assert LateSpeculator().speculate(only_slow) == []  # the only free slot is on a slow node
    with_idle = [*busy, node("slow", free=1), node("idle", free=1)]
    assert LateSpeculator().speculate(snapshot(59.0, late_cluster(rates), nodes=with_idle)) == []
    decisions = LateSpeculator().speculate(snapshot(100.0, late_cluster(rates), nodes=with_idle))
    assert [(d.task_id, d.node_id) for d in decisions] == [("j0.s0.t5", "idle")]  # "slow"'s own task


def test_late_a_node_known_slow_stays_slow_while_it_runs_nothing():
    rates = {"n0": 0.009, "n1": 0.009, "n2": 0.009, "n3": 0.009, "n4": 0.002}
    known_slow = node("slow", free=2, finished_tasks=2, finished_rate=0.001)  # its 2 tasks took 1000 s
    fresh = node("fresh", free=2)  # no history: not judged
    snap = snapshot(100.0, late_cluster(rates), nodes=[*(node(n) for n in rates), known_slow, fresh])
    # speeds 0.001 (slow, idle), 0.002 (n4), 0.009 x 4: the 25th percentile is 0.00375
    assert LateSpeculator().slow_nodes(snap) == {"slow", "n4"}
    decisions = LateSpeculator().speculate(snap)
    assert [(d.task_id, d.node_id) for d in decisions] == [("j0.s0.t4", "fresh")]


def test_late_node_speed_is_the_mean_rate_of_its_finished_and_running_attempts():
    rates = {"n0": 0.009, "n1": 0.009, "n2": 0.009, "mixed": 0.001}
    # "mixed" finished 3 tasks at rate 0.02 and runs one at 0.001: speed (0.06 + 0.001) / 4, the fastest
    nodes = [*(node(n) for n in rates if n != "mixed"), node("mixed", finished_tasks=3, finished_rate=0.02)]
    assert LateSpeculator().slow_nodes(snapshot(100.0, late_cluster(rates), nodes=nodes)) == set()
    nodes[-1] = node("mixed")  # without its history, its one slow task makes it slow
    assert LateSpeculator().slow_nodes(snapshot(100.0, late_cluster(rates), nodes=nodes)) == {"mixed"}


def test_late_counts_finished_tasks_rates_so_a_lone_straggler_is_slow():
    alone = [attempt(4, "busy", 0, 0.1, 0.001)]  # 4 finished in 100 s each: rate 0.01
    snap = snapshot(100.0, alone, finished=(100.0,) * 4)
    assert [d.task_id for d in LateSpeculator().speculate(snap)] == ["j0.s0.t4"]
    assert LateSpeculator().speculate(snapshot(100.0, alone)) == []  # alone, with nothing to compare


def test_late_copies_nothing_when_every_rate_is_equal():
    rates = {f"n{i}": 0.005 for i in range(4)}
    nodes = [node(n, free=0) for n in rates] + [node("idle", free=1)]
    assert LateSpeculator().speculate(snapshot(100.0, late_cluster(rates), nodes=nodes)) == []


def test_percentile_interpolates_as_numpy():
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.25) == 2.0
    assert percentile([1.0, 2.0], 0.25) == pytest.approx(1.25)


# ------------------------------------------------------------------ spark


def test_spark_copies_past_multiplier_times_the_median_once_the_quantile_finished():
    finished = (10.0,) * 9  # 9 of 10 done (quantile 0.9), median 10 s: threshold 30 s
    late = [attempt(9, "busy", 0, 0.5, 0.01)]
    assert SparkSpeculator().speculate(snapshot(29.0, late, finished=finished)) == []
    assert [d.task_id for d in SparkSpeculator().speculate(snapshot(31.0, late, finished=finished))] == [
        "j0.s0.t9"
    ]
    assert SparkSpeculator(multiplier=1.5).speculate(snapshot(16.0, late, finished=finished))  # Spark < 3.0


def test_spark_waits_for_the_quantile():
    finished = (10.0,) * 8  # 8 of 10: below 0.9
    running = [attempt(8, "busy", 0, 0.5, 0.01), attempt(9, "busy", 0, 0.5, 0.01)]
    assert SparkSpeculator().speculate(snapshot(1000.0, running, finished=finished)) == []


def test_spark_decommission_rule_copies_a_task_that_would_not_finish_before_the_kill():
    nodes = (node("doomed", kill_at=120.0), node("free-a", free=1), node("free-b", free=1))
    slow = attempt(0, "doomed", 0, 0.5, 0.005)  # 100 s left at 100 s: ends at 200 > 120
    quick = attempt(1, "doomed", 0, 0.95, 0.0095)  # ~5 s left: ends before the kill
    decisions = SparkSpeculator().speculate(snapshot(100.0, [slow, quick], tasks=10, nodes=nodes))
    assert [(d.task_id, d.node_id) for d in decisions] == [("j0.s0.t0", "free-a")]
    assert (
        SparkSpeculator(decommission=False).speculate(snapshot(100.0, [slow, quick], tasks=10, nodes=nodes))
        == []
    )


def test_spark_decommission_never_copies_onto_a_node_under_notice():
    nodes = (node("doomed", kill_at=120.0), node("doomed-too", free=1, kill_at=130.0))
    assert (
        SparkSpeculator().speculate(snapshot(100.0, [attempt(0, "doomed", 0, 0.1, 0.001)], nodes=nodes)) == []
    )


# ------------------------------------------------------------------ options


def test_options_are_trace_time_and_checked():
    def built(speculation: str, options: dict, time_scale: float = 1.0):  # type: ignore[no-untyped-def]
        policy = {"speculation": speculation, "options": {"speculation": {speculation: options}}}
        return make_speculator(make_scenario(policy=policy, time_scale=time_scale))

    assert built("late", {"min_runtime": "2m"}, time_scale=10).min_runtime_s == pytest.approx(12.0)
    assert built("hadoop", {}, time_scale=0.5).lag_s == pytest.approx(120.0)
    assert built("spark", {}).multiplier == 3.0  # spark.speculation.multiplier's default today
    for name, options, field in (
        ("late", {"cap": 0}, "policy.options.speculation.late.cap"),
        ("late", {"cap": 1.5}, "policy.options.speculation.late.cap"),
        ("spark", {"multiplier": -1}, "policy.options.speculation.spark.multiplier"),
        ("hadoop", {"speed": 1}, "policy.options.speculation.hadoop.speed"),
        ("none", {"cap": 0.1}, "policy.options.speculation.none.cap"),
    ):
        with pytest.raises(ScenarioError) as refused:
            built(name, options)
        (line,) = refused.value.problems
        assert line.startswith(field), line
