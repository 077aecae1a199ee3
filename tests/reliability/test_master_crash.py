"""The master is SIGKILLed mid-run: the journal gives a partial report, and --resume finishes the run.

``testbed run`` runs as a subprocess so it can be killed for real; its agents
and its broker die with it (``PR_SET_PDEATHSIG``). The resumed run must not
rerun the finished job nor the committed partitions of the running one, and
every output must be exact.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from master.providers.local import TEMP_RECORD
from testbed.node.processes import child_env
from testbed.workloads.wordcount import read_output
from tests.support.crash import SCENARIO, SLEEP_S, SLEEP_TASKS, events, run_until_crash_point
from tests.support.processes import process_alive
from tests.support.runs import expected_counts

pytestmark = pytest.mark.e2e


def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "testbed.app.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_env(),
    )


def agent_pids(journal: list[dict[str, Any]]) -> list[int]:
    return [e["pid"] for e in journal if e["event"] == "node_up"]


def test_sigkilled_master_then_partial_report_then_resume(tmp_path: Path) -> None:
    scenario, run_dir = tmp_path / "crash.yaml", tmp_path / "run"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    before = run_until_crash_point(scenario, run_dir)
    kept = {e["index"] for e in before if e["event"] == "output_committed" and e["job"] == "j001"}
    assert 0 < len(kept) < SLEEP_TASKS

    # The agents and the broker died with the master: nothing of the first segment survives.
    deadline = time.monotonic() + 10
    while any(process_alive(pid) for pid in agent_pids(before)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(process_alive(pid) for pid in agent_pids(before))

    # The dead master's private temporary directory (its agents' TMPDIRs) is still there.
    private = [Path(line) for line in (run_dir / "nodes" / TEMP_RECORD).read_text().split()]
    assert private and all(p.is_dir() for p in private)

    report = cli("report", str(run_dir))
    assert report.returncode == 0, report.stderr
    partial = (run_dir / "report.md").read_text()
    assert "Partial run" in partial
    assert "| j000 | wordcount | succeeded |" in partial
    assert "| j001 | sleep | unfinished |" in partial, "the running job is missing from the report"

    resumed = cli("run", "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    after = events(run_dir)[len(before) :]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["succeeded"] == 3 and summary["failed"] == 0, summary
    assert (summary["evictions"], summary["relaunched_tasks"]) == (0, 0), "a restart is no relaunch"
    (point,) = summary["resumes"]  # the resume point, and what covers only the resumed segment
    assert (point["finished_jobs"], point["restored_jobs"]) == (1, 1), point
    assert "placement_latency_p50_s" in summary["last_segment_only"]
    assert not any(p.exists() for p in private), "the resumed run left the dead master's temp"

    # Exact outputs, whichever segment computed them.
    assert read_output(run_dir / "outputs" / "j000") == expected_counts(2, 2, seed=7000)
    assert read_output(run_dir / "outputs" / "j002") == expected_counts(2, 2, seed=7002)
    parts = sorted((run_dir / "outputs" / "j001").iterdir())
    assert [p.name for p in parts] == [f"part-{i:05d}" for i in range(SLEEP_TASKS)]
    for index, part in enumerate(parts):
        assert part.read_text() == f"j001.s0.t{index}\t{SLEEP_S:.3f}\n"

    # Only what had not completed ran again.
    relaunched = [e for e in after if e["event"] == "task_started"]
    assert not [e for e in relaunched if e["job"] == "j000"], "a finished job ran again"
    assert not [e for e in relaunched if e["job"] == "j001" and e["index"] in kept]
    assert {e["index"] for e in relaunched if e["job"] == "j001"} == set(range(SLEEP_TASKS)) - kept
    restarted = {(e["task"], e["attempt"]) for e in relaunched}
    earlier = {(e["task"], e["attempt"]) for e in before if e["event"] == "task_started"}
    assert not restarted & earlier, "an attempt number was reused"

    # The crash is in the tables: attempts cut short, nodes ended by it, one row per job.
    rows = list(csv.DictReader((run_dir / "tasks.csv").open()))
    assert any(r["status"] == "lost" and r["failure"] == "master_crashed" for r in rows)
    nodes = list(csv.DictReader((run_dir / "nodes.csv").open()))
    assert sum(r["end_reason"] == "master_crashed" for r in nodes) == 4
    assert len({r["node_id"] for r in nodes}) == len(nodes) == 8, "a node id was reused"
    jobs = list(csv.DictReader((run_dir / "jobs.csv").open()))
    assert sorted(r["job_id"] for r in jobs) == ["j000", "j001", "j002"]
    assert not any(process_alive(pid) for pid in agent_pids(events(run_dir)))


def test_resume_refuses_a_finished_run_and_a_directory_that_is_not_a_run(tmp_path: Path) -> None:
    (tmp_path / "finished").mkdir()
    for name in ("events.jsonl", "scenario.yaml", "summary.json"):
        (tmp_path / "finished" / name).write_text("{}\n")
    done = cli("run", "--resume", str(tmp_path / "finished"))
    assert done.returncode == 2 and "the run finished" in done.stderr, done.stderr
    empty = cli("run", "--resume", str(tmp_path))
    assert empty.returncode == 2 and "not a run directory" in empty.stderr, empty.stderr
    assert "Traceback" not in done.stderr + empty.stderr
