"""The fidelity monitor's verdict, on hand-made samples (a pure function of what it saw)."""

from __future__ import annotations

from pathlib import Path

from master.shell.fidelity_monitor import (
    HostSample,
    Observations,
    TaskTime,
    assess,
    host_sample,
    read_cpu_times,
    saturated_overlap,
    slot_quotas,
)
from testbed.node.cgroups import CpuStats
from testbed.scenario.schema import parse_scenario


def samples(*busy: float, steal: float = 0.0) -> list[HostSample]:
    """One-second samples ending at t = 1, 2, ..."""
    return [HostSample(t=i + 1.0, span_s=1.0, busy=b, steal=steal) for i, b in enumerate(busy)]


def observed(*busy: float, lag: float = 0.001, steal: float = 0.0) -> Observations:
    return Observations(
        samples=samples(*busy, steal=steal),
        loop_lag_s=[lag] * 10,
        launch_ack_s=[0.02, 0.04],
        control_plane_cpu_s=1.0,
        wall_s=10.0,
    )


def test_proc_stat_gives_busy_and_steal_shares(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1 2 3\n")
    before = read_cpu_times(stat)
    stat.write_text("cpu  250 0 100 900 50 0 0 100 0 0\ncpu0 1 2 3\n")
    sample = host_sample(5.0, 0.5, before, read_cpu_times(stat))
    assert sample.busy == 0.75  # 300 of 400 jiffies not idle (steal counts as busy)
    assert sample.steal == 0.25


def test_only_saturated_samples_count_against_a_task() -> None:
    host = samples(0.5, 0.99, 1.0, 0.2)  # seconds 1-2 and 2-3 saturated
    assert saturated_overlap(TaskTime(0.5, 2.5, 0.0, "transient"), host) == 1.5
    assert saturated_overlap(TaskTime(3.0, 4.0, 0.0, "transient"), host) == 0.0


def test_a_run_on_a_saturated_host_is_distorted_in_one_sentence() -> None:
    tasks = [TaskTime(0.0, 4.0, 1.0, "transient")]
    block = assess(observed(1.0, 1.0, 0.3, 0.3), tasks, {}, {}, host_cores=2)
    assert block["task_time_saturated_share"] == 0.5
    assert block["distorted"]
    assert block["problems"] == ["50% of task time ran on a saturated host (cores >= 95% busy)"]
    assert block["control_plane_cores"] == 0.1
    assert block["launch_ack_mean_s"] == 0.03


def test_a_quiet_run_is_not_distorted() -> None:
    tasks = [TaskTime(0.0, 4.0, 1.0, "transient")]
    block = assess(observed(0.6, 0.7, 0.6, 0.5), tasks, {}, {}, host_cores=2)
    assert not block["distorted"] and block["problems"] == []
    assert block["host_busy_mean"] == 0.6
    assert block["task_cpu_per_quota"] is None  # unisolated: no quota to compare with


def test_steal_and_a_lagging_master_are_distortions_too() -> None:
    block = assess(observed(0.5, 0.5, lag=0.3, steal=0.2), [], {}, {}, host_cores=2)
    assert block["problems"] == [
        "the host lost 20% of its CPU time to steal",
        "the master's event loop lagged 300 ms at the 95th percentile",
    ]


def test_cpu_use_is_compared_with_each_slots_quota_and_throttling_is_totalled() -> None:
    tasks = [TaskTime(0.0, 4.0, 0.5, "reserved"), TaskTime(0.0, 2.0, 0.5, "transient")]
    quotas = {"reserved": 0.25, "transient": 0.5}
    stats = {"reserved-0": CpuStats(100, 30, 1.5), "transient-0": CpuStats(100, 10, 0.5)}
    slots = {"reserved-0": CpuStats(100, 80, 3.0) + CpuStats(100, 0, 0.0), "transient-0": CpuStats(0, 0, 0.0)}
    block = assess(observed(0.5), tasks, quotas, stats, host_cores=2, slot_throttling=slots)
    assert block["task_cpu_per_quota"] == 0.5  # 1.0 CPU-s of the 2.0 allowed
    assert (block["nodes_throttled_share"], block["nodes_throttled_s"]) == (0.2, 2.0)
    assert (block["slots_throttled_share"], block["slots_throttled_s"]) == (0.4, 3.0)
    assert assess(observed(0.5), tasks, quotas, stats, host_cores=2)["slots_throttled_share"] is None


def test_a_slowed_nodes_tasks_are_held_to_their_slowed_quota() -> None:
    """``chaos.slowdown``: a task on a node 4x slower is allowed a quarter of its class's slot quota;
    the block says what share of the full-speed quota the slowed tasks got and were allowed."""
    tasks = [TaskTime(0.0, 4.0, 0.5, "reserved", slowdown=4), TaskTime(0.0, 2.0, 1.0, "reserved")]
    quotas = {"reserved": 0.5}
    block = assess(observed(0.5), tasks, quotas, {}, host_cores=2)
    assert block["task_cpu_per_quota"] == 1.0  # 1.5 CPU-s of 0.5 (4 s x 0.5 / 4) + 1.0 (2 s x 0.5)
    assert (block["slowed_task_cpu_share"], block["slowed_task_allowed_share"]) == (0.25, 0.25)
    assert "slowed_task_cpu_share" not in assess(observed(0.5), tasks[1:], quotas, {}, host_cores=2)


def test_slot_quotas_follow_the_scale_model() -> None:
    data = {
        "name": "q",
        "cluster": {"reserved": {"count": 1, "slots": 2, "cpus": 1}, "transient": {"count": 1, "slots": 1}},
        "jobs": [{"workload": "sort"}],
    }
    assert slot_quotas(parse_scenario(data)) == {}
    faithful = parse_scenario({**data, "fidelity": {"mode": "faithful", "dilation": 2}})
    assert slot_quotas(faithful) == {"reserved": 0.25, "transient": 0.5}
