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
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from tests.support.runs import assert_clean
from tests.support.scenarios import hold_job, scenario_in
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


def clean_stale_forkservers(shared: Path) -> None:
    """What a user cleaning up after SIGKILLed agents does: every ``pymp-*`` goes."""
    for path in sorted(shared.glob("pymp-*")):
        shutil.rmtree(path)


async def test_a_cleanup_of_pymp_directories_mid_run_fails_no_worker_start(
    tmp_path: Path, short_tmpdir: Path, isolated_path: None
) -> None:
    """``short_tmpdir`` is the temporary directory the master and its agents share, as they
    share ``/tmp``."""
    sockets = await run_with_cleanup_mid_run(
        tmp_path,
        lambda: sorted(short_tmpdir.rglob("listener-*")),
        lambda: clean_stale_forkservers(short_tmpdir),
    )
    assert sockets, "no forkserver socket under the shared temporary directory"


def wipe_node_temp_dirs(shared: Path) -> None:
    """Every node's own ``TMPDIR`` (``<provider's private dir>/<node>``), deleted whole."""
    for path in sorted(shared.glob("testbed-*/*")):
        if path.is_dir():
            shutil.rmtree(path)


async def test_a_wipe_of_each_nodes_own_temp_dir_mid_run_fails_no_worker_start(
    tmp_path: Path, short_tmpdir: Path, isolated_path: None
) -> None:
    """On the code before the forkserver's replacement the reduce's starts all failed
    ``[Errno 2]`` (on every node: each one's socket was gone)."""
    sockets = await run_with_cleanup_mid_run(
        tmp_path,
        lambda: sorted(short_tmpdir.glob("testbed-*/*/pymp-*/listener-*")),
        lambda: wipe_node_temp_dirs(short_tmpdir),
    )
    assert sockets and not any(path.exists() for path in sockets), sockets


async def run_with_cleanup_mid_run(
    tmp_path: Path, sockets_now: Callable[[], list[Path]], cleanup: Callable[[], None]
) -> list[Path]:
    """Run a held job; once its map runs (every node is up, so each agent's forkserver
    listens), list the sockets, run ``cleanup`` and let the reduce start: a new worker, after
    the cleanup. Both tasks must succeed. The sockets seen before the cleanup."""
    hold, until = hold_job(tmp_path / "in")
    scenario = scenario_in(tmp_path / "in", jobs=[hold], timeout=120)
    seen: dict[str, list[Path]] = {}

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_started" and "sockets" not in seen:
            seen["sockets"] = sockets_now()
            cleanup()
            until.touch()

    run_dir = tmp_path / "run"
    result = await run_scenario(settings_of(scenario), run_dir, on_event=on_event)
    assert result.ok, result.summary
    rows = list(csv.DictReader((run_dir / "tasks.csv").open()))
    assert [r["status"] for r in rows] == ["succeeded", "succeeded"], rows
    assert_clean(run_dir)
    return seen["sockets"]
