"""What the master takes from a scenario for YARN/YARN-ME: per-stage ideal memory and task
models from profile files, map/reduce phases of a job, and the elastic model error summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from master.core.jobs import JobRuntime
from master.profiles import profile_models, stage_memory
from master.shell.run import elastic_summary
from testbed.api.policy import PendingTask
from testbed.plan import Dependency, JobPlan, StagePlan
from testbed.scenario.schema import DEFAULT_TASK_MEMORY_MB, ScenarioError
from testbed.settings.profiles import load_profiles
from testbed.workloads.task_model import (
    PenaltyCurve,
    SpillCurve,
    TaskModel,
    TaskProfile,
    load_profile,
    save_profile,
)
from tests.support.scenarios import make_scenario

CURVE = PenaltyCurve.step(1.5)


def write_profiles(directory: Path, workload: str, stages: tuple[int, ...]) -> list[str]:
    paths = []
    for role, ideal in (("map", 10), ("reduce", 20)):
        path = directory / f"{workload}-{role}.json"
        save_profile(TaskProfile(workload, role, TaskModel(ideal, 2.0, CURVE), stages), path)
        paths.append(str(path))
    return paths


def test_stage_ideals_round_trip_through_profile_files(tmp_path: Path) -> None:
    [path, _] = write_profiles(tmp_path, "pagerank", (14, 8, 7, 7))
    assert load_profile(path).stage_ideal_memory_mb == (14, 8, 7, 7)
    bad = tmp_path / "bad.json"
    bad.write_text(Path(path).read_text().replace("14,", "0,"))
    with pytest.raises(ValueError, match="stage_ideal_memory_mb"):
        load_profile(bad)


def test_jobs_without_memory_take_each_stages_ideal_from_the_profile(tmp_path: Path) -> None:
    scenario = make_scenario(
        profiles=write_profiles(tmp_path, "pagerank", (14, 8, 7, 7)),
        jobs=[
            {"workload": "pagerank", "iterations": 4},
            {"workload": "pagerank", "memory_mb": 50},
            {"workload": "sort"},
        ],
    )
    ideal = stage_memory(load_profiles(scenario))
    pagerank, explicit, unprofiled = scenario.jobs
    assert [ideal(pagerank, stage) for stage in range(4)] == [14, 8, 7, 7]
    # stages the profile did not see: the largest profiled ideal of the same role
    assert ideal(pagerank, 5) == 8
    assert ideal(explicit, 0) == ideal(explicit, 3) == 50
    assert ideal(unprofiled, 0) == DEFAULT_TASK_MEMORY_MB


def test_without_stage_ideals_the_roles_ideal_applies(tmp_path: Path) -> None:
    scenario = make_scenario(profiles=write_profiles(tmp_path, "sort", ()), jobs=[{"workload": "sort"}])
    ideal = stage_memory(load_profiles(scenario))
    assert (ideal(scenario.jobs[0], 0), ideal(scenario.jobs[0], 1)) == (10, 20)


def test_task_models_keep_the_tasks_ideal_and_take_the_profiles_duration_and_curve(tmp_path: Path) -> None:
    scenario = make_scenario(profiles=write_profiles(tmp_path, "sort", ()), jobs=[{"workload": "sort"}])
    model_of = profile_models(scenario)
    assert model_of is not None
    reduce = model_of(PendingTask("j000.s1.t0", "j000", 1, 0, 33, workload="sort"))
    assert reduce == TaskModel(33, 2.0, CURVE)
    assert model_of(PendingTask("j001.s0.t0", "j001", 0, 0, 33, workload="wordcount")) is None


def test_task_models_spill_in_proportion_to_the_tasks_ideal(tmp_path: Path) -> None:
    model = TaskModel(10, 2.0, CURVE, SpillCurve(((0.5, 4.0),)))
    path = tmp_path / "sort-map.json"
    save_profile(TaskProfile("sort", "map", model), path)
    scenario = make_scenario(profiles=[str(path)], jobs=[{"workload": "sort"}])
    model_of = profile_models(scenario)
    assert model_of is not None
    bigger = model_of(PendingTask("j000.s0.t0", "j000", 0, 0, 30, workload="sort"))
    assert bigger.expected_spill_mb(15) == 12.0  # half of 30 MB spills 3 x 4 MB
    assert bigger.disk_bandwidth_mb_s(15) == pytest.approx(12.0 / 3.0)


INLINE_MODEL = {
    "workload": "wordcount",
    "role": "map",
    "ideal_memory_mb": 300,
    "ideal_duration_s": 2.5,
    "points": [[0.1, 2.0], [0.5, 1.4], [1.0, 1.0]],
    "spill_mb": [[0.1, 40], [0.5, 20]],
    "stage_ideal_memory_mb": [280, 120],
}


def test_an_inline_model_gives_the_same_profile_as_the_equivalent_file(tmp_path: Path) -> None:
    path = tmp_path / "wordcount-map.json"
    path.write_text(json.dumps(INLINE_MODEL))
    from_file = load_profiles(make_scenario(profiles=[str(path)]))
    inline = load_profiles(make_scenario(profiles=[INLINE_MODEL]))
    assert inline == from_file
    profile = inline[("wordcount", "map")]
    assert profile.model.spill == SpillCurve(((0.1, 40.0), (0.5, 20.0)))
    assert profile.stage_ideal_memory_mb == (280, 120)
    assert stage_memory(inline)(make_scenario().jobs[0], 0) == 280
    rated = {**INLINE_MODEL, "disk_rate_mb_s": 30.0}
    del rated["spill_mb"]
    [only] = load_profiles(make_scenario(profiles=[rated])).values()
    assert only.model.disk_rate_mb_s == 30.0 and only.model.spill is None


def test_a_malformed_profile_is_a_scenario_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{}")
    with pytest.raises(ScenarioError, match="profiles"):
        load_profiles(make_scenario(profiles=[str(path)]))


def two_stage_job() -> JobRuntime:
    plan = JobPlan(
        "sort",
        (StagePlan("sort.map", 2, 2), StagePlan("sort.reduce", 2, 1, (Dependency(0, "shuffle"),), True)),
    )
    return JobRuntime("j000", "sort", "sort", plan, 0.0, 20, stage_memory_mb=(10, 20))


def test_map_and_reduce_phases_span_first_start_to_last_map_end_and_job_finish() -> None:
    job = two_stage_job()
    assert (job.ideal_memory_mb(0), job.ideal_memory_mb(1)) == (10, 20)
    assert job.phase_durations() == (None, None)
    for index, (start, end) in enumerate([(1.0, 4.0), (2.0, 6.0)]):
        attempt = job.launched((0, index), "n", 10, start)
        job.succeeded((0, index), attempt, "url", f"b{index}", (1, 1), end)
    for index, start in enumerate([6.5, 7.0]):
        attempt = job.launched((1, index), "n", 20, start)
        job.succeeded((1, index), attempt, "url", f"r{index}", (1,), 9.0)
    job.finished = 9.5
    assert job.phase_durations() == (5.0, 3.0)


def task_row(elastic: bool, memory: int, predicted: float, start: float, end: float, spill: int) -> dict:
    return {
        "status": "succeeded",
        "elastic": "1" if elastic else "0",
        "memory_mb": str(memory),
        "ideal_memory_mb": "20",
        "predicted_s": str(predicted),
        "start_s": str(start),
        "end_s": str(end),
        "spill_bytes": str(spill),
    }


def test_elastic_summary_reports_the_models_error_and_allocation_ratios() -> None:
    rows = [
        task_row(True, 5, 3.0, 0.0, 4.0, 100),  # 1 s longer than predicted
        task_row(True, 10, 3.0, 0.0, 6.0, 50),  # 3 s longer
        task_row(False, 20, 2.0, 0.0, 1.5, 0),  # 0.5 s shorter
        {**task_row(True, 5, 3.0, 0.0, 9.0, 999), "status": "lost"},  # not a measurement
    ]
    summary = elastic_summary(rows)
    assert summary == {
        "elastic_tasks": 2,
        "elastic_spill_bytes": 150,
        "regular_spill_bytes": 0,
        "mean_allocation_ratio": pytest.approx((0.25 + 0.5 + 1.0) / 3, abs=1e-4),
        "min_allocation_ratio": 0.25,
        "elastic_model_mae_s": 2.0,
        "regular_model_mae_s": 0.5,
    }
    assert elastic_summary([{**rows[0], "predicted_s": ""}]) == {}
