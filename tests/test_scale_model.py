"""The scale model: each node's shares under fidelity and dilation, and auto dilation."""

from __future__ import annotations

from pathlib import Path

import pytest

from master.shell.scale_model import NodeShares, class_flags, local_isolation, node_shares
from testbed.app.cli import main
from testbed.scenario.fidelity import auto_dilation, emulated
from testbed.scenario.schema import ScenarioError, parse_scenario
from testbed.settings.dilation import peak_cores, resolve_dilation
from tests.support.plugins import plugin_module


def scenario(fidelity: dict | None = None, **cluster):
    data = {
        "name": "s",
        "cluster": {"reserved": {"count": 1, "slots": 2}, "transient": {"count": 3, "slots": 1}, **cluster},
        "jobs": [{"workload": "sort"}],
    }
    if fidelity is not None:
        data["fidelity"] = fidelity
    return parse_scenario(data)


def test_auto_dilation_is_the_smallest_factor_that_fits_the_host() -> None:
    assert auto_dilation(16, host=2, control_plane=0.5) == pytest.approx(10.67)
    assert auto_dilation(1, host=2, control_plane=0.5) == 1.0  # never below 1: no speed-up
    assert auto_dilation(3, host=4, control_plane=1) == 1.0


def test_peak_cores_count_every_node_class_and_the_autoscalers_budget() -> None:
    assert peak_cores(scenario()) == 2 + 3
    coaster = parse_scenario({
        "name": "c",
        "cluster": {"reserved": {"count": 10, "slots": 1}, "transient": 0},
        "policy": {"scheduler": "eagle", "autoscaler": "cloudcoaster", "options": {"cloudcoaster": {"r": 2}}},
        "jobs": [{"workload": "sleep"}],
    })  # fmt: skip
    assert peak_cores(coaster) > 10  # its transient budget runs on top of the reserved nodes


BUDGETED = """
from testbed.api import Autoscaler


class Budgeted(Autoscaler):
    def __init__(self, most: int = 0) -> None:
        self.most = most

    @classmethod
    def budget_before_run(cls, options, scenario):
        return options.get("most", 0)

    def decide(self, snapshot, provisioning):
        return []
"""


def test_a_plugin_autoscalers_budget_before_run_is_sized_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    module = plugin_module(tmp_path, BUDGETED, "budget_", monkeypatch, request)
    monkeypatch.syspath_prepend(str(tmp_path))
    name = f"{module}:Budgeted"
    plain = scenario()
    policy = {"autoscaler": name, "options": {name: {"most": 4}}}
    budgeted = plain.model_copy(update={"policy": plain.policy.model_validate(policy)})
    assert peak_cores(budgeted) == peak_cores(plain) + 4 * plain.cluster.transient.cores


def test_resolve_fixes_auto_for_the_host_and_stretches_trace_time() -> None:
    resolved = resolve_dilation(scenario({"mode": "faithful", "dilation": "auto"}), 2)
    assert resolved.fidelity.dilation == pytest.approx(5 / 1.5, abs=0.01)
    assert resolved.trace(1.0) == pytest.approx(resolved.fidelity.factor)
    assert resolved.timeout_s == pytest.approx(600 * resolved.fidelity.factor)


def test_faithful_shares_divide_cores_and_bandwidth_by_the_dilation() -> None:
    s = scenario({"mode": "faithful", "dilation": 4}, reserved={"count": 1, "slots": 2, "disk_mb_s": 100})
    shares = NodeShares.of(s, s.cluster.reserved)
    assert (shares.cpus, shares.network_mbps, shares.disk_mb_s) == (0.5, 250, 25)
    assert shares.agent_flags() == ["--network-mbps", "250", "--disk-mb-s", "25"]


def test_a_slowed_node_gets_its_quota_and_token_buckets_divided_by_its_factor() -> None:
    """``chaos.slowdown``: reserved-0 3x slower at dilation 4; the others at their class's shares."""
    s = scenario({"mode": "faithful", "dilation": 4}, reserved={"count": 2, "slots": 2, "disk_mb_s": 120})
    s = s.model_copy(update={"chaos": s.chaos.model_validate({"slowdown": {"nodes": {"reserved-0": 3}}})})
    slowed, nominal = node_shares(s, "reserved-0", "reserved"), node_shares(s, "reserved-1", "reserved")
    assert nominal == NodeShares.of(s, s.cluster.reserved) == NodeShares(0.5, 250, 30)
    assert (slowed.cpus, slowed.network_mbps, slowed.disk_mb_s) == pytest.approx((0.5 / 3, 250 / 3, 10))
    flags = class_flags(s, "reserved", "mqtt://b", "reserved-0")
    assert flags[flags.index("--network-mbps") + 1] == "83.3333"
    assert flags[flags.index("--disk-mb-s") + 1] == "10"


def test_an_unisolated_run_limits_nothing_but_a_users_docker_cpus() -> None:
    s = scenario(reserved={"count": 1, "cpus": 1.5})
    assert NodeShares.of(s, s.cluster.reserved) == NodeShares(1.5, None, None)
    assert NodeShares.of(s, s.cluster.transient) == NodeShares(None, None, None)
    assert local_isolation(s) is None


def test_dilation_without_isolation_is_one_line_naming_the_field() -> None:
    with pytest.raises(ScenarioError) as info:
        scenario({"dilation": 2})
    [line] = info.value.problems
    assert line.startswith("<scenario>: fidelity:") and "mode: faithful" in line


def test_a_faithful_run_without_cgroups_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TESTBED_CGROUP", str(tmp_path / "not-a-dir" / "x"))
    (tmp_path / "not-a-dir").write_text("")
    path = tmp_path / "f.yaml"
    path.write_text("name: f\nfidelity: {mode: faithful}\njobs: [{workload: sort}]\n")
    assert main(["run", str(path), "--out", str(tmp_path / "run")]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "fidelity.mode: faithful" in line and "unisolated" in line
    assert not (tmp_path / "run").exists()


def test_emulated_times_divide_durations_but_not_rates_or_counts() -> None:
    record = {"t": 8.0, "jct_s": "4.0", "disk_mb_s": 100.0, "tasks": "4", "queue_s": "", "seconds": 3}
    assert emulated(record, 4.0) == {
        "t": 2.0, "jct_s": "1.0", "disk_mb_s": 100.0, "tasks": "4", "queue_s": "", "seconds": 0.75
    }  # fmt: skip
    assert emulated(record, 1.0) == record


def test_a_workloads_mean_jct_is_a_time_and_its_relaunched_ratio_is_not() -> None:
    # sweep.csv's per-workload JCTs were wall seconds beside an emulated mean_jct_s
    record = {"mean_jct_s_pagerank": 32.4, "relaunched_ratio_pagerank": 0.5}
    assert emulated(record, 6.0) == {"mean_jct_s_pagerank": 5.4, "relaunched_ratio_pagerank": 0.5}


def test_a_dilated_task_model_predicts_a_slower_task_that_spills_the_same() -> None:
    from testbed.workloads.task_model import TaskModel

    model = TaskModel(ideal_memory_mb=100, ideal_duration_s=2.0, disk_rate_mb_s=50.0)
    slow = model.dilated(4)
    assert (slow.ideal_duration_s, slow.disk_rate_mb_s, slow.ideal_memory_mb) == (8.0, 12.5, 100)


def test_yarn_me_disk_budget_is_dilated_with_the_nodes_disks() -> None:
    from master.schedulers.yarn_me import dilated_disk_budget

    s = scenario({"mode": "faithful", "dilation": 4})
    assert dilated_disk_budget({"elastic_disk_mb_s": 100}, s.fidelity.factor) == {"elastic_disk_mb_s": 25}
    assert dilated_disk_budget({}, scenario().fidelity.factor) == {}
