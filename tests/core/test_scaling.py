"""The autoscaler in the core: launches, provisioning, join times, wake-ups, capacity, notices.

CloudCoaster over four reserved servers (two general, two short-only: N = 2; p = 0.5
replaces one on-demand server, r = 2 gives K = 2 transient servers), a provisioning delay
of 20 s of trace time (2 run seconds at time_scale 10). A long job of two tasks occupies
both general servers: l_r = 2/3 > 0.4, so the autoscaler launches both transient
servers. No broker, no process: events in at chosen times, commands out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from master.core import commands as cmd
from master.core.events import FromNode, Round
from master.core.scaling import MAX_ROUNDS, AutoscalerUnsettled
from master.policy_setup import make_autoscaler
from testbed.api.policy import Autoscaler, ClusterSnapshot, Drain, ScaleDecision
from tests.support.coaster import coaster_scenario, write_trace
from tests.support.driver import Driver, up

DELAY = 2.0
"""The provisioning delay in run seconds."""


def coaster(tmp_path: Path, **fields: Any) -> Driver:
    trace = write_trace(tmp_path / "jobs.tr", ["0 2 165 180 150"])  # two long tasks
    scenario = coaster_scenario(trace, **fields)
    driver = Driver(scenario, autoscaler=make_autoscaler(scenario))
    driver.boot()
    driver.do(Round())
    return driver


def actions(driver: Driver) -> list[tuple[str, str | None]]:
    return [(e["action"], e["node"]) for e in driver.events("autoscale")]


def started(driver: Driver) -> list[str]:
    return [c.node_id for c in driver.log if isinstance(c, cmd.StartNode) and c.node_class == "transient"]


def join(driver: Driver, node_id: str, at: float) -> None:
    driver.do(FromNode(node_id, up(node_id, "transient", driver.core)), at=at)


def test_a_launch_counts_as_provisioning_until_the_node_is_up(tmp_path: Path) -> None:
    driver = coaster(tmp_path)
    scaling = driver.core.scaling
    assert actions(driver) == [
        ("drain", "reserved-3"),
        ("launch", None),
        ("launch", None),
        ("release", "reserved-3"),
    ]
    assert [c.node_id for c in driver.log if isinstance(c, cmd.ReleaseNode)] == ["reserved-3"]
    assert scaling.provisioning == 2 and started(driver) == []
    driver.do(Round())  # the same state: no more launches while these two provision
    assert len(actions(driver)) == 4
    driver.advance(DELAY)  # the delay is over: both start, still provisioning until they are up
    assert started(driver) == ["transient-0", "transient-1"] and scaling.provisioning == 2
    join(driver, "transient-0", 3.0)
    join(driver, "transient-1", 3.0)
    assert scaling.provisioning == 0
    driver.do(Round())
    assert driver.events("transient_servers")[-1] == {"in_service": 2, "draining": 0, "provisioning": 0}


def test_the_minimum_age_before_a_drain_counts_from_joining(tmp_path: Path) -> None:
    driver = coaster(tmp_path)
    driver.advance(DELAY)
    join(driver, "transient-0", 3.0)  # its process started at 2 s; it joined at 3 s
    join(driver, "transient-1", 3.0)
    driver.do(Round())
    for node_id, spec in list(driver.running().values()):  # the long load ends at 4 s
        driver.finish(node_id, spec)
    driver.do(Round(), at=4.0)
    assert [a for a, _ in actions(driver)].count("drain") == 1  # launched 2 s ago, but joined only 1 s ago
    driver.advance(3.0 + DELAY)  # a wake-up is set for when they are old enough (and a hair)
    assert [a for a, _ in actions(driver)].count("drain") == 1
    driver.advance(3.0 + DELAY + 0.001)  # drained, and released at once: they had nothing to finish
    last = actions(driver)[-4:]
    assert [a for a, _ in last] == ["drain", "drain", "release", "release"]
    assert {n for _, n in last} == {"transient-0", "transient-1"}
    released = {c.node_id for c in driver.log if isinstance(c, cmd.ReleaseNode)}
    assert released == {"reserved-3", "transient-0", "transient-1"}


def test_nodes_under_an_eviction_notice_are_replaced_by_the_autoscaler_not_the_chaos_rules(
    tmp_path: Path,
) -> None:
    storm = {"at": "50s", "evict": {"count": 1, "kind": "transient"}}
    chaos = {"transient": {"notice": "10s", "replace": True}, "storms": [storm]}
    driver = coaster(tmp_path, chaos=chaos)
    assert driver.core.chaos.rules.classes["transient"].replace is False  # the autoscaler's class now
    driver.advance(DELAY)
    join(driver, "transient-0", 3.0)
    join(driver, "transient-1", 3.0)
    driver.advance(5.0)  # the storm's notice: the autoscaler no longer counts the node
    ((victim, _),) = [(e["node"], e) for e in driver.events("eviction_notice")]
    driver.do(Round())
    assert actions(driver)[-1] == ("launch", None)
    assert victim not in {v.node_id for v in driver.core.scaling.snapshot().nodes}
    driver.advance(6.0)  # the kill: the chaos rules launch nothing; the autoscaler's launch starts
    assert [c.node_id for c in driver.log if isinstance(c, cmd.KillNode)] == [victim]
    driver.advance(5.0 + DELAY)
    assert started(driver) == ["transient-0", "transient-1", "transient-2"]
    assert not driver.events("node_replacing")


def test_a_launch_waits_for_capacity_and_a_refused_one_is_given_up(tmp_path: Path) -> None:
    outages = tmp_path / "outages.csv"
    outages.write_text("0s,30s\n")  # out until 30 s of trace time: 3 run seconds
    waits = coaster(tmp_path, chaos={"transient": {"capacity": {"trace": str(outages), "max_wait": "15s"}}})
    waits.advance(DELAY)  # 20 s of trace: 10 s to wait, within 15 s
    assert started(waits) == [] and waits.core.scaling.provisioning == 2
    assert [e["until_s"] for e in waits.events("launch_waiting")] == [3.0, 3.0]
    waits.advance(3.0)
    assert started(waits) == ["transient-0", "transient-1"]

    refused = coaster(tmp_path, chaos={"transient": {"capacity": {"trace": str(outages), "max_wait": "5s"}}})
    refused.advance(DELAY)
    assert [e["requested_s"] for e in refused.events("launch_refused")] == pytest.approx([DELAY, DELAY])
    assert started(refused) == []  # given up; the autoscaler's next decision asks again
    assert [a for a, _ in actions(refused)].count("launch") == 4


class _Insistent(Autoscaler):
    """Drains a node up, then asks again and again for the drain already done."""

    def decide(self, snapshot: ClusterSnapshot, provisioning: int) -> list[ScaleDecision]:
        return [Drain("reserved-1", "keeps asking")]


def test_an_autoscaler_that_never_settles_ends_the_run_naming_its_decisions(tmp_path: Path) -> None:
    """Was a warning (``still had decisions after 64 rounds``) and the run went on, deciding
    64 times after every round; now the run ends with the decisions that kept coming."""
    scenario = coaster_scenario(write_trace(tmp_path / "jobs.tr", ["0 2 165 180 150"]))
    driver = Driver(scenario, autoscaler=_Insistent())
    with pytest.raises(AutoscalerUnsettled) as raised:
        driver.boot()  # the autoscaler decides from time 0 on
    assert str(raised.value) == (
        f"the autoscaler still had decisions after {MAX_ROUNDS} rounds at {driver.now:.3f}s: "
        f"drain reserved-1 (keeps asking) x{MAX_ROUNDS}"
    )
