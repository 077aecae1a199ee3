"""Eviction metrics are not muddled by task errors, in a real run."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest

from master.core.jobs import MAX_FAILURES
from master.shell.run import run_scenario
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


async def test_a_missing_input_file_is_retried_as_task_errors_not_relaunches(tmp_path: Path) -> None:
    """The file passes validation and planning, then goes: every attempt fails with
    FileNotFoundError, the task is retried until the job fails, and no eviction happened:
    relaunched_tasks is 0."""
    data = tmp_path / "words.txt"
    data.write_text("to be or not to be\n" * 100)
    scenario = make_scenario(
        cluster={"reserved": 1, "transient": 1, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
        jobs=[{"workload": "wordcount", "input": str(data), "maps": 1, "reduces": 1}],
    )
    (tmp_path / "run").mkdir()

    def remove_the_input(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "job_submitted":
            data.unlink()

    result = await run_scenario(settings_of(scenario), tmp_path / "run", on_event=remove_the_input)
    assert not result.ok
    with (tmp_path / "run" / "tasks.csv").open() as handle:
        errors = [r for r in csv.DictReader(handle) if r["failure"] == "error"]
    assert len(errors) == MAX_FAILURES
    assert result.summary["evictions"] == 0
    assert result.summary["relaunched_tasks"] == 0
    assert result.summary["error_relaunches"] == MAX_FAILURES - 1
