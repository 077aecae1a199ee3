"""CloudCoaster for real: transient servers launched and released as agent processes, and revoked.

The cluster: reserved-0 and reserved-1 form the general partition, reserved-2
and reserved-3 the short-only one (N = 2). With p = 0.5 reserved-3 is replaced
(drained and released at once) and r = 2 gives a budget of K = 2 transient
servers. A long job occupies both general servers: l_r = 2/3 > 0.4, so the
autoscaler launches both transient servers; when the long job ends they are
drained and released. Trace times are compressed 10x.
"""

from __future__ import annotations

import asyncio
import csv
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from tests.support.coaster import coaster_scenario, write_trace
from tests.support.processes import process_alive
from tests.support.runs import assert_clean
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


def events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def rows(run_dir: Path, table: str) -> list[dict[str, str]]:
    return list(csv.DictReader((run_dir / f"{table}.csv").open()))


async def test_transient_servers_come_and_go_as_processes(tmp_path: Path) -> None:
    trace = write_trace(
        tmp_path / "jobs.tr",
        [
            # long: 15 and 18 s of wall time on the two general servers; the transient servers are
            # released between the two ends (were both 18 s, the run could end before the release)
            "0 2 165 180 150",
            *(f"{t} 3 3 3 3 3" for t in (90, 100, 110, 120, 130)),  # short jobs while transients are up
        ],
    )
    result = await run_scenario(settings_of(coaster_scenario(trace)), tmp_path)
    assert result.ok, result.summary
    log = events(tmp_path)
    launches = [e for e in log if e["event"] == "autoscale" and e["action"] == "launch"]
    assert len(launches) == 2 and all(e["long_servers"] == 2 and e["target"] == 2 for e in launches)
    ups = {e["node"]: e["pid"] for e in log if e["event"] == "node_up" and e["class"] == "transient"}
    assert sorted(ups) == ["transient-0", "transient-1"]
    nodes = {row["node_id"]: row for row in rows(tmp_path, "nodes")}
    # the replaced on-demand server and both transient servers were released before the run ended
    for node_id in ("reserved-3", "transient-0", "transient-1"):
        assert nodes[node_id]["end_reason"] == "released", nodes[node_id]
    # ...once the long load went down: when the first long task ended, not before
    long_ends = [e["t"] for e in log if e["event"] == "task_finished" and e["task"].startswith("j000.")]
    released = [e for e in log if e["event"] == "node_release" and e["class"] == "transient"]
    assert len(released) == 2 and all(e["t"] >= min(long_ends) for e in released)
    # and never younger than the provisioning delay (20 s of trace time: 2 s), counted from joining
    up_at = {e["node"]: e["t"] for e in log if e["event"] == "node_up"}
    drains = [e for e in log if e["event"] == "node_draining" and e["node"] in ups]
    assert len(drains) == 2 and all(e["t"] >= up_at[e["node"]] + 2.0 for e in drains)
    # they took short tasks, and no short task ran on a general (long) server
    tasks = rows(tmp_path, "tasks")
    assert any(t["node_class"] == "transient" for t in tasks)
    assert all(t["node_id"] not in ("reserved-0", "reserved-1") for t in tasks if t["job_id"] != "j000")
    assert result.summary["transient_launched"] == 2 and result.summary["long_jobs"] == 1
    assert result.summary["short_tasks"] == 15
    assert not any(process_alive(pid) for pid in ups.values())
    assert_clean(tmp_path)


async def test_revoked_transient_server_loses_no_queued_short_task(tmp_path: Path) -> None:
    """The chaos controller SIGKILLs a transient server as soon as a short task is queued on it:
    the task's on-demand copy runs, and every short task runs to success exactly once."""
    trace = write_trace(
        tmp_path / "jobs.tr",
        ["0 2 180 180 180", *(f"{t} 4 4 4 4 4 4" for t in (90, 92, 94, 96, 98, 100))],
    )
    victims: list[str] = []

    def revoke_on_first_queue(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_queued" and record["node"].startswith("transient") and not victims:
            victims.append(record["node"])
            asyncio.get_running_loop().create_task(master.chaos.evict(record["node"]))

    result = await run_scenario(
        settings_of(coaster_scenario(trace)), tmp_path, on_event=revoke_on_first_queue
    )
    assert victims, "no short task was queued on a transient server"
    assert result.ok, result.summary
    assert result.summary["evictions"] == 1
    log = events(tmp_path)
    outcome = next(e for e in log if e["event"] == "revocation_outcome")
    assert outcome["node"] == victims[0]
    assert outcome["surviving"] and outcome["requeue"] == []
    copies = {e["task"]: e["node"] for e in log if e["event"] == "task_queued" and e.get("copy")}
    assert all(copies[task].startswith("reserved") for task in outcome["surviving"])
    # every task succeeded exactly once; the surviving ones ran from their on-demand copies
    tasks = rows(tmp_path, "tasks")
    succeeded = Counter(t["task_id"] for t in tasks if t["status"] == "succeeded")
    assert len(succeeded) == 2 + 6 * 4 and set(succeeded.values()) == {1}
    ran_on = {t["task_id"]: t["node_id"] for t in tasks if t["status"] == "succeeded"}
    assert all(ran_on[task] != victims[0] for task in outcome["surviving"])
    # the autoscaler, not the chaos controller, relaunched the missing server
    relaunch = [e for e in log if e["event"] == "autoscale" and e["action"] == "launch"]
    assert len(relaunch) == 3
    assert_clean(tmp_path)
