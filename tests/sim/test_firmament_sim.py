"""``scheduler: firmament`` on the simulator: every job completes under evictions, the same
run twice gives the same placements."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from testbed.app.cli import main
from tests.support.sim import rows

SCENARIO = {
    "name": "firmament-sim",
    "seed": 5,
    "cluster": {"reserved": 2, "transient": {"count": 6, "zones": {"a": 3, "b": 3}}},
    "chaos": {"transient": {"lifetime": {"exponential": {"mean": "40s"}}}},
    "jobs": [
        {"workload": "wordcount", "size_mb": 8, "maps": 12, "reduces": 4},
        {"workload": "sleep", "tasks": 30, "duration": "15s", "repeat": 3, "every": "20s"},
    ],
    "timeout": 3600,
}


def simulate(tmp_path: Path, cost_model: str, name: str) -> Path:
    scenario = {
        **SCENARIO,
        "policy": {"scheduler": "firmament", "options": {"firmament": {"cost_model": cost_model}}},
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(scenario), encoding="utf-8")
    out = tmp_path / name
    assert main(["run", str(path), "--backend", "sim", "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("cost_model", ["trivial", "octopus", "quincy", "transient"])
def test_every_job_completes_under_evictions(tmp_path: Path, cost_model: str) -> None:
    out = simulate(tmp_path, cost_model, "run")
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == "sim" and summary["succeeded"] == 4, summary
    assert summary["evictions"] > 0 and summary["relaunched_tasks"] > 0


def test_the_same_run_twice_places_the_same_tasks(tmp_path: Path) -> None:
    first, second = (simulate(tmp_path, "transient", name) for name in ("one", "two"))
    placements = [
        [(t["task_id"], t["attempt"], t["node_id"]) for t in rows(run, "tasks")] for run in (first, second)
    ]
    assert placements[0] == placements[1]
