"""Slow nodes for real (``chaos.slowdown``, faithful mode): a node 3x slower gets a third of its
tasks' CPU quota (all and per slot) and of its token buckets: its CPU-bound tasks really got a third of
a core by the kernel's accounting (each attempt's CPU seconds over its wall seconds, tasks.csv),
where the full-speed node's got more than that; a sort across both nodes, exact."""

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


def table(run_dir: Path, name: str) -> list[dict[str, str]]:
    with open(run_dir / f"{name}.csv", newline="") as f:
        return list(csv.DictReader(f))


def cpu_per_wall(tasks: list[dict[str, str]]) -> float:
    """The attempts' CPU seconds over their wall seconds: the cores they got on average."""
    cpu = sum(float(t["cpu_s"]) for t in tasks)
    return cpu / sum(float(t["end_wall_s"]) - float(t["start_wall_s"]) for t in tasks)


async def test_a_slowed_nodes_tasks_get_a_third_of_its_core(tmp_path: Path) -> None:
    require_cgroups()
    scenario = make_scenario(
        cluster={
            "reserved": {"count": 1, "slots": 1, "cpus": 1},
            "transient": {"count": 1, "slots": 1, "cpus": 1},
            "heartbeat_interval": 0.2,
        },
        jobs=[
            {"workload": "sort", "size_mb": 32, "maps": 4, "reduces": 2},
            {"workload": "sleep", "tasks": 4, "duration": "1.5s", "cpu_bound": True},
        ],
        fidelity={"mode": "faithful", "dilation": 1},
        chaos={"slowdown": {"nodes": {"reserved-0": FACTOR}}},
    )
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    drawn = {e["node"]: e["factor"] for e in events if e["event"] == "slowdown_drawn"}
    assert drawn == {"reserved-0": FACTOR, "transient-0": 1.0}
    (spinning,) = [j["job_id"] for j in table(tmp_path, "jobs") if j["workload"] == "sleep"]
    tasks = [t for t in table(tmp_path, "tasks") if t["status"] == "succeeded" and t["job_id"] == spinning]
    slow = [t for t in tasks if t["node_id"] == "reserved-0"]
    fast = [t for t in tasks if t["node_id"] == "transient-0"]
    assert slow and fast, "both nodes ran spinning tasks"
    slowed, nominal = cpu_per_wall(slow), cpu_per_wall(fast)
    # the kernel's quota holds the slowed node's spinning tasks to a third of a core (+5%: the
    # CFS period's granularity); the full-speed node's got more than the slowed quota allows
    assert slowed <= 1.05 / FACTOR < nominal, (slowed, nominal)
    fidelity = result.summary["fidelity"]  # the monitor's view of the same: its share, its allowance
    assert fidelity["slowed_task_cpu_share"] <= 1.05 * fidelity["slowed_task_allowed_share"]
    assert fidelity["slowed_task_allowed_share"] == pytest.approx(1 / FACTOR, abs=1e-4)
    assert_exact(scenario.model_copy(update={"jobs": scenario.jobs[:1]}), tmp_path)  # a sleep has no check
    assert_clean(tmp_path)
