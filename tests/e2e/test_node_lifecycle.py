"""The skeleton's process lifecycle: Ctrl-C leaves nothing behind, a frozen agent is caught by
the heartbeat timeout, and a CPU-bound task does not silence its agent's heartbeats."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from master.shell.run import run_scenario
from testbed.workloads.wordcount import read_output
from tests.support.runs import assert_clean, expected_counts
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
LONG_JOB = """\
name: interrupted
cluster: {reserved: 1, transient: 2, heartbeat_interval: 0.2s}
jobs:
  - {workload: sleep, tasks: 3, duration: 5m}
"""


def events(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def wait_for_tasks(run: subprocess.Popen[bytes], run_dir: Path, count: int) -> None:
    """Poll the journal until ``count`` tasks have started (readiness, not a timed sleep)."""
    deadline = time.monotonic() + 60
    while sum(e["event"] == "task_started" for e in events(run_dir)) < count:
        assert run.poll() is None, "the run ended before its tasks started"
        assert time.monotonic() < deadline, "the tasks did not start within a minute"
        with contextlib.suppress(subprocess.TimeoutExpired):
            run.wait(0.05)


def listening_ports(processes: list[psutil.Process]) -> set[int]:
    ports = set()
    for process in processes:
        try:
            ports |= {c.laddr.port for c in process.net_connections("inet") if c.status == psutil.CONN_LISTEN}
        except psutil.NoSuchProcess:
            continue
    return ports


def alive(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def as_in_a_terminal() -> None:
    """A foreground job's SIGINT does its default. A child inherits an ignored SIGINT (a test run
    started from a script in the background: the shell ignores SIGINT for it), and Python then
    installs no KeyboardInterrupt handler: that run would ignore the Ctrl-C (CI saw one hang)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(
    ("stop", "status"),
    [(lambda pid: os.killpg(pid, signal.SIGINT), 130), (lambda pid: os.kill(pid, signal.SIGTERM), 143)],
    ids=["ctrl-c", "sigterm"],
)
def test_ctrl_c_stops_every_process_and_port_the_run_started(
    tmp_path: Path, stop: Callable[[int], None], status: int
) -> None:
    """SIGINT to the whole foreground process group, as a terminal's Ctrl-C sends it; SIGTERM to
    the master alone, as ``kill`` or a service manager sends it. Each is a clean stop: 128 + the
    signal's number, no traceback."""
    scenario, run_dir = tmp_path / "long.yaml", tmp_path / "run"
    scenario.write_text(LONG_JOB)
    command = [sys.executable, "-m", "testbed.app.cli", "run", str(scenario), "--out", str(run_dir)]
    run = subprocess.Popen(
        command, cwd=ROOT, start_new_session=True, stderr=subprocess.PIPE, preexec_fn=as_in_a_terminal
    )
    try:
        wait_for_tasks(run, run_dir, 3)
        started = psutil.Process(run.pid).children(recursive=True)
        ports = listening_ports([psutil.Process(run.pid), *started])
        assert len(started) >= 4 and len(ports) >= 4  # broker and 3 agents at least
        stop(run.pid)
        assert run.wait(60) == status
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert b"Traceback" not in run.stderr.read()
    assert [p.pid for p in started if alive(p)] == []
    listening = {c.laddr.port for c in psutil.net_connections("inet") if c.status == psutil.CONN_LISTEN}
    assert not ports & listening


async def test_a_frozen_agent_is_lost_by_heartbeat_timeout_and_its_work_redone(tmp_path: Path) -> None:
    """SIGSTOP sends no Last Will (its connection stays open): only the missing heartbeats tell."""
    scenario = make_scenario(jobs=[{"workload": "wordcount", "size_mb": 6, "maps": 6, "reduces": 3}])
    pids: dict[str, int] = {}
    frozen: list[str] = []

    def freeze_first_transient_with_a_task(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "node_up":
            pids[record["node"]] = record["pid"]
        elif record["event"] == "task_started" and record["class"] == "transient" and not frozen:
            frozen.append(record["node"])
            os.kill(pids[record["node"]], signal.SIGSTOP)

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=freeze_first_transient_with_a_task)
    assert frozen and result.ok, result.summary
    lost = [e for e in events(tmp_path) if e["event"] == "node_lost"]
    assert [(e["node"], e["reason"]) for e in lost] == [(frozen[0], "heartbeat_timeout")]
    assert result.summary["relaunched_tasks"] > 0
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(6, 6, seed=7000)
    assert_clean(tmp_path)  # the frozen agent was killed, not left stopped


async def test_heartbeats_keep_flowing_while_a_task_burns_the_cpu(tmp_path: Path) -> None:
    """The task runs 4 s in a worker process; a node silent for 2 s would be declared lost."""
    cluster = {"reserved": 1, "transient": 0, "heartbeat_interval": 0.2, "heartbeat_timeout": 2}
    job = {"workload": "sleep", "tasks": 1, "duration": "4s", "cpu_bound": True}
    scenario = make_scenario(cluster=cluster, jobs=[job])
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    assert not [e for e in events(tmp_path) if e["event"] == "node_lost"]
    assert result.summary["relaunched_tasks"] == 0
    assert_clean(tmp_path)
