"""A faithful run end to end: every node's agent in its own CPU cgroup, bandwidth limits on,
pushes and spills paced, outputs still exact."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from testbed.app.report.build import write_report
from testbed.app.report.rundir import load_run
from testbed.node.cgroups import CgroupUnavailable, detect
from tests.support.cgroups import require_cgroups
from tests.support.runs import JOBS, assert_clean, assert_exact, run_a_lone_task
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


def node_class(cpus: float, count: int) -> dict[str, Any]:
    return {"count": count, "slots": 1, "cpus": cpus, "network_mbps": 400, "disk_mb_s": 200}


async def test_a_faithful_pado_run_is_exact_with_each_agent_in_its_cgroup(tmp_path: Path) -> None:
    try:
        cgroups = detect()
    except CgroupUnavailable as exc:
        pytest.skip(str(exc))
    scenario = make_scenario(
        cluster={"reserved": node_class(0.5, 1), "transient": node_class(0.25, 2), "heartbeat_timeout": 5},
        jobs=JOBS[:2],
        policy={"strategy": "pado"},
        fidelity={"mode": "faithful"},
    )
    groups: dict[str, str] = {}
    run_ids: set[str] = set()

    def where(master: Any, record: dict[str, Any]) -> None:
        run_ids.add(master.run_id)
        if record["event"] == "node_up":
            groups[record["node"]] = Path(f"/proc/{record['pid']}/cgroup").read_text()
            groups["master"] = Path("/proc/self/cgroup").read_text()

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=where)
    assert result.ok, result.summary
    assert_exact(scenario, tmp_path)
    assert result.summary["bytes_pushed"] > 0
    [run_id] = run_ids
    assert len(groups) == 4
    for node, table in groups.items():  # the master in the run's top-weight control group
        assert f"/testbed/{run_id}/{'control' if node == 'master' else node + '/agent'}\n" in table
    assert not cgroups.run_dir(run_id).exists()
    assert "/testbed/" not in Path("/proc/self/cgroup").read_text()  # and back where it was
    fidelity = result.summary["fidelity"]
    assert fidelity["prioritised"]
    assert fidelity["task_cpu_s"] > 0 and fidelity["task_cpu_per_quota"] is not None
    assert fidelity["nodes_throttled_share"] is not None  # every node's cgroup counters were read
    assert_clean(tmp_path)


async def test_a_lone_task_on_a_2_cpu_2_slot_node_gets_one_core_not_two(tmp_path: Path) -> None:
    """One CPU-bound task alone on a node with 2 cpus and 2 slots, at dilation 4: its worker runs
    in slot 0's group and uses at most one core's share, 1 / 4 of a host core (before the
    per-slot groups it could use the node's 2 / 4); slot 1's group held no one back."""
    try:
        cgroups = detect()
    except CgroupUnavailable as exc:
        pytest.skip(str(exc))
    result, cpu_s = await run_a_lone_task(cgroups, tmp_path, run_id=None)
    assert cpu_s <= 1.0 * 1.1
    assert result.summary["fidelity"]["slots_throttled_share"] is not None  # the slots' counters too


async def test_a_dilated_run_stretches_trace_time_and_reports_emulated_seconds(tmp_path: Path) -> None:
    require_cgroups()
    scenario = make_scenario(
        cluster={"reserved": {"count": 1, "slots": 2}, "transient": 0},
        jobs=[{"workload": "sleep", "tasks": 2, "duration": "1s", "submit_at": "1s"}],
        fidelity={"mode": "faithful", "dilation": 2},
    )
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    summary = result.summary
    assert (summary["dilation"], summary["fidelity_mode"]) == (2.0, "faithful")
    assert summary["wall"]["mean_jct_wall_s"] >= 2.0  # each task slept 1 trace second, stretched to 2
    assert summary["mean_jct_s"] == pytest.approx(summary["wall"]["mean_jct_wall_s"] / 2, abs=1e-3)
    [job] = load_run(tmp_path).jobs
    assert job.jct_s == pytest.approx(summary["mean_jct_s"], abs=1e-3)
    assert 0.99 <= job.submit_s < 2.0  # submitted at 2 wall seconds (1 emulated), or a bit later


async def test_an_oversubscribed_unisolated_run_is_flagged_as_distorted(tmp_path: Path) -> None:
    """More spinning tasks than the host has cores: the monitor sees the saturation."""
    cores = len(os.sched_getaffinity(0))
    scenario = make_scenario(
        cluster={"reserved": {"count": 1, "slots": cores + 1}, "transient": {"count": 1, "slots": cores + 1}},
        jobs=[{"workload": "sleep", "tasks": 2 * cores + 2, "duration": "3s", "cpu_bound": True}],
    )
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    fidelity = result.summary["fidelity"]
    assert fidelity["task_time_saturated_share"] > 0.5
    assert fidelity["distorted"]
    assert "of task time ran on a saturated host" in fidelity["problems"][0]
    assert fidelity["launch_ack_mean_s"] is not None and fidelity["host_samples"] > 0
    markdown, _ = write_report(tmp_path)
    report = markdown.read_text()
    assert "## Fidelity" in report and "Distorted run: " in report
