"""A slowdown episode for real (``chaos.slowdown.episodes``, faithful mode): a node 4x slower
from 2 s to 5 s of the run has its CPU quota divided by 4 then and restored after, by the
kernel's accounting of its spinning tasks (each attempt's CPU seconds over its wall seconds,
tasks.csv): those run inside the episode got at most a quarter of a core, those after it more;
the fidelity monitor allows each task the episode's 1/f over the part of it the episode held."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from master.shell.run import run_scenario
from tests.support.cgroups import require_cgroups
from tests.support.runs import assert_clean
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

FACTOR = 4


def share(task: dict[str, str]) -> float:
    return float(task["cpu_s"]) / (float(task["end_wall_s"]) - float(task["start_wall_s"]))


async def test_an_episode_divides_the_nodes_quota_for_its_length_only(tmp_path: Path) -> None:
    require_cgroups()
    episode = {"at": "2s", "for": "3s", "nodes": {"count": 1, "kind": "reserved"}, "factor": FACTOR}
    scenario = make_scenario(
        cluster={"reserved": {"count": 1, "slots": 1, "cpus": 1}, "transient": 0, "heartbeat_interval": 0.2},
        # 0.3 CPU s each: 1.2 s inside the episode (whole ones fit in its 3 s), 0.3 s after it
        jobs=[{"workload": "sleep", "tasks": 20, "duration": "0.3s", "cpu_bound": True}],
        fidelity={"mode": "faithful", "dilation": 1},
        chaos={"slowdown": {"episodes": [episode]}},
    )
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    began, ended = [e for e in events if e["event"] == "slowdown_episode"]
    assert (began["node"], began["factor"], began["began"]) == ("reserved-0", FACTOR, True)
    assert (ended["node"], ended["factor"], ended["began"]) == ("reserved-0", 1.0, False)
    assert ended["t"] - began["t"] == pytest.approx(3.0, abs=0.5)
    with open(tmp_path / "tasks.csv", newline="") as f:
        tasks = [t for t in csv.DictReader(f) if t["status"] == "succeeded"]
    inside = [
        t for t in tasks if float(t["start_wall_s"]) >= began["t"] and float(t["end_wall_s"]) <= ended["t"]
    ]
    after = [t for t in tasks if float(t["start_wall_s"]) >= ended["t"]]
    assert inside and after, [(t["start_wall_s"], t["end_wall_s"]) for t in tasks]
    # the kernel held the episode's tasks to a quarter core (+5%: the CFS period's granularity);
    # restored, the node's tasks got more than the slowed quota allows
    slowed, restored = max(map(share, inside)), min(map(share, after))
    assert slowed <= 1.05 / FACTOR < restored, (slowed, restored)
    # the fidelity monitor's view: the tasks the episode overlapped, each allowed its time's
    # average of 1/f (1 before and after the episode, 1/4 in it), got no more than that
    fidelity = result.summary["fidelity"]
    assert 1 / FACTOR < fidelity["slowed_task_allowed_share"] < 1
    assert fidelity["slowed_task_cpu_share"] <= 1.05 * fidelity["slowed_task_allowed_share"], fidelity
    assert_clean(tmp_path)
