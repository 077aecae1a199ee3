"""CPU cgroups of local nodes: v2's file writing on a hierarchy in a tmp dir, v1 for real here."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from testbed.node.cgroups import (
    PERIOD_US,
    CgroupUnavailable,
    CpuCgroups,
    _mount_points,
    _probe,
    agent_group,
    control_plane,
    detect,
    hierarchy_path,
    join,
    own_group,
    slot_group,
    slots_group,
)
from tests.support.cgroups import busy_in_group


def test_v2_node_group_gets_cpu_max_and_its_parents_delegate_the_cpu_controller(tmp_path: Path) -> None:
    cgroups = CpuCgroups(2, tmp_path / "testbed")
    group = cgroups.create("run-1", "transient-0", 0.25, 1)
    assert group == tmp_path / "testbed" / "run-1" / "transient-0"
    assert (group / "cpu.max").read_text() == f"25000 {PERIOD_US}"
    assert (tmp_path / "testbed" / "cgroup.subtree_control").read_text() == "+cpu"
    assert (tmp_path / "testbed" / "run-1" / "cgroup.subtree_control").read_text() == "+cpu"


def test_v2_each_slot_gets_one_emulated_core_at_most_the_nodes_and_the_agent_a_leaf(tmp_path: Path) -> None:
    """A 2-cpu node at dilation 4: 0.5 core for the node, 0.25 (one core / 4) per slot; the node
    hands cpu to its children, so the agent lives in a leaf of its own (v2 allows no process in
    a group that does). A 0.5-cpu node's one slot gets no quota of its own: the node's 0.125 is
    less than a core's."""
    cgroups = CpuCgroups(2, tmp_path / "testbed", core=0.25)
    node = cgroups.create("run-1", "reserved-0", 0.5, 2)
    assert (node / "cpu.max").read_text() == f"50000 {PERIOD_US}"
    assert (node / "cgroup.subtree_control").read_text() == "+cpu"
    assert agent_group(node) == node / "agent" and agent_group(node).is_dir()
    assert not (agent_group(node) / "cpu.max").exists()  # the agent is held by the node's quota only
    for slot in (0, 1):
        assert (slot_group(node, slot) / "cpu.max").read_text() == f"25000 {PERIOD_US}"
    assert not slot_group(node, 2).exists()
    assert not (slots_group(node) / "cpu.max").exists()  # the slots' parent: a slowed node's tasks' quota
    small = cgroups.create("run-1", "transient-0", 0.125, 1)
    assert slot_group(small, 0).is_dir() and not (slot_group(small, 0) / "cpu.max").exists()


def test_a_slowed_nodes_tasks_and_slots_get_their_cores_divided_by_its_factor_not_its_agent(
    tmp_path: Path,
) -> None:
    """A 2-cpu 2-slot node 4x slower at dilation 1: its tasks 0.5 core together and 0.25 each, so a
    lone task is slowed 4x too (the tasks' quota alone would give it 0.5: 2x); the node keeps its
    2 cores, which its agent (its start, its serving) runs under: ``chaos.slowdown`` slows tasks."""
    cgroups = CpuCgroups(2, tmp_path / "testbed", core=1.0)
    node = cgroups.create("run-1", "reserved-0", 2.0, 2, slowdown=4)
    assert (node / "cpu.max").read_text() == f"200000 {PERIOD_US}"
    assert not (agent_group(node) / "cpu.max").exists()
    assert (slots_group(node) / "cpu.max").read_text() == f"50000 {PERIOD_US}"
    assert (slots_group(node) / "cgroup.subtree_control").read_text() == "+cpu"
    for slot in (0, 1):
        assert slot_group(node, slot).parent == slots_group(node)
        assert (slot_group(node, slot) / "cpu.max").read_text() == f"25000 {PERIOD_US}"


def test_v2_stats_read_throttling_in_microseconds(tmp_path: Path) -> None:
    (tmp_path / "cpu.stat").write_text(
        "usage_usec 900000\nuser_usec 800000\nsystem_usec 100000\n"
        "nr_periods 40\nnr_throttled 30\nthrottled_usec 2500000\n"
    )
    stats = CpuCgroups(2, tmp_path).stats(tmp_path)
    assert (stats.periods, stats.throttled_periods, stats.throttled_s) == (40, 30, 2.5)
    assert stats.throttled_ratio == 0.75


def test_v1_stats_read_throttling_in_nanoseconds(tmp_path: Path) -> None:
    (tmp_path / "cpu.stat").write_text("nr_periods 10\nnr_throttled 2\nthrottled_time 500000000\n")
    stats = CpuCgroups(1, tmp_path).stats(tmp_path)
    assert (stats.periods, stats.throttled_periods, stats.throttled_s) == (10, 2, 0.5)


def test_a_group_with_a_process_in_it_is_not_removed(tmp_path: Path) -> None:
    group = tmp_path / "node"
    group.mkdir()
    (group / "cgroup.procs").write_text("1234\n")
    assert not CpuCgroups.remove(group)
    assert group.exists()


def test_mount_table_names_the_v1_cpu_and_the_v2_mounts() -> None:
    table = (
        "cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0\n"
        "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n"
        "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n"
    )
    assert _mount_points(table) == (Path("/sys/fs/cgroup/cpu"), Path("/sys/fs/cgroup/unified"))
    assert _mount_points("proc /proc proc rw 0 0\n") == (None, None)


def test_a_group_is_named_from_its_hierarchys_root_as_an_engines_cgroup_parent() -> None:
    table = "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
    assert hierarchy_path(Path("/sys/fs/cgroup/cpu/testbed/r/n"), table) == "/testbed/r/n"
    assert hierarchy_path(Path("/sys/fs/cgroup/unified/user/testbed/r/n"), table) == "/user/testbed/r/n"
    with pytest.raises(ValueError):
        hierarchy_path(Path("/tmp/r/n"), table)


@pytest.mark.parametrize("version", [1, 2])
def test_a_containers_user_owns_only_the_cgroup_procs_it_must_write(tmp_path: Path, version: int) -> None:
    """v1: the leaves' (the target of a move); v2: the node's too (the common ancestor)."""
    if os.geteuid() != 0:
        pytest.skip("chown needs root")
    group = replace(CpuCgroups(version, tmp_path / "testbed"), core=0.5).create("r", "n", 1.0, 2)
    for leaf in (agent_group(group), slot_group(group, 0), slot_group(group, 1), group):
        (leaf / "cgroup.procs").touch()
    CpuCgroups(version, tmp_path / "testbed").delegate(group, 10001)
    owned = {path.parent.name for path in group.rglob("*") if path.stat().st_uid == 10001}
    assert owned == {"agent", "slot-0", "slot-1", *(["n"] if version == 2 else [])}


def test_no_controller_is_one_line_saying_how_to_enable_it(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("TESTBED_CGROUP", raising=False)
    mounts = tmp_path / "mounts"
    mounts.write_text("proc /proc proc rw 0 0\n")
    with pytest.raises(CgroupUnavailable) as info:
        detect(mounts)
    assert "\n" not in str(info.value)
    assert "run as root" in str(info.value) and "fidelity.mode: unisolated" in str(info.value)


def test_an_unwritable_delegated_subtree_is_refused(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TESTBED_CGROUP", str(tmp_path / "missing" / "deeper"))
    (tmp_path / "missing").write_text("a file, not a directory")
    with pytest.raises(CgroupUnavailable) as info:
        detect()
    assert "cannot make a cgroup under" in str(info.value)


def _v1_or_skip() -> CpuCgroups:
    try:
        cgroups = detect()
    except CgroupUnavailable as exc:
        pytest.skip(str(exc))
    if cgroups.version != 1:
        pytest.skip("tests the v1 controller of this machine")
    return cgroups


def test_v1_quota_throttles_a_cpu_bound_process_to_its_share() -> None:
    cgroups = _v1_or_skip()
    run = f"test-{os.getpid()}"
    group = cgroups.create(run, "quarter", 0.25, 1)
    try:
        wall = busy_in_group(slot_group(group, 0), 0.3)
        stats = cgroups.stats(group)
    finally:
        assert cgroups.remove(group)
        cgroups.remove_run(run)
    assert stats.periods > 0  # the quota was enforced on it (a loaded host may leave it under quota)
    assert wall > 0.3 / 0.25 * 0.9  # a quarter core cannot burn 0.3 s of CPU much faster than in 1.2 s


@pytest.mark.e2e
def test_a_quarter_core_is_throttled_where_a_full_core_is_not() -> None:
    """The same CPU-bound work: at 0.25 core it runs at most a quarter of the wall time, at
    1 core it is not held back (CFS may still throttle a millisecond when the task moves
    between CPUs mid-period: the bound is on time held, not on periods touched). How much
    slower it is in wall time depends on the host's load, which may keep both under their
    quotas: measured in docs/fidelity.md."""
    cgroups = _v1_or_skip()
    run = f"test-{os.getpid()}"
    quarter, full = cgroups.create(run, "quarter", 0.25, 1), cgroups.create(run, "full", 1.0, 1)
    try:
        slow = busy_in_group(slot_group(quarter, 0), 0.5)
        busy_in_group(slot_group(full, 0), 0.5)
        held, free = cgroups.stats(quarter), cgroups.stats(full)
    finally:
        for group in (quarter, full):
            assert cgroups.remove(group)
        cgroups.remove_run(run)
    assert slow >= 0.5 / 0.25 * 0.9
    assert held.periods > 0
    assert free.throttled_s < 0.025  # 5% of its 0.5 s of work; a quarter core is held ~1.5 s


def _version_or_skip(version: int) -> CpuCgroups:
    """This machine's controller of ``version`` as root, for real (whichever ``detect`` prefers)."""
    v1, v2 = _mount_points(Path("/proc/self/mounts").read_text())
    mount = v1 if version == 1 else v2
    if mount is None or os.geteuid() != 0:
        pytest.skip(f"needs root and a cgroup v{version} cpu controller")
    if version == 2 and "cpu" not in (mount / "cgroup.controllers").read_text().split():
        pytest.skip(f"the cpu controller is not in {mount}'s cgroup v2 hierarchy (bound to v1 here)")
    try:
        return _probe(CpuCgroups(version, mount / "testbed"))
    except CgroupUnavailable as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("version", [1, 2])
def test_a_lone_task_on_a_2_cpu_2_slot_node_gets_one_core_not_the_nodes_two(version: int) -> None:
    """Dilation 4: the node has 2 / 4 = 0.5 core, each slot 1 / 4. One CPU-bound process alone in
    slot 0 burns 0.3 s of CPU in no less than 1.2 s (one core's share; with the node's quota
    alone it took 0.6 s); the node's group holds it back hardly at all (0.25 < 0.5). On v2
    the node hands cpu to its slots, so a process may live in its leaves only."""
    cgroups = replace(_version_or_skip(version), core=0.25)
    run = f"test-{os.getpid()}"
    node = cgroups.create(run, "reserved-0", 0.5, 2)
    try:
        wall = busy_in_group(slot_group(node, 0), 0.3)
        slot, idle, whole = (cgroups.stats(g) for g in (slot_group(node, 0), slot_group(node, 1), node))
    finally:
        assert cgroups.remove(node)
        cgroups.remove_run(run)
    assert wall > 0.3 / 0.25 * 0.9
    assert slot.periods > 0 and idle.throttled_periods == 0  # a loaded host may keep it under quota
    assert whole.throttled_s < 0.05  # a moment as the task moves between CPUs; the slot holds it ~0.9 s


def test_v1_a_node_with_a_process_in_a_slot_is_not_removed_until_it_is_gone() -> None:
    cgroups = _v1_or_skip()
    run = f"test-{os.getpid()}"
    node = cgroups.create(run, "reserved-0", 1.0, 2)
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)"],
        preexec_fn=lambda: join(slot_group(node, 1), os.getpid()),
    )
    try:
        assert not cgroups.remove(node)
        assert slot_group(node, 1).is_dir() and agent_group(node).is_dir()
    finally:
        process.kill()
        process.wait()
    for _ in range(100):  # a killed process leaves its group a moment later
        if cgroups.remove(node):
            break
        time.sleep(0.05)
    assert not node.exists()
    cgroups.remove_run(run)


def test_own_group_reads_this_process_line_of_each_version() -> None:
    table = "9:name=systemd:/\n2:cpuacct:/\n1:cpu:/batch/job-3\n0::/user.slice/session-2.scope\n"
    mounts = "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\ncgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"
    assert own_group(1, table, mounts) == Path("/sys/fs/cgroup/cpu/batch/job-3")
    assert own_group(2, table, mounts) == Path("/sys/fs/cgroup/unified/user.slice/session-2.scope")
    assert own_group(1, "0::/\n", "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n") is None


def test_the_control_plane_runs_in_the_runs_top_weight_group_and_comes_back() -> None:
    cgroups = _v1_or_skip()
    run = f"test-{os.getpid()}"
    before = own_group(cgroups.version)
    with control_plane(cgroups, run) as prioritised:
        inside = own_group(cgroups.version)
        child = subprocess.run(["cat", "/proc/self/cgroup"], capture_output=True, text=True, check=True)
    assert prioritised
    assert inside == cgroups.run_dir(run) / "control"
    assert f":cpu:/{cgroups.base.name}/{run}/control" in child.stdout  # what it starts is born there
    assert (cgroups.base / "cpu.shares").read_text().strip() == "262144"
    assert own_group(cgroups.version) == before
    assert not cgroups.run_dir(run).exists()


def test_a_run_inside_a_run_stays_in_the_outer_runs_group() -> None:
    cgroups = _v1_or_skip()
    outer, inner = f"test-{os.getpid()}-outer", f"test-{os.getpid()}-inner"
    with control_plane(cgroups, outer):
        with control_plane(cgroups, inner) as prioritised:
            assert own_group(cgroups.version) == cgroups.run_dir(outer) / "control"
        assert not prioritised and not cgroups.run_dir(inner).exists()
        assert own_group(cgroups.version) == cgroups.run_dir(outer) / "control"
    assert not cgroups.run_dir(outer).exists()
