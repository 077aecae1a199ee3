"""Freezes: every agent, or the broker, stopped (SIGSTOP) for 10 s mid-job; one node frozen for good.

A pause of the whole cluster or of its control plane is not the loss of every
node: silence is judged over a window and each silent agent is asked directly
before it is killed. A node that is lost (to silence, or a crash) is replaced
when the scenario says ``replace: true``, and a reserved one always.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from testbed.workloads.wordcount import read_output
from tests.support.runs import assert_clean, expected_counts
from tests.support.scenarios import hold_job, make_scenario, scenario_in
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e
FREEZE_S = 10.0
JOB = {"workload": "wordcount", "size_mb": 4, "maps": 6, "reduces": 3}


def events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def freeze(pids: list[int], group: bool) -> None:
    """SIGSTOP now, SIGCONT after FREEZE_S (the fault lasts that long; nothing waits on it)."""
    send = os.killpg if group else os.kill
    for pid in pids:
        send(pid, signal.SIGSTOP)
    asyncio.get_running_loop().call_later(FREEZE_S, lambda: [send(pid, signal.SIGCONT) for pid in pids])


async def run_with_freeze(tmp_path: Path, what: str) -> None:
    agents: list[int] = []
    broker: list[int] = []
    frozen: list[bool] = []

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "node_up":
            agents.append(record["pid"])
        elif record["event"] == "broker_started":
            broker.append(record["pid"])
        elif record["event"] == "task_started" and not frozen:
            frozen.append(True)
            freeze(agents if what == "agents" else broker, group=what == "agents")

    scenario = make_scenario(jobs=[JOB], timeout=120)
    result = await run_scenario(settings_of(scenario), tmp_path, on_event=on_event)
    assert frozen and result.ok, result.summary
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(4, 6, seed=7000)
    names = Counter(e["event"] for e in events(tmp_path))
    assert names["node_lost"] == 0, [e for e in events(tmp_path) if e["event"] == "node_lost"]
    assert names["cluster_silent"] >= 1
    assert_clean(tmp_path)


async def test_freezing_every_agent_for_ten_seconds_loses_no_node(tmp_path: Path) -> None:
    await run_with_freeze(tmp_path, "agents")


async def test_a_ten_second_broker_stall_loses_no_node(tmp_path: Path) -> None:
    await run_with_freeze(tmp_path, "broker")


async def test_a_reserved_node_lost_to_silence_is_replaced_even_without_replace(
    tmp_path: Path, isolated_path: None
) -> None:
    pids: dict[str, int] = {}
    # the hold keeps the run going until the replacement is launched (it was a 15 s sleep)
    hold, replaced = hold_job(tmp_path / "in")

    def freeze_the_reserved_node_for_good(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "node_up":
            pids[record["node"]] = record["pid"]
        elif record["event"] == "task_started" and record["node"] == "reserved-0" and "frozen" not in pids:
            pids["frozen"] = pids["reserved-0"]
            os.killpg(pids["reserved-0"], signal.SIGSTOP)
        elif record["event"] == "node_launching" and record["node"] == "reserved-1":
            replaced.touch()

    chaos = {"reserved": {"replace": False}, "transient": {"replace": False}}
    scenario = scenario_in(tmp_path / "in", jobs=[JOB, hold], chaos=chaos, timeout=120)
    run_dir = tmp_path / "run"
    result = await run_scenario(settings_of(scenario), run_dir, on_event=freeze_the_reserved_node_for_good)
    assert "frozen" in pids and result.ok, result.summary
    journal = events(run_dir)
    lost = [(e["node"], e["reason"]) for e in journal if e["event"] == "node_lost"]
    assert lost == [("reserved-0", "heartbeat_timeout")]
    # The replacement is launched on the loss; the run ends once it is (whether its agent is up
    # by then is the host's speed: 10 s to start beside two busy processes, more at a higher load)
    launched = [e["node"] for e in journal if e["event"] == "node_launching"]
    assert launched[-1] == "reserved-1", launched
    assert "lost 1 node(s) to heartbeat timeout" in result.summary["cluster_shortfall"]
    assert read_output(run_dir / "outputs" / "j000") == expected_counts(4, 6, seed=7000)
    assert_clean(run_dir)
