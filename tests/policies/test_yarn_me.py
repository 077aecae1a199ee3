"""``scheduler: yarn-me``, its timeline generator and the simulation driver (the task model:
``test_task_model.py``).

Every test builds its cluster by hand and runs on a virtual clock.
"""

from __future__ import annotations

import math
import random

import pytest

from master.schedulers.yarn import JobState, ModelLookup, ModelSource, YarnScheduler
from master.schedulers.yarn_me import DEFAULT_ELASTIC_DISK_MB_S, YarnMeScheduler, elastic_choices
from master.schedulers.yarn_me_timeline import RegularTimeline, estimate_completion_times
from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    Decision,
    LogDecision,
    NodeView,
    PendingTask,
    RunningTask,
)
from testbed.workloads.task_model import (
    PenaltyCurve,
    SpillCurve,
    TaskModel,
)
from tests.support.dss_driver import (
    SchedulingError,
    SimJob,
    SimResult,
    model_runtime,
    simulate,
)
from tests.support.policies import SAWTOOTH, assigned, busy, job, labels, node, reservations, snap, tasks

STEP_2X = TaskModel(2_500, 10.0, PenaltyCurve.step(2.0))
"""Its spill is unknown: an elastic allocation of it is charged a node's whole disk budget."""
SPILLING_2X = TaskModel(2_500, 10.0, PenaltyCurve.step(2.0), disk_rate_mb_s=50.0)
"""Under-sized, it runs 10 s longer spilling at 50 MB/s: 500 MB in 20 s, 25 MB/s on average."""


def logs(decisions: list[Decision], label: str) -> list[LogDecision]:
    return [d for d in decisions if isinstance(d, LogDecision) and d.decision == label]


def run(scheduler: object, nodes: list, jobs: list[SimJob], models: ModelSource) -> SimResult:
    return simulate(scheduler, nodes, jobs, model_runtime(models))  # type: ignore[arg-type]


# ---------------------------------------------------------------- elastic amounts


def test_the_smallest_amount_with_the_lowest_runtime_wins_on_a_sawtooth() -> None:
    choices = elastic_choices(TaskModel(2_000, 10.0, SAWTOOTH), 100, 0.1)
    assert choices.floor_mb == 200
    assert choices.within(1_900) == (500, pytest.approx(12.0))  # 0.25 beats 0.75
    assert choices.within(400) == (400, pytest.approx(40 / 3))  # 1.6 -> 1.2 at 2/3 of the way
    assert choices.within(199) is None


def test_equal_runtimes_keep_the_smaller_amount() -> None:
    twin = PenaltyCurve(((0.1, 1.6), (0.25, 1.2), (0.5, 1.9), (0.75, 1.2), (0.99, 1.9)))
    choices = elastic_choices(TaskModel(2_000, 10.0, twin), 100, 0.1)
    assert choices.within(1_900)[0] == 500


def test_the_elastic_floor_is_ten_percent_rounded_up_to_the_increment() -> None:
    assert elastic_choices(TaskModel(2_550, 1.0, SAWTOOTH), 100, 0.1).floor_mb == 300
    assert elastic_choices(TaskModel(2_550, 1.0, SAWTOOTH), 256, 0.1).floor_mb == 256
    # every amount is a multiple of the increment, below the regular allocation (2,600)
    best = elastic_choices(TaskModel(2_550, 1.0, SAWTOOTH), 100, 0.1).best
    assert {m % 100 for m, _ in best} == {0} and max(m for m, _ in best) < 2_600


# ---------------------------------------------------------------- the paper's Fig. 3


def fig3() -> tuple[list, list[SimJob], dict]:
    """One highly utilised node: another job holds 8 of its 10 GB for 100 s. A job of three
    tasks (2.5 GB, 10 s each, twice as slow when under-sized, 25 MB/s of spill) arrives at t = 0."""
    busy_node = node(slots=4, memory=10_000, running=(busy("other", 8_000, 100.0),))
    three = SimJob("j", 0.0, (tasks("j", 3, 2_500),))
    return [busy_node], [three], {"j": SPILLING_2X}


def test_fig3_yarn_makes_every_task_wait_for_memory() -> None:
    nodes, jobs, models = fig3()
    result = run(YarnScheduler(models=models), nodes, jobs, models)
    assert result.jct == {"j": 110.0}
    assert {r.start for r in result.runs} == {100.0}


def test_fig3_yarn_me_starts_every_task_at_once_and_finishes_in_well_under_half() -> None:
    nodes, jobs, models = fig3()
    yarn = run(YarnScheduler(models=models), nodes, jobs, models)
    yarn_me = run(YarnMeScheduler(models=models, elastic_disk_mb_s=75.0), nodes, jobs, models)
    assert yarn_me.jct == {"j": 20.0}
    assert yarn_me.jct["j"] < 0.3 * yarn.jct["j"]  # the paper: "less than 30%"
    assert [(r.start, r.memory_mb, r.elastic) for r in yarn_me.runs] == [(0.0, 300, True)] * 3
    assert [d.decision for d in yarn_me.log] == ["elastic_accepted"] * 3


def test_fig3_under_a_tighter_disk_budget_the_third_task_waits_for_the_bandwidth_to_free() -> None:
    nodes, jobs, models = fig3()
    result = run(YarnMeScheduler(models=models, elastic_disk_mb_s=50.0), nodes, jobs, models)
    assert result.jct == {"j": 40.0}
    # 2 x 25 MB/s fill the budget; the third starts, still elastic, when the first two end
    assert [(r.start, r.elastic) for r in result.runs] == [(0.0, True), (0.0, True), (20.0, True)]
    [refusal] = logs(list(result.log), "elastic_rejected_disk")
    assert refusal.detail["disk_mb_s"] == pytest.approx(25.0)
    assert refusal.detail["elastic_disk_in_use_mb_s"] == pytest.approx(50.0)


# ---------------------------------------------------------------- the straggler rule


def straggler_setting(job_running_until: float | None) -> tuple[list, list, dict]:
    """The job's one pending task could run regularly at t = 5 (and end at 15); an elastic
    allocation now would end at 20."""
    model = TaskModel(2_000, 10.0, PenaltyCurve.step(2.0))
    n1 = node(slots=4, memory=3_000, running=(busy("x", 2_000, 5.0),))  # 1,000 MB free
    nodes = [n1]
    if job_running_until is not None:
        nodes.append(node("n2", slots=1, running=(busy("j", 1_000, job_running_until),)))
    return nodes, [job("j", tasks("j", 1, 2_000), running=len(nodes) - 1)], {"j": model}


def test_an_elastic_task_that_would_become_the_straggler_is_refused() -> None:
    nodes, jobs, models = straggler_setting(None)
    decisions = YarnMeScheduler(models=models).schedule(snap(nodes, jobs))
    assert assigned(decisions) == []
    [refusal] = logs(decisions, "elastic_rejected_straggler")
    assert refusal.detail["predicted_end"] == 20.0
    assert refusal.detail["job_completion_estimate"] == 15.0
    assert reservations(decisions) == [("n1", "j")]


def test_the_same_elastic_task_is_accepted_when_the_job_ends_later_anyway() -> None:
    nodes, jobs, models = straggler_setting(25.0)
    decisions = YarnMeScheduler(models=models).schedule(snap(nodes, jobs))
    assert decisions[0] == Assign("j/t0", "n1", 200, True, 20.0, DEFAULT_ELASTIC_DISK_MB_S)
    [accepted] = logs(decisions, "elastic_accepted")
    assert accepted.detail["job_completion_bound"] == 25.0
    assert accepted.detail["allocation_ratio"] == 0.1


def test_a_refused_task_runs_regularly_as_soon_as_it_fits() -> None:
    nodes, jobs, models = straggler_setting(None)
    sim_job = SimJob("j", 0.0, (jobs[0].pending,))
    result = run(YarnMeScheduler(models=models), nodes, [sim_job], models)
    assert result.jct == {"j": 15.0}
    assert [(r.start, r.elastic) for r in result.runs] == [(5.0, False)]


def test_a_task_placed_earlier_in_the_round_no_longer_props_up_the_estimate() -> None:
    """Task a would only run regularly at t = 50 (ends 150); placed elastically it ends at
    100. Task b would end at 60 regularly; elastically at 120 it would now be the straggler,
    although 120 is before a's regular estimate."""
    models = {
        ("j", 0): TaskModel(4_000, 100.0, PenaltyCurve.none()),
        ("j", 1): TaskModel(3_500, 10.0, PenaltyCurve.step(12.0)),
    }
    n1 = node(slots=4, memory=10_000, running=(busy("x", 6_500, 50.0),))  # 3,500 MB free
    pending = (PendingTask("j/a", "j", 0, 0, 4_000), PendingTask("j/b", "j", 1, 0, 3_500))
    no_disk_budget = YarnMeScheduler(models=models, elastic_disk_mb_s=math.inf)  # the straggler rule decides
    decisions = no_disk_budget.schedule(snap([n1], [job("j", pending)]))
    assert assigned(decisions) == [("j/a", "n1", 400)]
    [refusal] = logs(decisions, "elastic_rejected_straggler")
    assert refusal.task_id == "j/b"
    assert refusal.detail["job_completion_estimate"] == 100.0


# ---------------------------------------------------------------- choosing the amount


def test_the_scheduler_picks_the_smaller_allocation_on_a_sawtooth() -> None:
    models = {"j": TaskModel(2_000, 10.0, SAWTOOTH)}
    n1 = node(slots=4, memory=4_000, running=(busy("x", 2_100, 100.0),))  # 1,900 MB free
    state = snap([n1], [job("j", tasks("j", 1, 2_000))])
    decisions = YarnMeScheduler(models=models).schedule(state)
    assert decisions[0] == Assign("j/t0", "n1", 500, True, pytest.approx(12.0), DEFAULT_ELASTIC_DISK_MB_S)


def test_no_elastic_allocation_below_the_floor_or_without_a_model() -> None:
    n1 = node(slots=4, memory=4_000, running=(busy("x", 3_850, 100.0),))  # 150 MB < 250 MB
    jobs = [job("j", tasks("j", 1, 2_500))]
    decisions = YarnMeScheduler(models={"j": STEP_2X}).schedule(snap([n1], jobs))
    assert labels(decisions) == [("j/t0", "reserved")]
    roomy = node(slots=4, memory=4_000, running=(busy("x", 2_000, 100.0),))
    decisions = YarnMeScheduler().schedule(snap([roomy], jobs))  # no penalty curve known
    assert labels(decisions) == [("j/t0", "reserved")]


def spilling_node(*bandwidths: float) -> NodeView:
    """A node with 1,000 MB free and an elastic task using each of ``bandwidths`` (MB/s)."""
    running = tuple(
        RunningTask(f"x{i}", "x", 1_000, 0.0, 100.0, elastic=True, disk_mb_s=mb_s)
        for i, mb_s in enumerate(bandwidths)
    )
    return node(slots=4, memory=4_000, running=(*running, busy("y", 3_000 - 1_000 * len(running), 100.0)))


def test_an_elastic_allocation_is_refused_when_the_nodes_elastic_bandwidth_would_be_exceeded() -> None:
    jobs = [job("j", tasks("j", 1, 2_500))]
    decisions = YarnMeScheduler(models={"j": SPILLING_2X}).schedule(snap([spilling_node(40.0, 40.0)], jobs))
    assert assigned(decisions) == []
    [refusal] = logs(decisions, "elastic_rejected_disk")
    assert refusal.detail == {
        "memory_mb": 300.0,
        "predicted_duration_s": 20.0,
        "disk_mb_s": 25.0,
        "elastic_disk_in_use_mb_s": 80.0,
    }
    assert reservations(decisions) == [("n1", "j")]


def test_an_elastic_allocation_is_accepted_when_its_bandwidth_fits_the_budget() -> None:
    jobs = [job("j", tasks("j", 1, 2_500))]
    decisions = YarnMeScheduler(models={"j": SPILLING_2X}).schedule(snap([spilling_node(40.0, 35.0)], jobs))
    assert decisions[0] == Assign("j/t0", "n1", 300, True, 20.0, 25.0)  # 75 + 25: exactly full
    [accepted] = logs(decisions, "elastic_accepted")
    assert accepted.detail["disk_mb_s"] == 25.0


def test_an_elastic_task_that_ends_frees_its_bandwidth() -> None:
    jobs = [job("j", tasks("j", 1, 2_500))]
    scheduler = YarnMeScheduler(models={"j": SPILLING_2X})
    assert assigned(scheduler.schedule(snap([spilling_node(40.0, 40.0)], jobs))) == []
    # one of the two spilling tasks has ended: 40 + 25 fit
    assert assigned(scheduler.schedule(snap([spilling_node(40.0)], jobs, now=50.0))) == [("j/t0", "n1", 300)]


def test_a_task_of_unknown_spill_is_charged_the_whole_budget_and_one_spilling_nothing_none() -> None:
    jobs = [job("j", tasks("j", 1, 2_500))]
    unknown = YarnMeScheduler(models={"j": STEP_2X}, elastic_disk_mb_s=60.0)
    assert unknown.schedule(snap([spilling_node()], jobs))[0] == Assign("j/t0", "n1", 300, True, 20.0, 60.0)
    assert assigned(unknown.schedule(snap([spilling_node(1.0)], jobs))) == []
    silent = TaskModel(2_500, 10.0, PenaltyCurve.step(2.0), SpillCurve(((0.1, 0.0),)))
    full = YarnMeScheduler(models={"j": silent}, elastic_disk_mb_s=60.0)
    assert full.schedule(snap([spilling_node(60.0)], jobs))[0] == Assign("j/t0", "n1", 300, True, 20.0, 0.0)


# ---------------------------------------------------------------- reservations


def backfill_setting() -> tuple[list, list]:
    """n1 is reserved for r, whose 3 GB task fits once x ends at t = 30."""
    n1 = node(slots=4, memory=4_000, running=(busy("x", 2_000, 30.0),), reserved_for="r")
    jobs = [
        job("r", tasks("r", 1, 3_000), running=3),
        job("short", tasks("short", 1, 1_000, duration=10.0), submitted=1.0),
        job("long", tasks("long", 1, 1_000, duration=40.0), submitted=2.0),
    ]
    return [n1], jobs


def test_other_jobs_use_a_reserved_node_only_if_they_end_before_it_is_needed() -> None:
    nodes, jobs = backfill_setting()
    decisions = YarnMeScheduler().schedule(snap(nodes, jobs))
    assert assigned(decisions) == [("short/t0", "n1", 1_000)]
    [backfilled] = logs(decisions, "regular")
    assert backfilled.detail["backfill"] == 1.0
    assert reservations(decisions) == []


def test_backfilling_looks_only_as_deep_into_the_queue_as_allowed() -> None:
    nodes, jobs = backfill_setting()
    assert assigned(YarnMeScheduler(backfill_depth=0).schedule(snap(nodes, jobs))) == []
    shortest_last = [jobs[0], jobs[2], job("short", jobs[1].pending, submitted=3.0)]
    assert assigned(YarnMeScheduler(backfill_depth=1).schedule(snap(nodes, shortest_last))) == []
    assert assigned(YarnMeScheduler(backfill_depth=2).schedule(snap(nodes, shortest_last))) == [
        ("short/t0", "n1", 1_000)
    ]


def test_backfilling_never_delays_the_reserving_job() -> None:
    nodes, jobs = backfill_setting()
    sim_jobs = [SimJob(j.job_id, j.submitted, (j.pending,)) for j in jobs]
    result = run(YarnMeScheduler(), nodes, sim_jobs, {})
    starts = {r.task_id: r.start for r in result.runs}
    assert starts == {"short/t0": 1.0, "r/t0": 30.0, "long/t0": 30.0}  # short arrives at 1
    yarn = run(YarnScheduler(), nodes, sim_jobs, {})
    assert {r.task_id: r.start for r in yarn.runs}["r/t0"] == 30.0
    assert result.jct["short"] < yarn.jct["short"]


def test_the_reserving_job_may_run_elastically_on_its_node_which_lifts_the_reservation() -> None:
    n1 = node(slots=4, memory=10_000, running=(busy("other", 8_000, 100.0),), reserved_for="j")
    jobs = [job("j", tasks("j", 1, 2_500), running=9)]
    decisions = YarnMeScheduler(models={"j": STEP_2X}).schedule(snap([n1], jobs))
    assert decisions[0] == Assign("j/t0", "n1", 300, True, 20.0, DEFAULT_ELASTIC_DISK_MB_S)
    assert reservations(decisions) == [("n1", None)]


def test_a_node_is_reserved_for_the_head_job_when_nothing_can_be_allocated() -> None:
    n1 = node(slots=4, memory=3_000, running=(busy("x", 2_950, 9.0),))  # 50 MB free: nothing
    jobs = [job("j", tasks("j", 1, 2_500)), job("k", tasks("k", 1, 50, duration=5.0), running=1)]
    decisions = YarnMeScheduler(models={"j": STEP_2X}).schedule(snap([n1], jobs))
    assert decisions == []  # below one increment: the node cannot allocate anything
    n1 = node(slots=4, memory=3_000, running=(busy("x", 2_800, 9.0),))  # 200 MB < 300 floor
    decisions = YarnMeScheduler(models={"j": STEP_2X}).schedule(snap([n1], jobs))
    assert reservations(decisions) == [("n1", "j")]
    assert assigned(decisions) == [("k/t0", "n1", 100)]  # k ends at 5, before j could start
    later = snap([n1], [jobs[0], job("k", tasks("k", 1, 50, duration=10.0), running=1)])
    assert assigned(YarnMeScheduler(models={"j": STEP_2X}).schedule(later)) == []


# ---------------------------------------------------------------- the timeline generator


def test_timeline_of_fig3() -> None:
    nodes, jobs, models = fig3()
    state = snap(nodes, [job("j", jobs[0].stages[0])])
    assert estimate_completion_times(state, models) == {"j": 110.0}


def test_timeline_honours_reservations() -> None:
    def state(reserved_for: str | None) -> ClusterSnapshot:
        a = node("a", slots=2, memory=4_000, running=(busy("x", 3_000, 20.0),), reserved_for=reserved_for)
        b = node("b", slots=2, memory=4_000)
        jobs = [job("r", tasks("r", 1, 3_000), running=2), job("k", tasks("k", 3, 1_000))]
        return snap([a, b], jobs)

    # node a serves only r: k's third task waits for node b's first wave
    assert estimate_completion_times(state("r")) == {"r": 20.0, "k": 20.0}
    assert estimate_completion_times(state(None)) == {"r": 20.0, "k": 10.0}


def test_timeline_never_ends_a_task_that_fits_no_node() -> None:
    state = snap([node(memory=1_000)], [job("j", tasks("j", 1, 2_000))])
    assert estimate_completion_times(state) == {"j": math.inf}


def random_snapshot(rng: random.Random) -> tuple[ClusterSnapshot, ModelSource]:
    jobs, models = [], {}
    for j in range(rng.randint(1, 4)):
        job_id = f"j{j}"
        pending = []
        for stage in range(rng.randint(1, 2)):
            models[(job_id, stage)] = TaskModel(rng.randrange(300, 4_000, 100), float(rng.randint(1, 30)))
            pending += [
                PendingTask(f"{job_id}/{stage}/{i}", job_id, stage, i, 0) for i in range(rng.randint(1, 5))
            ]
        jobs.append(
            job(
                job_id,
                tuple(pending),
                submitted=rng.random(),
                running=rng.randint(0, 3),
                weight=rng.choice([1.0, 2.0]),
            )
        )
    nodes = []
    for n in range(rng.randint(2, 5)):
        running = tuple(
            busy(
                rng.choice([*(j.job_id for j in jobs), "bg"]),
                rng.randrange(100, 2_000, 100),
                rng.uniform(0, 40),
                task_id=f"n{n}/r{k}",
            )
            for k in range(rng.randint(0, 3))
        )
        reserved = rng.choice([None, None, *(j.job_id for j in jobs)])
        nodes.append(
            node(
                f"n{n}",
                slots=rng.randint(3, 5),
                memory=rng.randrange(4_000, 8_001, 500),
                running=running,
                reserved_for=reserved,
            )
        )
    return snap(nodes, jobs, now=5.0), models


def test_the_lazy_walk_answers_like_the_full_walk() -> None:
    rng = random.Random(7)
    for _ in range(60):
        state, models = random_snapshot(rng)
        full = estimate_completion_times(state, models)
        lookup = ModelLookup(models)
        lazy = RegularTimeline(state, [JobState(j, lookup, 100) for j in state.jobs], "fair")
        queries = [(j, rng.uniform(0, 120)) for j in full for _ in range(3)]
        rng.shuffle(queries)
        for job_id, threshold in queries:
            reaches, _ = lazy.pending_end_reaches(job_id, threshold, set())
            by_running = lazy.running_end.get(job_id, -math.inf) >= threshold
            assert (reaches or by_running) == (full[job_id] >= threshold), (job_id, threshold)


# ---------------------------------------------------------------- the simulation driver


def test_the_driver_refuses_an_over_committing_scheduler() -> None:
    class Greedy:
        def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
            return [Assign(t.task_id, "n1", 600) for j in snapshot.jobs for t in j.pending]

    with pytest.raises(SchedulingError, match="over-commits"):
        simulate(
            Greedy(),
            [node(memory=1_000)],
            [SimJob("j", 0.0, (tasks("j", 2, 500),))],
            model_runtime({}),
        )


def test_the_driver_runs_stages_one_after_the_other_and_jobs_on_arrival() -> None:
    reduce = (PendingTask("j/r0", "j", 1, 0, 1_000, 7.0),)
    two_stages = SimJob("j", 0.0, (tasks("j", 2, 1_000, duration=5.0), reduce))
    late = SimJob("k", 3.0, (tasks("k", 1, 1_000, duration=1.0),))
    result = simulate(YarnScheduler(), [node(slots=2)], [two_stages, late], model_runtime({}))
    assert result.finished == {"k": 6.0, "j": 12.0}
    assert result.jct == {"k": 3.0, "j": 12.0}
    assert result.unfinished == ()


class _Recording(YarnScheduler):
    """YARN, noting when it was asked."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[float] = []

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        self.asked.append(snapshot.now)
        return super().schedule(snapshot)


def test_with_a_heartbeat_freed_resources_wait_for_it_but_tasks_and_jobs_end_on_time() -> None:
    one_by_one = SimJob("j", 0.0, (tasks("j", 2, 1_000, duration=2.5),))
    late = SimJob("k", 0.4, (tasks("k", 1, 100, duration=1.0),))
    cluster = [node(slots=1, memory=1_000), node("n2", slots=1, memory=100)]  # k only fits n2
    by_event, by_heartbeat = _Recording(), _Recording()
    at_events = simulate(by_event, cluster, [one_by_one, late], model_runtime({}))
    at_beats = simulate(by_heartbeat, cluster, [one_by_one, late], model_runtime({}), heartbeat_s=1.0)
    assert at_events.finished == {"k": 1.4, "j": 5.0}
    assert at_beats.finished == {"k": 2.0, "j": 5.5}  # k starts at 1.0; j's second task at 3.0
    assert by_event.asked == [0.0, 0.4, 1.4, 2.5, 5.0]
    assert by_heartbeat.asked == [0.0, 1.0, 2.0, 3.0, 6.0]


def test_the_heartbeat_must_be_a_finite_non_negative_interval() -> None:
    for bad in (-1.0, math.inf, math.nan):
        with pytest.raises(ValueError, match="heartbeat_s"):
            simulate(
                YarnScheduler(),
                [node()],
                [SimJob("j", 0.0, (tasks("j", 1, 100),))],
                model_runtime({}),
                heartbeat_s=bad,
            )


def test_yarn_me_is_built_from_scenario_options_which_are_checked() -> None:
    options = {
        "ordering": "fifo",
        "elastic_disk_mb_s": 40,
        "min_fraction": 0.2,
        "backfill_depth": 0,
    }
    scheduler = YarnMeScheduler.from_options(options, models={"j": STEP_2X})
    assert (
        scheduler.ordering,
        scheduler.elastic_disk_mb_s,
        scheduler.min_fraction,
        scheduler.backfill_depth,
    ) == ("fifo", 40.0, 0.2, 0)
    assert YarnMeScheduler.from_options({"elastic_disk_mb_s": math.inf}).elastic_disk_mb_s == math.inf
    with pytest.raises(ValueError, match="max_elastic_per_node\n  Extra inputs are not permitted"):
        YarnMeScheduler.from_options({"max_elastic_per_node": 4})
    for budget in (0, -5.0, math.nan, "fast", True):
        with pytest.raises(ValueError, match="elastic_disk_mb_s"):
            YarnMeScheduler.from_options({"elastic_disk_mb_s": budget})
    with pytest.raises(ValueError, match="min_fraction"):
        YarnMeScheduler.from_options({"min_fraction": 0.0})
