"""``scheduler: firmament`` on real agents: a wordcount placed by min-cost flow, its output exact."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from master.shell.run import run_scenario
from testbed.workloads.wordcount import read_output
from tests.support.runs import assert_clean, expected_counts
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("cost_model", ["quincy", "transient"])
async def test_wordcount_under_firmament_gives_exact_output(tmp_path: Path, cost_model: str) -> None:
    scenario = make_scenario(
        policy={"scheduler": "firmament", "options": {"firmament": {"cost_model": cost_model}}},
        chaos={"transient": {"lifetime": {"exponential": {"mean": "10m"}}}},
    )
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(4, 4, seed=7000)
    tasks = list(csv.DictReader((tmp_path / "tasks.csv").open()))
    assert {t["status"] for t in tasks} == {"succeeded"} and len(tasks) == 6
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert not [e for e in events if e["event"] == "decision"]  # no failed solve, nothing deferred
    summary = result.summary  # a real run's rounds: measured CPU, never charged
    assert summary["solver_time_source"] == "measured_cpu" and summary["policy_time_charged"] is False
    assert 0 < summary["solver_time_p50_cpu_s"] <= summary["solver_time_p99_cpu_s"]
    assert 0 <= summary["placement_latency_p50_s"] <= summary["placement_latency_p99_s"]
    assert_clean(tmp_path)
