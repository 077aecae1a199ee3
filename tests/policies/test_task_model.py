"""The task model of memory elasticity (``testbed.workloads.task_model``): penalty and spill
curves, profile files, and the YARN-ME paper's reducer model.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from testbed.workloads.task_model import (
    PenaltyCurve,
    ReducerSpillModel,
    SpillCurve,
    TaskModel,
    TaskProfile,
    load_profile,
    save_profile,
    spilled_mb,
)
from tests.support.policies import SAWTOOTH

STEP_2X = TaskModel(2_500, 10.0, PenaltyCurve.step(2.0))
"""Its spill is unknown (no disk rate, no spill curve)."""


# ---------------------------------------------------------------- the task model


def test_penalty_curve_interpolates_between_measured_points() -> None:
    curve = PenaltyCurve(((0.2, 2.0), (0.6, 1.5), (1.0, 1.0)))
    assert curve.multiplier(0.4) == pytest.approx(1.75)
    assert curve.multiplier(0.8) == pytest.approx(1.25)
    assert curve.multiplier(0.1) == 2.0  # held below the first point
    assert curve.multiplier(1.0) == curve.multiplier(3.0) == 1.0


def test_a_step_curve_penalises_every_under_sized_allocation_alike() -> None:
    curve = PenaltyCurve.step(1.35)
    assert curve.multiplier(0.1) == curve.multiplier(0.999) == 1.35
    assert curve.multiplier(1.0) == 1.0
    assert PenaltyCurve.none().multiplier(0.1) == 1.0


def test_a_sawtooth_curve_is_not_monotone() -> None:
    assert SAWTOOTH.multiplier(0.25) < SAWTOOTH.multiplier(0.5) > SAWTOOTH.multiplier(0.75)


@pytest.mark.parametrize(
    "points",
    [
        (),
        ((0.5, 0.9),),
        ((0.0, 1.5),),
        ((1.2, 1.5),),
        ((0.6, 1.5), (0.3, 1.2)),
        ((0.5, 1.5), (0.5, 1.4), (0.5, 1.3)),
        ((0.5, math.inf),),
    ],
)
def test_invalid_penalty_curves_are_refused(points: tuple) -> None:
    with pytest.raises(ValueError):
        PenaltyCurve(points)


def test_penalized_duration_scales_the_ideal_duration() -> None:
    model = TaskModel(2_000, 10.0, PenaltyCurve(((0.5, 1.5), (1.0, 1.0))))
    assert model.penalized_duration(2_000) == 10.0
    assert model.penalized_duration(500) == 15.0
    assert model.penalized_duration(1_500) == pytest.approx(12.5)
    with pytest.raises(ValueError):
        TaskModel(0, 1.0)


def test_a_spill_curve_interpolates_like_a_penalty_curve_and_is_empty_when_well_sized() -> None:
    curve = SpillCurve(((0.1, 40.0), (0.5, 20.0)))
    assert curve.spilled_mb(0.3) == pytest.approx(30.0)
    assert curve.spilled_mb(0.05) == 40.0 and curve.spilled_mb(0.9) == 20.0  # held outside
    assert curve.spilled_mb(1.0) == 0.0
    with pytest.raises(ValueError, match="spill MB -1"):
        SpillCurve(((0.5, -1.0),))
    assert curve != PenaltyCurve(((0.1, 40.0), (0.5, 20.0)))


def test_the_disk_bandwidth_of_a_task_is_its_expected_spill_over_its_penalized_runtime() -> None:
    measured = TaskModel(1_000, 10.0, PenaltyCurve(((0.5, 1.5), (1.0, 1.0))), SpillCurve(((0.5, 300.0),)))
    assert measured.expected_spill_mb(500) == 300.0
    assert measured.disk_bandwidth_mb_s(500) == pytest.approx(300.0 / 15.0)
    assert measured.disk_bandwidth_mb_s(1_000) == 0.0  # well-sized: no spill
    # the paper's reducer model as the fallback: spilled(m) = (T(m) - T_ideal) * diskRate
    modelled = TaskModel(1_000, 10.0, PenaltyCurve(((0.5, 1.5), (1.0, 1.0))), disk_rate_mb_s=40.0)
    assert modelled.expected_spill_mb(500) == pytest.approx(200.0)
    assert modelled.disk_bandwidth_mb_s(500) == pytest.approx(200.0 / 15.0)
    assert STEP_2X.expected_spill_mb(300) is None and STEP_2X.disk_bandwidth_mb_s(300) is None
    with pytest.raises(ValueError, match="disk_rate_mb_s"):
        TaskModel(1_000, 10.0, disk_rate_mb_s=0.0)


def test_a_resized_model_keeps_its_curves_and_spills_in_proportion() -> None:
    model = TaskModel(1_000, 10.0, SAWTOOTH, SpillCurve(((0.5, 300.0),)), disk_rate_mb_s=40.0)
    bigger = model.resized(2_000)
    assert bigger.penalized_duration(1_000) == model.penalized_duration(500)
    assert bigger.expected_spill_mb(1_000) == 600.0
    assert (bigger.ideal_duration_s, bigger.disk_rate_mb_s) == (10.0, 40.0)


def test_profile_files_round_trip(tmp_path: Path) -> None:
    profile = TaskProfile("wordcount", "reduce", TaskModel(2_048, 12.5, SAWTOOTH))
    path = tmp_path / "wordcount-reduce.json"
    save_profile(profile, path)
    assert load_profile(path) == profile
    data = json.loads(path.read_text())
    assert data["points"][0] == [0.1, 1.6]
    assert data["format"] == "testbed-task-profile/1"
    spilling = TaskModel(2_048, 12.5, SAWTOOTH, SpillCurve(((0.1, 900.0), (0.5, 400.0))), 60.0)
    save_profile(TaskProfile("wordcount", "reduce", spilling), path)
    assert load_profile(path).model == spilling
    assert json.loads(path.read_text())["spill_mb"] == [[0.1, 900.0], [0.5, 400.0]]


def test_the_spill_curve_of_a_profile_file_comes_from_its_measurements(tmp_path: Path) -> None:
    """As ``testbed profile`` writes them: spilled bytes measured at each profiled fraction."""
    mb = 2**20
    measurements = [
        {"fraction": f, "seconds": 1.0, "spill_bytes": spilled * mb}
        for f, spilled in ((1.0, 0), (0.2, 48), (0.6, 8))
    ]
    data = {
        "workload": "sort",
        "role": "reduce",
        "ideal_memory_mb": 100,
        "ideal_duration_s": 1.0,
        "points": [[0.1, 2.0], [1.0, 2.0], [1.0, 1.0]],
        "measurements": measurements,
    }
    path = tmp_path / "sort-reduce.json"
    path.write_text(json.dumps(data))
    model = load_profile(path).model
    assert model.spill == SpillCurve(((0.2, 48.0), (0.6, 8.0)))
    assert model.disk_bandwidth_mb_s(40) == pytest.approx(28.0 / 2.0)
    path.write_text(json.dumps({**data, "spill_mb": [[0.5, 5.0]]}))
    assert load_profile(path).model.spill == SpillCurve(((0.5, 5.0),))  # given beats measured
    path.write_text(json.dumps({**data, "measurements": [{"fraction": 0.5}]}))
    with pytest.raises(ValueError, match="spill_bytes"):
        load_profile(path)


def test_profile_files_tolerate_extra_measurements_but_not_missing_fields(tmp_path: Path) -> None:
    data = {
        "workload": "sort",
        "role": "map",
        "ideal_memory_mb": 512,
        "ideal_duration_s": 3.0,
        "points": [[0.1, 1.3], [1.0, 1.3], [1.0, 1.0]],
        "spilled_mb": [120, 0],
    }
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    assert load_profile(path).model.penalty == PenaltyCurve.step(1.3)
    path.write_text(json.dumps({**data, "role": "shuffle"}))
    with pytest.raises(ValueError, match="role"):
        load_profile(path)
    del data["points"]
    path.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="points"):
        load_profile(path)


def test_spilled_bytes_follow_the_papers_example() -> None:
    assert spilled_mb(2_010, 500) == 2_000
    assert spilled_mb(2_010, 2_000) == 2_000
    assert spilled_mb(2_010, 1_500) == 1_500
    assert spilled_mb(2_010, 2_010) == 0


def test_reducer_model_from_two_profiling_runs() -> None:
    # ideal: 20 s; under-sized with 1,000 MB of a 2,010 MB input spills 2,000 MB in +10 s
    model = ReducerSpillModel.from_profiling_runs(2_010, 20.0, 1_000, 30.0)
    assert model.disk_rate_mb_s == pytest.approx(200.0)
    assert model.runtime_s(1_000) == pytest.approx(30.0)
    assert model.runtime_s(1_500) == pytest.approx(27.5)  # spills less with less memory
    assert model.runtime_s(2_010) == 20.0
    task = model.task_model(step=0.01)
    assert task.ideal_memory_mb == 2_010
    assert task.expected_spill_mb(1_000) == pytest.approx(2_000.0)  # the model's own spill
    assert task.penalized_duration(1_508) < task.penalized_duration(2_000)  # sawtooth
    assert task.penalized_duration(2_000) == pytest.approx(30.0)  # jump just below ideal
    with pytest.raises(ValueError):
        ReducerSpillModel.from_profiling_runs(2_010, 20.0, 3_000, 30.0)  # did not spill
