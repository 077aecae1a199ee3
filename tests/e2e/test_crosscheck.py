"""`testbed crosscheck`: one cell run for real (local agents) and simulated, compared.

The first test is the CI's cross-check that can fail: a small scenario with an eviction, at a
tolerance the model meets with margin (tests/support/crosscheck_ci.py: measured over 5 seeds),
so a model change that breaks the agreement fails it, as a deliberately wrong one does here.
The others assert what is deterministic: the table's cells and metrics, and that its numbers
are those of the two run directories."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest
import yaml

from testbed.app.cli import main
from tests.support.crosscheck_ci import SCENARIO as EVICTED
from tests.support.crosscheck_ci import TOLERANCE

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240)]

SCENARIO = """\
name: tiny
cluster: {reserved: 1, transient: 1, heartbeat_interval: 0.2}
jobs:
  - {workload: sleep, tasks: 2, duration: 0.3}
"""


def test_crosscheck_compares_a_real_and_a_simulated_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(EVICTED)
    out = tmp_path / "cc"
    args = ["crosscheck", str(scenario), "--out", str(out), "--tolerance", TOLERANCE]
    assert main(args) == 0
    real = json.loads((out / "real" / "seed-1" / "summary.json").read_text())
    sim = json.loads((out / "sim" / "seed-1" / "summary.json").read_text())
    assert real.get("backend") != "sim" and sim["backend"] == "sim"
    rows = {r["metric"]: r for r in csv.DictReader((out / "crosscheck.csv").open())}
    jct = rows["mean_jct_s"]
    assert float(jct["real_mean"]) == real["mean_jct_s"]
    assert float(jct["sim_mean"]) == sim["mean_jct_s"]
    assert float(jct["abs_error"]) == pytest.approx(sim["mean_jct_s"] - real["mean_jct_s"])
    assert float(jct["rel_error"]) == pytest.approx(
        (sim["mean_jct_s"] - real["mean_jct_s"]) / real["mean_jct_s"]
    )
    assert jct["within"] == "True" and rows["evictions"]["within"] == "True", jct
    assert rows["relaunched_ratio"]["within"] == "True" and float(rows["evictions"]["real_mean"]) == 1
    assert "| scenario | mean_jct_s |" in (out / "crosscheck.md").read_text()
    assert (out / "crosscheck.png").stat().st_size > 0
    assert "cross-check directory" in capsys.readouterr().out
    # a deliberately wrong model beside the same real run (resumed, not rerun): a calibration
    # whose Last Will reaches the master 3 s after the eviction (measured: 8 ms) fails the
    # CI's tolerance (measured +62%), exit 1 naming the metric
    broken = tmp_path / "broken"
    shutil.copytree(out / "real", broken / "real")
    late_will = tmp_path / "late-will.yaml"
    late_will.write_text("simulation: {will_delay: 3.0}\n")
    calibrated = ["--set", f"simulation.calibration={late_will}", "--tolerance", TOLERANCE]
    assert main(["crosscheck", str(scenario), "--out", str(broken), *calibrated]) == 1
    err = capsys.readouterr().err
    assert "resuming: 1 of 1 runs already done" in err
    assert "beyond tolerance: scenario mean_jct_s: error +" in err


def test_calibrate_simulates_with_the_calibration_made_beside_the_real_runs(tmp_path: Path) -> None:
    """``--calibrate``: the sim side takes ``<out>/calibration.yaml``; one already there (an
    earlier call's) is reused, not measured again. (The measuring is ``testbed calibrate``'s,
    tested below.)"""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "cc"
    out.mkdir()
    calibration = out / "calibration.yaml"
    calibration.write_text("simulation: {launch_overhead: 0.25s}\nmeasured: {host: an earlier call}\n")
    assert main(["crosscheck", str(scenario), "--out", str(out), "--calibrate"]) == 0
    sim = json.loads((out / "sim" / "seed-1" / "summary.json").read_text())["simulation"]
    assert sim["calibration"]["path"] == str(calibration.resolve())
    assert sim["launch_overhead"] == 0.25
    real = yaml.safe_load((out / "real" / "seed-1" / "scenario.yaml").read_text())
    assert "calibration" not in (real.get("simulation") or {})
    assert f"`{calibration.resolve()}`" in (out / "crosscheck.md").read_text()
    assert not (out / "calibration-runs").exists()


def test_calibrate_and_a_calibration_of_ones_own_conflict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    args = ["crosscheck", str(scenario), "--calibrate", "--set", "simulation.calibration=c.yaml"]
    assert main([*args, "--out", str(tmp_path / "cc")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("--calibrate measures the calibration: drop --set simulation.calibration")
    assert not (tmp_path / "cc").exists()


def test_a_bad_tolerance_is_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    assert main(["crosscheck", str(scenario), "--out", str(tmp_path), "--tolerance", "jtc=5%"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("--tolerance 'jtc=5%': expected METRIC=LIMIT")
    assert not (tmp_path / "real").exists()


def test_calibrate_fits_the_model_from_real_runs(tmp_path: Path) -> None:
    scenario = tmp_path / "c.yaml"
    scenario.write_text(
        "name: c\ncluster: {reserved: 1, transient: 1}\n"
        "jobs: [{workload: wordcount, size_mb: 2, maps: 2, reduces: 1}]\n"
    )
    (tmp_path / "calibration").mkdir()
    out = tmp_path / "calibration" / "unisolated.yaml"  # the file a simulated run takes by itself
    assert main(["calibrate", str(scenario), "--seeds", "1", "--out", str(out)]) == 0
    document = yaml.safe_load(out.read_text())
    simulation, measured = document["simulation"], document["measured"]
    assert set(simulation["ops"]) == {"wordcount.map", "wordcount.reduce"}
    assert simulation["ops"]["wordcount.map"]["s_per_mb"] > 0
    assert simulation["node_startup"] > 0 and "will_delay" not in simulation  # nothing was evicted
    assert measured["runs"] == [str(tmp_path / "calibration" / "unisolated-runs" / "seed-1")]
    assert measured["samples"]["launch_overhead"] == "3 attempts"
    # the file is the calibration a simulated run of the scenario beside it loads and names
    sim = tmp_path / "sim"
    assert main(["run", str(scenario), "--backend", "sim", "--out", str(sim)]) == 0
    used = json.loads((sim / "summary.json").read_text())["simulation"]
    assert used["calibration"]["path"] == str(out.resolve())
    assert used["ops"]["wordcount.map"] == simulation["ops"]["wordcount.map"]
