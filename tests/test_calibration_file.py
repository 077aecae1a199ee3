"""``simulation.calibration``: a calibration file's values under the scenario's own, checked."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from master.sim.run import calibration_used
from testbed.scenario import ScenarioError, load_scenario

SCENARIO = """\
name: q
jobs: [{workload: wordcount, size_mb: 1}]
simulation: {calibration: cal.yaml, launch_overhead: 0.5, ops: {sort.map: {s_per_mb: 2, output_ratio: 1}}}
"""
CALIBRATION = """\
simulation:
  launch_overhead: 0.2s
  node_startup: 3
  ops:
    wordcount.map: {s_per_mb: 1.5, output_ratio: 0.05}
    sort.map: {s_per_mb: 9, output_ratio: 1}
measured: {host: here, runs: 2}
"""


def write(tmp_path: Path, calibration: str = CALIBRATION) -> Path:
    (tmp_path / "cal.yaml").write_text(calibration)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    return scenario


def test_the_file_fills_what_the_section_does_not_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir("/")  # relative to the scenario's directory, not the working one
    spec = load_scenario(write(tmp_path)).simulation
    assert spec.calibration == str((tmp_path / "cal.yaml").resolve())
    assert spec.node_startup == 3 and spec.launch_overhead == 0.5  # the scenario's own wins
    assert spec.op("wordcount.map").s_per_mb == 1.5 and spec.op("sort.map").s_per_mb == 2
    assert spec.will_delay == 0.008  # neither gives it: the measured default
    used = calibration_used(spec.calibration)
    assert used == {"path": spec.calibration, "sha256": hashlib.sha256(CALIBRATION.encode()).hexdigest()}
    assert calibration_used(None) is None


def test_set_names_a_file_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = write(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "other.yaml").write_text("simulation: {node_startup: 7}\n")
    monkeypatch.chdir(tmp_path / "elsewhere")
    spec = load_scenario(scenario, ["simulation.calibration=other.yaml"]).simulation
    assert spec.node_startup == 7 and spec.launch_overhead == 0.5


@pytest.mark.parametrize(
    ("calibration", "problem"),
    [
        (None, "simulation.calibration: no such calibration file; make one with `testbed calibrate"),
        ("simulation: {launch_overhead: -1}\n", "simulation.launch_overhead: a duration cannot be negative"),
        ("simulation: {}\nnotes: 1\n", "unknown field 'notes'; it has simulation, measured"),
        ("simulation: {calibration: x.yaml}\n", "unknown field simulation.calibration"),
        ("[1, 2]\n", "expected a mapping with a simulation mapping"),
        ("simulation: {ops: {a.b: {s_per_mb: x}}}\n", "simulation.ops.a.b.s_per_mb"),
    ],
)
def test_a_bad_calibration_names_the_file_and_field(
    tmp_path: Path, calibration: str | None, problem: str
) -> None:
    scenario = write(tmp_path)
    if calibration is None:
        (tmp_path / "cal.yaml").unlink()
    else:
        (tmp_path / "cal.yaml").write_text(calibration)
    with pytest.raises(ScenarioError) as caught:
        load_scenario(scenario)
    (line,) = caught.value.problems
    assert line.startswith(f"{scenario}: simulation")
    assert problem in line
