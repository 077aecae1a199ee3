"""LATE's straggler recipe for real (``chaos.slowdown.straggler: processes``, faithful mode): a
node 3x slower keeps its quota and gets busy loops and a paced disk writer beside its tasks, in
a leaf of its group weighted twice its slot's: its spinning tasks got about a third of its core
by the kernel's accounting, the full-speed node's more; a sort across both nodes stays exact,
and no straggler process outlives the run."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from master.shell.run import run_scenario
from tests.support.cgroups import require_cgroups
from tests.support.runs import assert_clean, assert_exact
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

FACTOR = 3


def cpu_per_wall(tasks: list[dict[str, str]]) -> float:
    cpu = sum(float(t["cpu_s"]) for t in tasks)
    return cpu / sum(float(t["end_wall_s"]) - float(t["start_wall_s"]) for t in tasks)


def stragglers_of(run_dir: Path) -> list[int]:
    """Live processes running ``testbed.node.stragglers`` for a node of this run."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"testbed.node.stragglers" in argv and any(str(run_dir).encode() in a for a in argv):
            found.append(int(proc.name))
    return found


async def test_straggler_processes_leave_a_slowed_nodes_tasks_a_third_of_its_core(tmp_path: Path) -> None:
    require_cgroups()
    node = {"count": 1, "slots": 1, "cpus": 1, "disk_mb_s": 50}
    scenario = make_scenario(
        cluster={"reserved": node, "transient": node, "heartbeat_interval": 0.2},
        jobs=[
            {"workload": "sort", "size_mb": 16, "maps": 4, "reduces": 2},
            {"workload": "sleep", "tasks": 4, "duration": "1.5s", "cpu_bound": True},
        ],
        fidelity={"mode": "faithful", "dilation": 1},
        chaos={"slowdown": {"nodes": {"reserved-0": FACTOR}, "straggler": "processes"}},
    )
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert {e["node"]: e["factor"] for e in events if e["event"] == "slowdown_drawn"} == {
        "reserved-0": FACTOR, "transient-0": 1.0
    }  # fmt: skip
    with open(tmp_path / "jobs.csv", newline="") as f:
        (spinning,) = [j["job_id"] for j in csv.DictReader(f) if j["workload"] == "sleep"]
    with open(tmp_path / "tasks.csv", newline="") as f:
        tasks = [t for t in csv.DictReader(f) if t["status"] == "succeeded" and t["job_id"] == spinning]
    slow = [t for t in tasks if t["node_id"] == "reserved-0"]
    fast = [t for t in tasks if t["node_id"] == "transient-0"]
    assert slow and fast, "both nodes ran spinning tasks"
    slowed, nominal = cpu_per_wall(slow), cpu_per_wall(fast)
    # CFS shares the node's one core 1 : 2 between its busy slot and the straggler leaf (+10%:
    # the weights hold over the scheduler's slices, not each instant)
    assert slowed <= 1.1 / FACTOR < nominal, (slowed, nominal)
    assert_exact(scenario.model_copy(update={"jobs": scenario.jobs[:1]}), tmp_path)
    assert stragglers_of(tmp_path) == []
    assert_clean(tmp_path)
