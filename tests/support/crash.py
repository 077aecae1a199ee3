"""A run whose master is killed mid-run (SIGKILL) at a chosen point of its journal; a core in a
``Driver`` that dies (its journal as its shell wrote it) and one resumed from that journal."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from master.core import commands as cmd
from master.shell.journal_file import Journal
from master.shell.resume_run import recover
from testbed.node.processes import child_env
from tests.support.driver import Driver

SLEEP_TASKS, SLEEP_S = 16, 3.0
SCENARIO = {
    "name": "crash",
    "seed": 7,
    "cluster": {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
    "jobs": [
        {"workload": "wordcount", "size_mb": 2, "maps": 2, "reduces": 2},
        {"workload": "sleep", "tasks": SLEEP_TASKS, "duration": SLEEP_S, "submit_at": "1s"},
        {"workload": "wordcount", "size_mb": 2, "maps": 2, "reduces": 2, "submit_at": "15s"},
    ],
    "timeout": 120,
}


def events(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def crash_point(journal: list[dict[str, Any]]) -> bool:
    """The first job is done, the second has committed some partitions but not all."""
    finished = {e["job"] for e in journal if e["event"] == "job_finished"}
    committed = [e for e in journal if e["event"] == "output_committed" and e["job"] == "j001"]
    return "j000" in finished and bool(committed) and "j001" not in finished


def run_until_crash_point(scenario: Path, run_dir: Path, cwd: Path | None = None) -> list[dict[str, Any]]:
    master = subprocess.Popen(
        [sys.executable, "-m", "testbed.app.cli", "run", str(scenario), "--out", str(run_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=cwd,
        env=child_env(),
    )
    try:
        deadline = time.monotonic() + 120
        while not crash_point(events(run_dir)):  # readiness polling on the journal
            assert master.poll() is None, "the run ended before the crash point"
            assert time.monotonic() < deadline, "the crash point never came"
            time.sleep(0.05)
        master.send_signal(signal.SIGKILL)
        master.wait(10)
    finally:
        master.kill()
        master.wait(10)
    return events(run_dir)  # the master may have journaled more between our last read and the kill


def crash(driver: Driver, run_dir: Path) -> None:
    """The master dies now: its journal so far, as its shell wrote it (events.jsonl, tables)."""
    journal = Journal(run_dir, clock=lambda: 0.0)
    for command in driver.log:
        if isinstance(command, cmd.Journal):
            journal.write_event(command.t, command.kind, command.fields)
    journal.close()


def resumed(scenario, run_dir: Path, **options: Any) -> Driver:  # type: ignore[no-untyped-def]
    found = recover(run_dir)
    driver = Driver(scenario, resume=found, **options)
    driver.now = found.crashed_at
    driver.boot()
    return driver
