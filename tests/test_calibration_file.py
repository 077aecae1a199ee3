"""``simulation.calibration``: a calibration file's values under the scenario's own, checked."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

import pytest

from master.shell.run import run_blocking
from master.sim.run import SimBackend, calibration_used, sim_settings
from testbed.scenario.schema import ScenarioError, load_scenario

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


def beside(tmp_path: Path, mode: str, simulation: str = "") -> Path:
    """A scenario in ``tmp_path`` and ``calibration/<mode>.yaml`` beside it."""
    (tmp_path / "calibration").mkdir(exist_ok=True)
    (tmp_path / "calibration" / f"{mode}.yaml").write_text(CALIBRATION)
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: q\nfidelity: {mode: faithful}\njobs: [{workload: wordcount, size_mb: 1}]\n" + simulation
    )
    return scenario


def test_a_simulated_run_takes_the_calibration_of_its_mode_beside_the_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir("/")
    scenario = beside(tmp_path, "faithful")
    found = str((tmp_path / "calibration" / "faithful.yaml").resolve())
    spec = load_scenario(scenario, ["backend=sim"]).simulation
    assert spec.calibration == found and spec.node_startup == 3
    run = tmp_path / "run"
    run.mkdir()
    summary = run_blocking(sim_settings(load_scenario(scenario, ["backend=sim"])), run, SimBackend()).summary
    assert summary["simulation"]["calibration"] == {
        "path": found,
        "sha256": hashlib.sha256(CALIBRATION.encode()).hexdigest(),
    }
    # a real run has no model to calibrate: its scenario (and scenario.yaml) names none
    assert load_scenario(scenario).simulation.calibration is None
    assert load_scenario(scenario, ["backend=local"]).simulation.calibration is None


def test_only_the_file_of_the_scenarios_mode_is_taken(tmp_path: Path) -> None:
    scenario = beside(tmp_path, "unisolated")
    assert load_scenario(scenario, ["backend=sim"]).simulation.calibration is None
    sets = ["backend=sim", "fidelity.mode=unisolated"]
    assert load_scenario(scenario, sets).simulation.calibration == str(
        (tmp_path / "calibration" / "unisolated.yaml").resolve()
    )


def test_a_named_calibration_or_null_wins_over_the_one_beside(tmp_path: Path) -> None:
    scenario = beside(tmp_path, "faithful", "simulation: {calibration: null}\n")
    spec = load_scenario(scenario, ["backend=sim"]).simulation
    assert spec.calibration is None and spec.node_startup == 1.45  # the built-in default
    (tmp_path / "other.yaml").write_text("simulation: {node_startup: 7}\n")
    spec = load_scenario(scenario, ["backend=sim", "simulation.calibration=other.yaml"]).simulation
    assert spec.calibration == str((tmp_path / "other.yaml").resolve()) and spec.node_startup == 7


def test_a_per_task_constant_adds_to_every_attempt(tmp_path: Path) -> None:
    ops = "{wordcount.map: {s_per_mb: 0.5, output_ratio: 0.05, fixed_s: 2}}"
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: q\nbackend: sim\njobs: [{workload: wordcount, size_mb: 4, maps: 2}]\n"
        f"simulation: {{ops: {ops}}}\n"
    )
    run = tmp_path / "run"
    run.mkdir()
    run_blocking(sim_settings(load_scenario(scenario)), run, SimBackend())
    maps = [r for r in csv.DictReader((run / "tasks.csv").open()) if r["stage"] == "0"]
    assert [float(r["compute_wall_s"]) for r in maps] == [3.0, 3.0]  # 2 s + 0.5 s/MB x 2 MB


def test_the_crosscheck_names_the_calibration_and_where_it_was_measured(tmp_path: Path) -> None:
    from testbed.app.crosscheck.run import calibration_note

    scenario = beside(tmp_path, "faithful")
    note = calibration_note(load_scenario(scenario, ["backend=sim"]))
    assert str((tmp_path / "calibration" / "faithful.yaml").resolve()) in note
    assert "measured on here at load unknown; **this host is " in note
    assert "mode" not in note  # the calibration's file says no mode: no warning
    assert calibration_note(load_scenario(scenario)) == (
        "Simulated with the execution model's defaults (no calibration).\n"
    )
