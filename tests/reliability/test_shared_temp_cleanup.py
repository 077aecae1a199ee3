"""A cleanup of the shared temporary directory does not stop a live agent's task workers.

An agent's task forkserver listens on ``$TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX`` and every
worker start connects to that path (CPython's ``multiprocessing.forkserver``): once it is
deleted, every start fails ``[Errno 2] No such file or directory`` while the agent and its
forkserver run on, heartbeats and all. In a shared ``/tmp`` the live agents' ``pymp-*``
directories sat among the thousands SIGKILLed agents had left, so a cleanup of the stale
ones (``rm -rf /tmp/pymp-*``, by anyone on the host) took the live ones of every run with
them. Each local agent's ``TMPDIR`` is therefore a directory of its own in its provider's
private one (``master.providers.local``), which nothing but the provider removes.

What the private ``TMPDIR`` cannot keep out (a wipe of the node's own temporary directory, an
age-based cleaner reaching it) the agent survives too: a start that finds its forkserver's
socket gone starts a new forkserver (``agents.forkserver_socket``)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from tests.support.runs import assert_clean
from tests.support.scenarios import hold_job, scenario_in
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


def clean_stale_forkservers(shared: Path) -> list[Path]:
    """What a user cleaning up after SIGKILLed agents does: every ``pymp-*`` goes."""
    stale = sorted(shared.glob("pymp-*"))
    for path in stale:
        shutil.rmtree(path)
    return stale


async def test_a_cleanup_of_pymp_directories_mid_run_fails_no_worker_start(
    tmp_path: Path, short_tmpdir: Path, isolated_path: None
) -> None:
    """``short_tmpdir`` is the temporary directory the master and its agents share, as they
    share ``/tmp``."""
    hold, until = hold_job(tmp_path / "in")
    scenario = scenario_in(tmp_path / "in", jobs=[hold], timeout=120)
    seen: dict[str, Any] = {}

    def on_event(master: Any, record: dict[str, Any]) -> None:
        # the held map runs: every node is up, so each agent's forkserver listens
        if record["event"] == "task_started" and "cleaned" not in seen:
            seen["sockets"] = sorted(short_tmpdir.rglob("listener-*"))
            seen["cleaned"] = clean_stale_forkservers(short_tmpdir)
            until.touch()  # the reduce starts only now: a new worker, after the cleanup

    await assert_both_tasks_succeed(tmp_path, scenario, on_event)
    assert seen["sockets"], "no forkserver socket under the shared temporary directory"


def wipe_node_temp_dirs(shared: Path) -> list[Path]:
    """Every node's own ``TMPDIR`` (``<provider's private dir>/<node>``), deleted whole."""
    wiped = sorted(path for path in shared.glob("testbed-*/*") if path.is_dir())
    for path in wiped:
        shutil.rmtree(path)
    return wiped


async def test_a_wipe_of_each_nodes_own_temp_dir_mid_run_fails_no_worker_start(
    tmp_path: Path, short_tmpdir: Path, isolated_path: None
) -> None:
    """On the code before the forkserver's replacement the reduce's starts all failed
    ``[Errno 2]`` (on every node: each one's socket was gone)."""
    hold, until = hold_job(tmp_path / "in")
    scenario = scenario_in(tmp_path / "in", jobs=[hold], timeout=120)
    seen: dict[str, Any] = {}

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_started" and "wiped" not in seen:
            seen["sockets"] = sorted(short_tmpdir.glob("testbed-*/*/pymp-*/listener-*"))
            seen["wiped"] = wipe_node_temp_dirs(short_tmpdir)
            until.touch()

    await assert_both_tasks_succeed(tmp_path, scenario, on_event)
    assert seen["sockets"] and not any(path.exists() for path in seen["sockets"]), seen


async def assert_both_tasks_succeed(tmp_path: Path, scenario: Any, on_event: Any) -> None:
    run_dir = tmp_path / "run"
    result = await run_scenario(settings_of(scenario), run_dir, on_event=on_event)
    assert result.ok, result.summary
    rows = list(csv.DictReader((run_dir / "tasks.csv").open()))
    assert [r["status"] for r in rows] == ["succeeded", "succeeded"], rows
    assert_clean(run_dir)
