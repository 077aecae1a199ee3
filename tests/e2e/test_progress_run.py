"""LATE and Hadoop's rule for real: local agents report their attempts' progress scores, and
`late` and `hadoop` copy the task of a node made slow for real (``chaos.slowdown``: its tasks'
cgroup CPU quota, in faithful mode; its agent starts at full speed) onto a fast node, whose copy
wins; every output exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from master.core.copies import Copies
from master.core.nodes import NodeRecord
from master.shell.run import run_scenario
from testbed.wire.protocol import Heartbeat
from tests.support.cgroups import require_cgroups
from tests.support.runs import assert_clean, assert_exact
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

SLOWDOWN = 50
"""reserved-0's factor: its two slots get 2% of a core each (its tasks 4% together), against a core
each on every other node; its agent keeps its 2 cores (it was held to 0.02 with its tasks, and took
about 75 s of a 113 to 125 s test to start)."""


RULES = {
    "late": ({"min_runtime": "0.5s", "cap": 0.5}, "longest estimated time left"),
    "hadoop": ({"lag": "0.5s"}, "progress below its category's average - gap"),
}
"""Each rule that reads rates, with its time threshold cut from 60 s to half a second."""


@pytest.mark.parametrize("rule", sorted(RULES))
async def test_a_rule_copies_the_slow_nodes_task_from_real_progress_scores(
    tmp_path: Path, rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_cgroups()
    scenario = make_scenario(
        cluster={
            "reserved": {"count": 1, "slots": 2, "cpus": 2},
            "transient": {"count": 3, "slots": 2, "cpus": 2},
            "heartbeat_interval": 0.05,  # a reduce of 0.3 s is heard mid-way several times
            "heartbeat_timeout": 5,
        },
        jobs=[{"workload": "sort", "size_mb": 64, "maps": 8, "reduces": 2}],
        fidelity={"mode": "faithful", "dilation": 1},
        chaos={"slowdown": {"nodes": {"reserved-0": SLOWDOWN}}},
        policy={"speculation": rule, "options": {"speculation": {rule: RULES[rule][0]}}},
    )
    scores: list[float] = []
    keep = Copies.heartbeat

    def scores_heard(copies: Copies, node: NodeRecord, beat: Heartbeat) -> None:
        """Every heartbeat's scores as the master takes them (sampled at journal events, a task
        that went from 0 to 1 between two events was never seen mid-way: 1 run in 5 failed)."""
        scores.extend(beat.progress.values())
        keep(copies, node, beat)

    monkeypatch.setattr(Copies, "heartbeat", scores_heard)
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    reserved = {e["node"] for e in events if e["event"] == "node_up" and e["class"] == "reserved"}
    copies = [e for e in events if e["event"] == "task_started" and e.get("role") == "copy"]
    assert copies, f"{rule} launched no copy"
    assert all(c["reason"] == RULES[rule][1] for c in copies)
    originals = {e["task"]: e["node"] for e in events if e["event"] == "task_started" and "role" not in e}
    won = {
        e["task"]
        for e in events
        if e["event"] == "task_finished" and e.get("role") == "copy" and e["status"] == "succeeded"
    }
    rescued = [c for c in copies if originals[c["task"]] in reserved and c["node"] not in reserved]
    assert {c["task"] for c in rescued} & won  # a slow node's task copied to a fast one, which won
    assert any(0 < s < 1 for s in scores)  # scores heard mid-task, from the agents' heartbeats
    assert result.summary["speculative_attempts"] == len(copies)
    assert_exact(scenario, tmp_path)
    assert_clean(tmp_path)
