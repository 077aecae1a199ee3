"""Running scenarios on the simulator in tests, and reading what they journaled."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from master.shell.run import RunResult
from master.sim.run import run_sim
from testbed.scenario.schema import parse_scenario


def simulate(tmp: Path, name: str = "run", **fields: Any) -> RunResult:
    data: dict[str, Any] = {"name": "sim-test", "seed": 3, "timeout": 3600, **fields}
    run_dir = tmp / name
    run_dir.mkdir()
    return run_sim(parse_scenario(data), run_dir)


def events(run_dir: Path, kind: str | None = None) -> list[dict[str, Any]]:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    return [r for r in records if kind is None or r["event"] == kind]


def rows(run_dir: Path, table: str) -> list[dict[str, str]]:
    with open(run_dir / f"{table}.csv", newline="") as handle:
        return list(csv.DictReader(handle))
