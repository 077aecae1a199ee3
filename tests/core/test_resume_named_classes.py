"""A resumed run of named node classes (issue #47): ``recover`` reads each class's ordinals
from the journal's node ids, the crash ends each node with its class's name and price, and the
resumed core starts each class's nodes under its next ordinals (a class the run never used at 0)."""

from __future__ import annotations

from pathlib import Path

from master.core import commands as cmd
from tests.support.crash import crash, resumed
from tests.support.driver import Driver
from tests.support.scenarios import make_scenario

CLUSTER = {
    "classes": {
        "base": {"kind": "reserved", "count": 1},
        "spot-a": {"kind": "transient", "count": 2, "price_per_hour": 0.12},
        "spot-b.2x": {"kind": "transient", "count": 1, "slots": 2},
        "spot-c": {"kind": "transient", "count": 0},
    },
    "heartbeat_interval": 0.2,
    "heartbeat_timeout": 2,
}


def test_a_resumed_named_class_run_goes_on_with_each_classes_ordinals(tmp_path: Path) -> None:
    scenario = make_scenario(cluster=CLUSTER)
    first = Driver(scenario)
    first.boot()
    first.advance(5.0)
    crash(first, tmp_path)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "spot-b.2x-6.log").write_text("")  # a node launched, never journaled up

    again = resumed(scenario, tmp_path)
    started = [c.node_id for c in again.log if isinstance(c, cmd.StartNode)]
    assert started == ["base-1", "spot-a-2", "spot-a-3", "spot-b.2x-7"]
    assert again.core.launcher.ordinals["spot-c"] == 0
    crashed = {e["node"]: (e["class"], e["price_per_hour"]) for e in again.events("node_lost")}
    assert crashed == {
        "base-0": ("base", 1.0),
        "spot-a-0": ("spot-a", 0.12),
        "spot-a-1": ("spot-a", 0.12),
        "spot-b.2x-0": ("spot-b.2x", 0.3),
    }
