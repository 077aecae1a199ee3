"""The scenario side of Eagle and CloudCoaster: arrivals, sleep jobs, policy factories, summary keys."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from master.autoscalers.cloudcoaster import CloudCoasterAutoscaler
from master.autoscalers.static import StaticAutoscaler
from master.policy_setup import make_autoscaler, make_scheduler
from master.schedulers.eagle import EagleScheduler
from master.summary.coaster import short_queue_delays, transient_cost
from testbed.arrivals.generate import BurstyMix, bursty_jobs
from testbed.scenario.schema import ScenarioError, SleepJob, parse_scenario
from testbed.workloads.sleep import plan
from tests.support.scenarios import make_scenario

EAGLE = {"scheduler": "eagle", "options": {"eagle": {"short_fraction": 0.5}}}


def scenario(**fields: Any):
    data: dict[str, Any] = {"name": "t", "seed": 4, "cluster": {"reserved": 4, "transient": 0}}
    data.update(fields)
    return parse_scenario(data)


def problems(**fields: Any) -> str:
    with pytest.raises(ScenarioError) as caught:
        scenario(**fields)
    return str(caught.value)


# ------------------------------------------------------------------ arrivals


def test_a_trace_becomes_sleep_jobs_with_their_durations_and_classes(tmp_path: Path) -> None:
    trace = tmp_path / "t.tr"
    trace.write_text("0 2 40 30 50\n# a comment\n5, 1, 2, 2.5\n")
    jobs = scenario(arrivals={"trace": str(trace), "cutoff": "30s"}).arriving_jobs()
    assert [(j.submit_at, j.durations, j.estimate_s) for j in jobs] == [(0, [30, 50], 40), (5, [2.5], 2)]
    assert [j.name for j in jobs] == ["long-0", "short-1"]
    assert all(j.workload == "sleep" and j.tasks == len(j.durations or ()) for j in jobs)


def test_synthetic_arrivals_are_the_bursty_generator_seeded_by_the_scenario() -> None:
    knobs = {"horizon_s": 300, "long_rate_per_s": 0.02}
    jobs = scenario(arrivals={"synthetic": knobs, "cutoff": 10}).arriving_jobs()
    expected = bursty_jobs(4, BurstyMix(horizon_s=300, long_rate_per_s=0.02, cutoff_s=10))
    assert [(j.submit_at, tuple(j.durations or ())) for j in jobs] == [
        (e.submit_s, e.task_durations) for e in expected
    ]
    own_seed = scenario(arrivals={"synthetic": {**knobs, "seed": 9}}).arriving_jobs()
    assert [j.submit_at for j in own_seed] == [e.submit_s for e in bursty_jobs(9, BurstyMix(**knobs))]


@pytest.mark.parametrize(
    ("arrivals", "message"),
    [
        ({}, "give exactly one of trace (a file), synthetic or dss"),
        ({"trace": "x.tr", "synthetic": {}}, "give exactly one of trace (a file), synthetic or dss"),
        ({"trace": "/nonexistent.tr"}, "trace /nonexistent.tr: cannot read the file"),
        ({"synthetic": {"horizon": 60}}, "unknown knobs ['horizon']"),
        ({"synthetic": {"cutoff_s": 5}}, "set arrivals.cutoff instead"),
        ({"synthetic": {"horizon_s": "1m"}}, "every knob is a number"),
        ({"synthetic": {"short_max_s": 20}}, "need short_max_s < cutoff_s"),
    ],
)
def test_bad_arrivals_are_scenario_errors(arrivals: dict[str, Any], message: str) -> None:
    assert message in problems(arrivals=arrivals)


def test_a_scenario_needs_jobs_or_arrivals() -> None:
    assert "give jobs (at least one) or arrivals" in problems()
    assert scenario(arrivals={"synthetic": {}}).jobs == []


def test_a_bad_trace_line_is_named(tmp_path: Path) -> None:
    trace = tmp_path / "bad.tr"
    trace.write_text("0 2 1 1\n")
    assert f"{trace}:1: the job says 2 task(s) but lists 1" in problems(arrivals={"trace": str(trace)})


# ------------------------------------------------------------------ sleep jobs


def test_sleep_job_durations_give_each_task_its_own_wall_duration() -> None:
    job = SleepJob(workload="sleep", durations=["1s", 3])
    stage = plan(job, seed=0, scenario=make_scenario(time_scale=2)).stages[0]  # wall_per_trace 0.5
    assert stage.tasks == 2 and job.estimate_s == 2.0
    assert [stage.params(i)["duration_s"] for i in range(2)] == [0.5, 1.5]
    uniform = plan(SleepJob(workload="sleep", tasks=3, duration=4), seed=0).stages[0]
    assert [uniform.params(i)["duration_s"] for i in range(3)] == [4.0] * 3


def test_sleep_job_tasks_must_match_durations() -> None:
    assert "tasks is 3 but durations lists 2" in problems(
        jobs=[{"workload": "sleep", "tasks": 3, "durations": [1, 2]}]
    )


# ------------------------------------------------------------------ factories


def test_eagle_and_cloudcoaster_from_the_scenario() -> None:
    options = {
        "eagle": {"short_fraction": 0.5, "probes": 3, "queue_order": "srpt"},
        "cloudcoaster": {"r": 2, "p": 0.5, "threshold": 0.6, "provisioning_delay": "2m"},
    }
    s = scenario(
        time_scale=10,
        cluster={"reserved": 8, "transient": 0},
        arrivals={"synthetic": {}},
        policy={"scheduler": "eagle", "autoscaler": "cloudcoaster", "options": options},
    )
    scheduler, autoscaler = make_scheduler(s), make_autoscaler(s)
    assert isinstance(scheduler, EagleScheduler)
    assert (scheduler.probes, scheduler.queue_order, scheduler.seed) == (3, "srpt", 4)
    assert isinstance(autoscaler, CloudCoasterAutoscaler)
    assert autoscaler.short_on_demand == 4 and autoscaler.budget == 4  # N = 4 of 8, K = 2*4*0.5
    assert autoscaler.provisioning_delay_s == 12.0  # 120 s of trace time, 10x faster
    assert autoscaler.threshold == 0.6
    assert scheduler.reserved_partitions([f"reserved-{i}" for i in range(8)]) == {
        **{f"reserved-{i}": "general" for i in range(4)},
        **{f"reserved-{i}": "short" for i in range(4, 8)},
    }


def test_the_static_autoscaler_is_the_default() -> None:
    assert isinstance(make_autoscaler(scenario(arrivals={"synthetic": {}}, policy=EAGLE)), StaticAutoscaler)


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ({"scheduler": "fifo", "autoscaler": "cloudcoaster"}, "it needs scheduler: eagle"),
        ({**EAGLE, "autoscaler": "cloudcoaster", "options": {"cloudcoaster": {"budget": 3}}}, "budget"),
        ({**EAGLE, "autoscaler": "cloudcoaster", "options": {"cloudcoaster": {"r": 0}}}, "r must be > 0"),
        ({"scheduler": "eagle", "options": {"eagle": {"short_fraction": 1.0}}}, "short_fraction must"),
        ({"scheduler": "eagle", "options": {"eagle": {"probes": 0}}}, "probes must be >= 1"),
    ],
)
def test_bad_policy_options_are_scenario_errors(policy: dict[str, Any], message: str) -> None:
    s = scenario(arrivals={"synthetic": {}}, policy=policy)
    with pytest.raises(ScenarioError, match="policy") as caught:
        make_scheduler(s)
        make_autoscaler(s)
    assert message in str(caught.value)


def test_other_schedulers_keep_every_node_general() -> None:
    s = scenario(arrivals={"synthetic": {}})
    assert set(make_scheduler(s).reserved_partitions(["reserved-0", "reserved-1"]).values()) == {"general"}


# ------------------------------------------------------------------ summary keys


def table(path: Path, rows: list[dict[str, Any]]) -> list[dict[str, str]]:
    with open(path, "w", newline="") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return list(csv.DictReader(path.open()))


def test_short_queue_delay_is_the_first_start_minus_the_submission(tmp_path: Path) -> None:
    jobs = table(tmp_path / "jobs.csv", [{"job_id": "j0", "submit_s": 1}, {"job_id": "j1", "submit_s": 2}])
    tasks = table(
        tmp_path / "tasks.csv",
        [
            {"task_id": "j0.s0.t0", "job_id": "j0", "start_s": 4.0},  # revoked attempt
            {"task_id": "j0.s0.t0", "job_id": "j0", "start_s": 6.0},  # its rerun
            {"task_id": "j0.s0.t1", "job_id": "j0", "start_s": 1.5},
            {"task_id": "j1.s0.t0", "job_id": "j1", "start_s": 2.0},  # a long job's task
        ],
    )
    assert sorted(short_queue_delays(jobs, tasks, long_jobs={"j1"})) == [0.5, 3.0]


def test_transient_cost_in_on_demand_servers(tmp_path: Path) -> None:
    s = scenario(
        arrivals={"synthetic": {}},
        policy={**EAGLE, "options": {**EAGLE["options"], "cloudcoaster": {"r": 2}}},
    )
    nodes = table(
        tmp_path / "nodes.csv",
        [
            {"node_id": "reserved-0", "node_class": "reserved", "launched_s": 0, "ended_s": 100},
            {"node_id": "reserved-2", "node_class": "reserved", "launched_s": 0, "ended_s": 100},
            {"node_id": "reserved-3", "node_class": "reserved", "launched_s": 0, "ended_s": 20},  # replaced
            {"node_id": "transient-0", "node_class": "transient", "launched_s": 10, "ended_s": 70},
            {"node_id": "transient-1", "node_class": "transient", "launched_s": 50, "ended_s": 90},
        ],
    )
    cost = transient_cost(nodes, s)
    assert cost["transient_launched"] == 2
    assert (cost["mean_transient_active_s"], cost["max_transient_active_s"]) == (50.0, 60.0)
    assert cost["avg_transient_servers"] == 1.0  # 100 server-seconds over 100 s
    assert cost["transient_on_demand_equiv"] == 0.5  # r = 2
    assert cost["avg_short_on_demand_servers"] == 1.2  # reserved-2 all along, reserved-3 a fifth
    assert cost["short_partition_cost_servers"] == 1.7
