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


NAMED = {  # the crash scenario's cluster as three named classes of two kinds
    "classes": {
        "base": {"kind": "reserved", "count": 1},
        "spot-a": {"kind": "transient", "count": 2, "slots": 2, "memory_mb": 1024},
        "spot-b": {"kind": "transient", "count": 1, "slots": 1, "price_per_hour": 0.05},
    },
    "heartbeat_interval": 0.2,
    "heartbeat_timeout": 2,
}


def test_a_named_class_run_resumes_with_its_classes_ordinals_going_on(tmp_path: Path) -> None:
    """Each class's nodes start again under the class's next ordinals (no id reused), the nodes
    the crash ended are journaled with their class's name and price, and every output is exact."""
    scenario, run_dir = tmp_path / "crash.yaml", tmp_path / "run"
    scenario.write_text(yaml.safe_dump({**SCENARIO, "cluster": NAMED}))
    before = run_until_crash_point(scenario, run_dir)
    first = [e["node"] for e in before if e["event"] == "node_launching"]
    assert first == ["base-0", "spot-a-0", "spot-a-1", "spot-b-0"]

    resumed = cli("run", "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr
    journal = events(run_dir)
    after = journal[len(before) :]
    assert [e["node"] for e in after if e["event"] == "node_launching"] == [
        "base-1",
        "spot-a-2",
        "spot-a-3",
        "spot-b-1",
    ]
    crashed = {e["node"]: e for e in after if e["event"] == "node_lost" and e["reason"] == "master_crashed"}
    assert set(crashed) == set(first)
    prices = {"base-0": 1.0, "spot-a-0": 0.3, "spot-a-1": 0.3, "spot-b-0": 0.05}
    assert {n: (e["class"], e["price_per_hour"]) for n, e in crashed.items()} == {
        n: (n.rsplit("-", 1)[0], price) for n, price in prices.items()
    }
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["succeeded"] == 3 and summary["failed"] == 0, summary
    assert read_output(run_dir / "outputs" / "j000") == expected_counts(2, 2, seed=7000)
    assert read_output(run_dir / "outputs" / "j002") == expected_counts(2, 2, seed=7002)
    parts = sorted((run_dir / "outputs" / "j001").iterdir())
    assert [p.read_text() for p in parts] == [f"j001.s0.t{i}\t{SLEEP_S:.3f}\n" for i in range(SLEEP_TASKS)]
    assert not any(process_alive(pid) for pid in agent_pids(journal))
