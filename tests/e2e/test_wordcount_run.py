"""The walking skeleton end to end: real agents, a real broker, a real HTTP shuffle."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from testbed.workloads.wordcount import read_output
from tests.support.runs import assert_clean, expected_counts
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


async def test_wordcount_on_amqtt(tmp_path: Path) -> None:
    """``broker: amqtt`` forces the fallback broker (``embedded`` is Mosquitto where installed)."""
    scenario = make_scenario(broker="amqtt")
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(4, 4, seed=7000)
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["succeeded"] == 1 and summary["mean_jct_s"] > 0
    jobs = list(csv.DictReader((tmp_path / "jobs.csv").open()))
    assert jobs[0]["status"] == "succeeded" and int(jobs[0]["tasks"]) == 6
    assert_clean(tmp_path)


async def test_wordcount_on_mosquitto(tmp_path: Path, mosquitto: str) -> None:
    scenario = make_scenario(broker=mosquitto)
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(4, 4, seed=7000)
    assert_clean(tmp_path)


async def test_sigkilled_agent_mid_job_still_gives_exact_output(tmp_path: Path) -> None:
    """Evict (SIGKILL + wipe its disk) the transient node that starts the first reduce task:
    its running task is relaunched and its map outputs are recomputed through lineage."""
    jobs = [{"workload": "wordcount", "size_mb": 6, "maps": 6, "reduces": 3}]
    scenario = make_scenario(jobs=jobs)
    victims: list[str] = []

    def evict_first_reducer_node(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_started" and record["stage"] == 1 and not victims:
            node = record["node"]
            if record["class"] == "transient":
                victims.append(node)
                asyncio.get_running_loop().create_task(master.provider.evict(node))

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=evict_first_reducer_node)
    assert victims, "no reduce task started on a transient node"
    assert result.ok, result.summary
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(6, 6, seed=7000)
    assert result.summary["relaunched_tasks"] > 0
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    lost = [e for e in events if e["event"] == "node_lost"]
    assert [e["node"] for e in lost] == victims
    assert_clean(tmp_path)


async def test_a_job_the_timeout_kept_from_being_submitted_fails_the_run(tmp_path: Path) -> None:
    """Exit status 0 means every job of the scenario succeeded: one still waiting for its
    submission time when the run times out is a failed job, not a job that never existed."""
    jobs = [
        {"workload": "sleep", "tasks": 1, "duration": "0.1s"},
        {"workload": "sleep", "tasks": 1, "duration": "0.1s", "submit_at": "10m"},
    ]
    scenario = make_scenario(jobs=jobs, timeout="3s")
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert not result.ok
    assert result.summary["jobs"] == 2, result.summary
    rows = {r["job_id"]: r for r in csv.DictReader((tmp_path / "jobs.csv").open())}
    assert rows["j000"]["submit_wall_s"] != ""  # it ran (and most likely succeeded)
    assert rows["j001"]["status"] == "failed" and rows["j001"]["submit_wall_s"] == ""
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    finished = {e["job"]: e for e in events if e["event"] == "job_finished"}
    assert finished["j001"]["error"].startswith("not submitted: the run hit its timeout")
    assert_clean(tmp_path)


async def test_a_job_that_cannot_be_planned_fails_at_once_and_the_run_goes_on(tmp_path: Path) -> None:
    """The sort input was whole records when the scenario was validated, not when the job is
    submitted: that job fails with the planner's reason, the other job runs, the run ends."""
    records = tmp_path / "records.dat"
    records.write_bytes(b"k" * 1000)
    jobs = [
        {"workload": "sort", "input": str(records)},
        {"workload": "sleep", "tasks": 1, "duration": "0.1s"},
    ]
    scenario = make_scenario(jobs=jobs, timeout="10m")
    records.write_bytes(b"k" * 1050)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    result = await asyncio.wait_for(
        run_scenario(settings_of(scenario), run_dir), 120
    )  # a guard against a hang
    assert not result.ok
    rows = {r["job_id"]: r for r in csv.DictReader((run_dir / "jobs.csv").open())}
    assert (rows["j000"]["status"], rows["j001"]["status"]) == ("failed", "succeeded")
    finished = {
        e["job"]: e
        for e in map(json.loads, (run_dir / "events.jsonl").open())
        if e["event"] == "job_finished"
    }
    assert "not a multiple of 100-byte records" in finished["j000"]["error"]
    assert_clean(run_dir)


async def test_an_error_in_the_scheduling_loop_ends_the_run_with_its_jobs_failed(tmp_path: Path) -> None:
    """A bug in a policy must not leave the run without a scheduler until its timeout."""
    jobs = [{"workload": "sleep", "tasks": 2, "duration": "0.1s"}]
    scenario = make_scenario(jobs=jobs, timeout="10m")

    def broken_policy(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "run_started":

            def schedule_once() -> None:
                raise RuntimeError("policy bug")

            master.schedule_once = schedule_once

    result = await asyncio.wait_for(
        run_scenario(settings_of(scenario), tmp_path, on_event=broken_policy), 120
    )
    assert not result.ok
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [e["error"] for e in events if e["event"] == "master_error"] == ["RuntimeError('policy bug')"]
    finished = [e for e in events if e["event"] == "job_finished"]
    assert [e["status"] for e in finished] == ["failed"]
    assert "internal error in the master" in finished[0]["error"]
    assert_clean(tmp_path)
