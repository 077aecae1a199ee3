"""The run owns its broker: killed mid-run it is restarted; it dies with a SIGKILLed master.

``broker: embedded`` is a private Mosquitto when the binary is installed, amqtt
otherwise (``broker: amqtt`` forces it); the journal says which.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
import pytest
import yaml

from master.providers.local import TEMP_RECORD, remove_recorded_temp
from master.shell.broker_keeper import DEATH_WINDOW_S, MAX_DEATHS, may_restart
from master.shell.run import run_scenario
from testbed.node.processes import child_env
from testbed.wire.broker import EmbeddedBroker, MosquittoBroker, make_broker, mosquitto_binary
from testbed.workloads.wordcount import read_output
from tests.support.processes import process_alive
from tests.support.runs import assert_clean, expected_counts
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of


def processes_in(directories: list[Path]) -> list[str]:
    """The live processes whose ``TMPDIR`` is in one of ``directories`` (a run's agents, their
    task forkservers and workers: the provider gives each agent one there)."""
    found = []
    for process in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            temp = process.environ().get("TMPDIR", "")
            if any(temp.startswith(f"{d}/") for d in directories):
                found.append(" ".join(process.info["cmdline"] or [])[:80])
    return found


needs_mosquitto = pytest.mark.skipif(mosquitto_binary() is None, reason="mosquitto is not installed")
JOB = {"workload": "wordcount", "size_mb": 4, "maps": 6, "reduces": 3}


def events(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "events.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def test_restarts_are_bounded_over_a_window() -> None:
    deaths = [float(i) for i in range(MAX_DEATHS)]
    assert may_restart(deaths, deaths[-1])
    assert not may_restart([*deaths, 3.0], 3.0)
    assert may_restart([*deaths, DEATH_WINDOW_S + 10], DEATH_WINDOW_S + 10)  # old deaths are forgiven


@needs_mosquitto
def test_embedded_is_mosquitto_when_installed_and_amqtt_can_be_forced() -> None:
    assert isinstance(make_broker("embedded"), MosquittoBroker)
    assert isinstance(make_broker("amqtt"), EmbeddedBroker)
    assert make_broker("mqtt://127.0.0.1:1883") is None


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["amqtt", pytest.param("embedded", marks=needs_mosquitto)])
async def test_a_killed_broker_is_restarted_and_the_run_completes_exactly(tmp_path: Path, kind: str) -> None:
    killed: list[int] = []

    def kill_broker_at_first_task(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "broker_started":
            killed.append(record["pid"])
        elif record["event"] == "task_started" and len(killed) == 1:
            os.kill(killed[0], signal.SIGKILL)
            killed.append(0)

    scenario = make_scenario(broker=kind, jobs=[JOB], timeout=90)
    result = await run_scenario(settings_of(scenario), tmp_path, on_event=kill_broker_at_first_task)
    assert result.ok, result.summary
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(4, 6, seed=7000)
    journal = events(tmp_path)
    names = Counter(e["event"] for e in journal)
    assert names["broker_died"] == 1 and names["broker_restarted"] == 1
    assert names["node_lost"] == 0
    started = next(e for e in journal if e["event"] == "broker_started")
    assert started["broker"] == ("amqtt" if kind == "amqtt" else "mosquitto")
    assert f"starting the {started['broker']} broker" in (tmp_path / "logs" / "broker.log").read_text()
    assert_clean(tmp_path)


@pytest.mark.e2e
@needs_mosquitto
def test_a_sigkilled_master_leaves_no_mosquitto_and_no_secrets_directory(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        yaml.safe_dump(
            {
                "name": "orphan",
                "broker": "mosquitto",
                "cluster": {"reserved": 1, "transient": 1},
                "jobs": [{"workload": "sleep", "tasks": 2, "duration": "5m"}],
            }
        )
    )
    temp = tmp_path / "tmp"
    temp.mkdir()
    run_dir = tmp_path / "run"
    master = subprocess.Popen(
        [sys.executable, "-m", "testbed.app.cli", "run", str(scenario), "--out", str(run_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=child_env({"TMPDIR": str(temp)}),
    )
    try:
        deadline = time.monotonic() + 60
        while not any(e["event"] == "task_started" for e in events(run_dir)):  # readiness polling
            assert master.poll() is None, "the run ended early"
            assert time.monotonic() < deadline, "no task started within a minute"
            time.sleep(0.05)
        broker_pid = next(e["pid"] for e in events(run_dir) if e["event"] == "broker_started")
        assert "mosquitto" in " ".join(psutil.Process(broker_pid).cmdline())
    finally:
        master.send_signal(signal.SIGKILL)
        master.wait()
    try:
        psutil.Process(broker_pid).wait(10)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        os.kill(broker_pid, signal.SIGKILL)
    assert not process_alive(broker_pid), "Mosquitto outlived its master"
    assert list(temp.glob("testbed-mosquitto-*")) == [], "the broker's secrets directory was left behind"
    private = [Path(line) for line in (run_dir / "nodes" / TEMP_RECORD).read_text().split()]
    deadline = time.monotonic() + 10
    while (left := processes_in(private)) and time.monotonic() < deadline:  # they die as signalled
        time.sleep(0.05)
    assert left == [], "the agents, their forkservers or workers outlived their master"
    remove_recorded_temp(run_dir / "nodes")  # as the run's resume would: no provider directory left
