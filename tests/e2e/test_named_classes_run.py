"""Named node classes on local processes: three classes of two kinds, each node started with its
class's slots, memory and CPU quota (faithful, in its cgroup), real SIGKILL evictions of the
transient-kind classes only, each lost node replaced in its own class; outputs stay exact."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from master.chaos.plan import plan_evictions
from master.shell.run import run_scenario
from testbed.node.cgroups import detect
from tests.support.cgroups import require_cgroups
from tests.support.runs import assert_clean, assert_exact
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

TIME_SCALE, DELAY_S = 60, 30.0
"""Trace seconds per wall second; a lost transient node's replacement's delay (trace seconds)."""
SPOT = {"lifetime": "high", "replace": True, "provisioning_delay": f"{DELAY_S:g}s"}


def shape(kind: str, count: int, slots: int, cpus: float, memory_mb: int, **more: Any) -> dict[str, Any]:
    return {"kind": kind, "count": count, "slots": slots, "cpus": cpus, "memory_mb": memory_mb, **more}


CLASSES = {
    "base": shape("reserved", 1, 2, 0.5, 2048),
    "spot-big": shape("transient", 2, 2, 0.5, 2048, chaos=SPOT),
    "spot-small": shape("transient", 2, 1, 0.25, 1024, chaos=SPOT),
}
LAST_SUBMIT_S = 120.0
"""The second job's submission (trace seconds): the run lives at least until then."""
JOBS = [
    {"workload": "wordcount", "size_mb": 6, "maps": 6, "reduces": 3},
    {"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 2, "submit_at": f"{LAST_SUBMIT_S:g}s"},
]


def events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def flag(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


async def test_three_named_classes_run_locally_with_their_shapes_evictions_and_replacements(
    tmp_path: Path,
) -> None:
    require_cgroups()
    cluster = {"classes": CLASSES, "heartbeat_interval": 0.2, "heartbeat_timeout": 2}
    faithful = {"mode": "faithful"}
    scenario = make_scenario(seed=7, time_scale=TIME_SCALE, jobs=JOBS, cluster=cluster, fidelity=faithful)
    cgroups, seen = detect(), {}

    def at_node_up(master: Any, record: dict[str, Any]) -> None:
        """Each agent's command line and its node's CPU quota, read while it is up."""
        if record["event"] == "node_up":
            command = Path(f"/proc/{record['pid']}/cmdline").read_text().split("\0")
            seen[record["node"]] = (command, cpu_quota(cgroups.run_dir(master.run_id) / record["node"]))

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=at_node_up)
    assert result.ok, result.summary
    assert_exact(scenario, tmp_path)
    record = events(tmp_path)
    classes = {e["node"]: e["class"] for e in record if e["event"] == "node_launching"}
    assert set(classes.values()) == set(CLASSES)
    assert all(split_id(node)[0] == name for node, name in classes.items())  # ids read NAME-<ordinal>
    for node, (command, quota) in seen.items():  # each node has its class's shape
        spec = CLASSES[classes[node]]
        assert flag(command, "--node-class") == spec["kind"], node  # the agent announces its kind
        assert (int(flag(command, "--slots")), int(flag(command, "--memory-mb"))) == (
            spec["slots"], spec["memory_mb"]
        ), node  # fmt: skip
        assert quota == pytest.approx(spec["cpus"] / scenario.fidelity.factor), node
    assert_evictions_as_planned(scenario, tmp_path, record)
    assert_clean(tmp_path)


def assert_evictions_as_planned(scenario: Any, run_dir: Path, record: list[dict[str, Any]]) -> None:
    """Every planned eviction of an initial node before the last submission happened, each
    eviction is the plan's, of a transient-kind class, and each lost node's replacement (due
    before the last submission) is a node of its class, under the class's next ordinal."""
    evicted = list(csv.DictReader((run_dir / "evictions.csv").open()))
    planned = {p.node_id: p for p in plan_evictions(scenario, horizon_s=3600)}
    due = {
        node for node, p in planned.items()
        if p.trace_s < LAST_SUBMIT_S and p.ordinal < CLASSES[p.node_class]["count"]
    }  # fmt: skip
    assert due, "the plan evicts no initial node before the last submission: choose another seed"
    assert due <= {row["node_id"] for row in evicted}
    for row in evicted:
        assert CLASSES[row["node_class"]]["kind"] == "transient", row
        assert float(row["lifetime_trace_s"]) == pytest.approx(planned[row["node_id"]].lifetime_s, abs=1e-3)
    launched = [e["node"] for e in record if e["event"] == "node_launching"]
    lost = [e for e in record if e["event"] == "node_lost" and e["reason"] == "evicted"]
    for name, spec in CLASSES.items():
        of_class = [e for e in lost if e["class"] == name]
        replaced = [n for n in launched if split_id(n)[0] == name and split_id(n)[1] >= spec["count"]]
        early = [e for e in of_class if e["t"] * TIME_SCALE + DELAY_S < LAST_SUBMIT_S]
        assert len(early) <= len(replaced) <= len(of_class), name
        assert replaced == [f"{name}-{spec['count'] + i}" for i in range(len(replaced))], name


def split_id(node_id: str) -> tuple[str, int]:
    name, ordinal = node_id.rsplit("-", 1)
    return name, int(ordinal)


def cpu_quota(group: Path) -> float:
    """A cgroup's CPU quota in cores (v1's cfs files, or v2's cpu.max)."""
    if (group / "cpu.max").exists():
        quota, period = (group / "cpu.max").read_text().split()
        return int(quota) / int(period)
    quota_us = int((group / "cpu.cfs_quota_us").read_text())
    return quota_us / int((group / "cpu.cfs_period_us").read_text())
