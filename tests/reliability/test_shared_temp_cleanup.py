"""A cleanup of the shared temporary directory does not stop a live agent's task workers.

An agent's task forkserver listens on ``$TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX`` and every
worker start connects to that path (CPython's ``multiprocessing.forkserver``): once it is
deleted, every start fails ``[Errno 2] No such file or directory`` while the agent and its
forkserver run on, heartbeats and all. In a shared ``/tmp`` the live agents' ``pymp-*``
directories sat among the thousands SIGKILLed agents had left, so a cleanup of the stale
ones (``rm -rf /tmp/pymp-*``, by anyone on the host) took the live ones of every run with
them. Each local agent's ``TMPDIR`` is therefore a directory of its own in its provider's
private one (``master.providers.local``), which nothing but the provider removes."""

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

    run_dir = tmp_path / "run"
    result = await run_scenario(settings_of(scenario), run_dir, on_event=on_event)
    assert seen["sockets"], "no forkserver socket under the shared temporary directory"
    assert result.ok, result.summary
    rows = list(csv.DictReader((run_dir / "tasks.csv").open()))
    assert [r["status"] for r in rows] == ["succeeded", "succeeded"], rows
    assert_clean(run_dir)
