"""Task workers do not depend on the working directory the agent was started in.

A worker's start (``multiprocessing``'s forkserver) hands the worker the agent's working
directory: when that directory is deleted under a live agent, every start fails with
``[Errno 2] No such file or directory`` (``os.getcwd``) while the agent itself runs on,
heartbeats and all, and every task it is given fails: a band of failed runs. An agent
therefore runs in its own node directory (as a container's agent runs in ``/data``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from master.shell.run import run_scenario
from tests.support.runs import assert_clean
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


async def test_a_run_started_from_a_deleted_directory_runs_every_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # the master's (and so its agents') working directory, deleted
    job = {"workload": "sleep", "tasks": 4, "duration": 0.1}
    result = await run_scenario(settings_of(make_scenario(jobs=[job])), tmp_path / "run")
    assert result.ok, result.summary
    assert_clean(tmp_path / "run")
    assert not os.path.exists(gone)
