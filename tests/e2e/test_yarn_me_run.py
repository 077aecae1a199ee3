"""YARN and YARN-ME on real agents: elastic tasks really spill, outputs stay exact, YARN reserves.

One node with 2 cores and 16 MB for a sort job whose tasks have an ideal memory
of 14 MB (from a hand-written profile, generous for this data, so a task at its
ideal does not spill). One task fits regularly; YARN reserves the node for the
second, YARN-ME gives it the 2 MB left (1/7 of its ideal), and it spills.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from master.shell.run import run_scenario
from testbed.workloads.check import check_output
from testbed.workloads.task_model import PenaltyCurve, TaskModel, TaskProfile, save_profile
from tests.support.runs import assert_clean
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

IDEAL_MB = 14
ELASTIC_MB = 2
SORT = {"workload": "sort", "size_mb": 6, "maps": 4, "reduces": 2}


def sort_profiles(directory: Path) -> list[str]:
    paths = []
    for role in ("map", "reduce"):
        model = TaskModel(IDEAL_MB, 1.0, PenaltyCurve.step(1.5))
        path = directory / f"sort-{role}.json"
        save_profile(TaskProfile("sort", role, model, (IDEAL_MB, IDEAL_MB)), path)
        paths.append(str(path))
    return paths


async def run_sort(tmp_path: Path, scheduler: str) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    run_dir = tmp_path / scheduler
    run_dir.mkdir()
    scenario = make_scenario(
        cluster={
            "reserved": {"count": 1, "slots": 2, "memory_mb": IDEAL_MB + ELASTIC_MB},
            "transient": 0,
            "heartbeat_interval": 0.2,
            "heartbeat_timeout": 3,
            "memory_increment_mb": 1,
        },
        policy={"scheduler": scheduler},
        profiles=sort_profiles(tmp_path),
        jobs=[SORT],
    )
    result = await run_scenario(settings_of(scenario), run_dir)
    assert result.ok, result.summary
    assert check_output(scenario.jobs[0], scenario.seed * 1000, run_dir / "outputs" / "j000") == []
    assert_clean(run_dir)
    tasks = list(csv.DictReader((run_dir / "tasks.csv").open()))
    decisions = list(csv.DictReader((run_dir / "decisions.csv").open()))
    jobs = list(csv.DictReader((run_dir / "jobs.csv").open()))
    assert float(jobs[0]["map_phase_wall_s"]) > 0 and float(jobs[0]["reduce_phase_wall_s"]) > 0
    assert all(t["ideal_memory_mb"] == str(IDEAL_MB) for t in tasks)
    return tasks, decisions


async def test_yarn_me_elastic_tasks_really_spill_and_outputs_stay_exact(tmp_path: Path) -> None:
    tasks, decisions = await run_sort(tmp_path, "yarn-me")
    elastic = [t for t in tasks if t["elastic"] == "1"]
    regular = [t for t in tasks if t["elastic"] == "0"]
    assert elastic and regular
    assert all(int(t["memory_mb"]) == ELASTIC_MB and int(t["spill_bytes"]) > 0 for t in elastic)
    assert all(int(t["memory_mb"]) == IDEAL_MB and int(t["spill_bytes"]) == 0 for t in regular)
    assert all(float(t["predicted_wall_s"]) == 1.5 for t in elastic)
    accepted = [d for d in decisions if d["decision"] == "elastic_accepted"]
    assert {d["task_id"] for d in accepted} == {t["task_id"] for t in elastic}
    ratios = [float(d["allocation_ratio"]) for d in accepted]
    assert ratios == [pytest.approx(ELASTIC_MB / IDEAL_MB, abs=1e-4)] * len(accepted)
    summary = json.loads((tmp_path / "yarn-me" / "summary.json").read_text())
    assert summary["elastic_tasks"] == len(elastic) and summary["elastic_spill_bytes"] > 0
    assert summary["regular_spill_bytes"] == 0 and summary["elastic_model_mae_s"] is not None


async def test_yarn_reserves_the_node_and_never_runs_a_task_below_its_ideal(tmp_path: Path) -> None:
    tasks, decisions = await run_sort(tmp_path, "yarn")
    assert all(t["elastic"] == "0" and int(t["memory_mb"]) == IDEAL_MB for t in tasks)
    assert sum(int(t["spill_bytes"]) for t in tasks) == 0
    assert any(d["decision"] == "reserved" for d in decisions)
    assert not any(d["decision"].startswith("elastic") for d in decisions)
