"""``chaos.slowdown.colocation: ec2-2008``: nodes laid over LATE's Table 3 (243 VMs on 99 hosts),
each slowed by its host's disk rate in Table 2, from the seed; listed by the plan; journaled."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from master.chaos.plan import format_plan
from testbed.chaosmodels.colocation import place
from testbed.chaosmodels.slowdown import slowdown_factor
from tests.support.chaos import scenario
from tests.support.sim import events, simulate

TABLE_3_HOSTS = {1: 40, 2: 20, 3: 15, 4: 10, 5: 8, 6: 4, 7: 2}
TABLE_2_MB_S = {1: 61.8, 2: 56.5, 3: 53.6, 4: 46.4, 5: 34.2, 6: 25.4, 7: 24.8}
COLOCATED = {"slowdown": {"colocation": "ec2-2008"}}


@pytest.mark.parametrize("seed", [1, 7, 2026])
def test_243_nodes_share_hosts_as_table_3_says(seed: int) -> None:
    places = [place(seed, "transient", ordinal) for ordinal in range(243)]
    vms_per_host = Counter(p.host for p in places)
    assert len(vms_per_host) == 99
    assert Counter(vms_per_host.values()) == TABLE_3_HOSTS  # hosts with 1, 2, ... 7 of the nodes
    assert all(p.vms == vms_per_host[p.host] for p in places)
    sc = scenario(COLOCATED, transient=243, reserved=0, seed=seed)
    factors = Counter(
        slowdown_factor(sc.chaos.slowdown, seed, f"transient-{i}", "transient") for i in range(243)
    )
    assert factors == {61.8 / TABLE_2_MB_S[vms]: vms * hosts for vms, hosts in TABLE_3_HOSTS.items()}


def test_the_layout_is_the_seeds_and_each_243_nodes_take_a_fresh_copy_of_the_table() -> None:
    first = [place(1, "transient", i) for i in range(486)]
    assert first == [place(1, "transient", i) for i in range(486)]
    assert first[:243] != [place(2, "transient", i) for i in range(243)]
    assert [p.vms for p in first[:243]] != [p.vms for p in first[243:]]  # shuffled again
    assert {p.host for p in first[243:]} == set(range(99, 198))
    assert Counter(Counter(p.host for p in first[243:]).values()) == TABLE_3_HOSTS
    assert [place(1, "reserved", i) for i in range(243)] != first[:243]  # a class has its own layout


def test_a_class_factor_multiplies_the_hosts_and_a_nodes_own_entry_stands() -> None:
    chaos = {"slowdown": {"colocation": "ec2-2008", "transient": {"factor": 2}, "nodes": {"transient-0": 8}}}
    spec = scenario(chaos).chaos.slowdown
    assert slowdown_factor(spec, 1, "transient-0", "transient") == 8.0
    for ordinal in range(1, 30):
        shared = place(1, "transient", ordinal).factor
        assert slowdown_factor(spec, 1, f"transient-{ordinal}", "transient") == pytest.approx(2 * shared)
    assert slowdown_factor(scenario({}).chaos.slowdown, 1, "transient-0", "transient") == 1.0


def test_the_plan_lists_the_hosts_and_each_nodes_factor() -> None:
    sc = scenario(COLOCATED, transient=243, reserved=0, seed=4)
    lines = format_plan([], sc).splitlines()
    assert (
        "  colocation ec2-2008, transient: 243 node(s) on 99 host(s); hosts by VMs on them (LATE's "
        "Table 3) 1:40 2:20 3:15 4:10 5:8 6:4 7:2; by nodes of ours on them 1:40 2:20 3:15 4:10 5:8 6:4 7:2"
    ) in lines
    sevens = [f"transient-{i}" for i in range(243) if place(4, "transient", i).vms == 7]
    assert f"  factor 2.49194: 14 node(s): {', '.join(sevens[:20])}" in lines
    few = format_plan([], scenario(COLOCATED, transient=10, reserved=0, seed=4)).splitlines()
    (line,) = [line for line in few if "colocation" in line]
    assert line.startswith("  colocation ec2-2008, transient: 10 node(s) on ")  # others' VMs on their hosts


def test_a_run_journals_each_nodes_colocated_factor(tmp_path: Path) -> None:
    cluster = {"reserved": 0, "transient": {"count": 12, "slots": 1}}
    simulate(
        tmp_path, cluster=cluster, jobs=[{"workload": "sleep", "tasks": 4, "duration": "1s"}], chaos=COLOCATED
    )
    drawn = {e["node"]: e["factor"] for e in events(tmp_path / "run", "slowdown_drawn")}
    assert drawn == {f"transient-{i}": place(3, "transient", i).factor for i in range(12)}
    assert len(set(drawn.values())) > 1
