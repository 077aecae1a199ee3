"""Scenarios for tests: a small valid one, with fields replaced; one written beside a plugin;
a text written as a file, and the problems it loads with; the hold job that keeps a run alive
until a test says so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.scenario.schema import Scenario, ScenarioError, load_scenario, parse_scenario


def scenario_data(**fields: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "test",
        "seed": 7,
        "cluster": {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
        "jobs": [{"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 2}],
        "timeout": 120,
    }
    data.update(fields)
    return data


def make_scenario(**fields: Any) -> Scenario:
    """A small valid scenario; keyword arguments replace top-level fields."""
    return parse_scenario(scenario_data(**fields))


def write(tmp_path: Path, text: str) -> Path:
    """``text`` as ``tmp_path/s.yaml``."""
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str) -> list[str]:
    """The problems ``load_scenario`` finds in ``text`` (it must refuse it)."""
    with pytest.raises(ScenarioError) as info:
        load_scenario(write(tmp_path, text))
    return info.value.problems


def scenario_in(directory: Path, **fields: Any) -> Scenario:
    """``make_scenario``'s, written to ``directory/scenario.yaml`` and loaded from there, as a user's
    is: the modules beside it (a workload plugin) are importable by the master and the agents. Not a
    run's directory: a run writes its own scenario.yaml."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario_data(**fields)), encoding="utf-8")
    return load_scenario(path)


HOLD = """
import time
from pathlib import Path

from pydantic import BaseModel

from testbed.api import Workload


class Hold(Workload):
    \"\"\"One map that runs until the file ``until`` exists (at most ``limit_s`` seconds, then it
    fails), and one reduce: a job that keeps a run alive exactly as long as a test needs.\"\"\"

    class Options(BaseModel, extra="forbid"):
        until: str
        limit_s: float = 300

    def __init__(self, until: str, limit_s: float = 300) -> None:
        self.until, self.limit_s = Path(until), limit_s

    def generate(self, split, splits, seed):
        yield b"held\\n"

    def map(self, record):
        deadline = time.monotonic() + self.limit_s
        while not self.until.exists():
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.until} did not appear within {self.limit_s}s")
            time.sleep(0.05)
        yield record, 1

    def reduce(self, key, values):
        yield f"{key} {sum(values)}"
"""


def hold_job(directory: Path) -> tuple[dict[str, Any], Path]:
    """A job of two tasks (a map and a reduce) whose map runs until the file returned is made
    (``touch()``), whatever the host's speed: write it beside a scenario (``scenario_in``) for a
    run that must outlast what a test does to it (a fixed sleep would be too short on a busy host
    and waste its length on a quiet one). The module is written to ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "hold_workload.py").write_text(HOLD, encoding="utf-8")
    until = directory / "hold-until"
    job = {"workload": "hold_workload:Hold", "maps": 1, "reduces": 1, "options": {"until": str(until)}}
    return job, until
