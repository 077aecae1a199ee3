"""A scheduler's ``Preempt`` on real agents: the killed attempt's agent cancels it, the task
runs again, and the job's output is exact (committed once)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from master.shell.run import run_scenario
from testbed.workloads.wordcount import read_output
from tests.support.runs import assert_clean, expected_counts
from tests.support.scenarios import scenario_in
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

PREEMPT_ONCE = """
from testbed.api import Assign, Preempt, Scheduler


class PreemptOnce(Scheduler):
    \"\"\"First free node for each pending task; once, it preempts the first running task seen.\"\"\"

    def __init__(self):
        self.done = False

    def schedule(self, snapshot):
        decisions = []
        running = [t.task_id for n in snapshot.nodes for t in n.running]
        if running and not self.done:
            self.done = True
            decisions.append(Preempt(running[0], "e2e"))
        free = {n.node_id: [n.free_slots, n.free_memory_mb] for n in snapshot.nodes if not n.draining}
        for job in snapshot.jobs:
            for task in job.pending:
                for node_id, room in free.items():
                    if room[0] > 0 and room[1] >= task.ideal_memory_mb:
                        room[0] -= 1
                        room[1] -= task.ideal_memory_mb
                        decisions.append(Assign(task.task_id, node_id, task.ideal_memory_mb))
                        break
        return decisions
"""


async def test_a_preempted_task_runs_again_and_the_output_is_exact(tmp_path: Path) -> None:
    (tmp_path / "scenario").mkdir()
    (tmp_path / "scenario" / "preempt_once.py").write_text(PREEMPT_ONCE, encoding="utf-8")
    scenario = scenario_in(
        tmp_path / "scenario",
        policy={"scheduler": "preempt_once:PreemptOnce"},
        jobs=[{"workload": "wordcount", "size_mb": 4, "maps": 12, "reduces": 2}],  # more maps than slots
    )
    run = tmp_path / "run"
    result = await run_scenario(settings_of(scenario), run)
    assert result.ok, result.summary
    assert read_output(run / "outputs" / "j000") == expected_counts(4, 12, seed=7000)
    tasks = list(csv.DictReader((run / "tasks.csv").open()))
    (killed,) = [t for t in tasks if t["status"] == "killed"]
    assert killed["failure"] == "preempted"
    again = [t for t in tasks if t["task_id"] == killed["task_id"] and t["status"] == "succeeded"]
    assert [int(t["attempt"]) for t in again] == [int(killed["attempt"]) + 1]
    assert result.summary["preempted_attempts"] == 1
    events = [json.loads(line) for line in (run / "events.jsonl").read_text().splitlines()]
    assert not [e for e in events if e["event"] == "forged_message"]
    assert_clean(run)
