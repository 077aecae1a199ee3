"""The shipped real LATE scenario (scenarios/papers/late-real.yaml) as a user runs it, shrunk:
real local agents in faithful mode, two of them slowed 8x by their cgroup quota and token
buckets; ``late`` copies a slow node's task onto a fast node from the agents' progress scores,
the copy wins, and the sort's output is exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from master.shell.run import run_scenario
from testbed.scenario.schema import load_scenario
from tests.support.cgroups import require_cgroups
from tests.support.runs import assert_clean, assert_exact
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "papers" / "late-real.yaml"
SHRUNK = ["cluster.reserved.count=6", "jobs.0.size_mb=96", "jobs.0.maps=24", "jobs.0.reduces=10"]
"""Six nodes (dilation 4 on two cores), the two stragglers kept; two waves of maps still."""


async def test_late_copies_a_stragglers_task_onto_a_fast_node_and_the_copy_wins(tmp_path: Path) -> None:
    require_cgroups()
    scenario = load_scenario(SCENARIO, SHRUNK)
    slow = {node for node, factor in scenario.chaos.slowdown.nodes.items() if factor > 1}
    assert slow == {"reserved-0", "reserved-1"}
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    started = [e for e in events if e["event"] == "task_started"]
    original = {e["task"]: e["node"] for e in started if "role" not in e}
    rescues = {
        e["task"]
        for e in started
        if e.get("role") == "copy" and original[e["task"]] in slow and e["node"] not in slow
    }
    won = {
        e["task"]
        for e in events
        if e["event"] == "task_finished" and e.get("role") == "copy" and e["status"] == "succeeded"
    }
    assert rescues & won, (rescues, won)  # a straggler's task copied to a fast node, and the copy won
    assert result.summary["speculative_attempts"] == sum(e.get("role") == "copy" for e in started)
    assert_exact(scenario, tmp_path)
    assert_clean(tmp_path)
