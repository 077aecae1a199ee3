"""``testbed run --backend sim`` and ``backend: sim``: a run directory like a real run's,
marked ``backend: sim``; ``check-output`` refuses it in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from testbed.app.cli import main

SCENARIO = {
    "name": "cli-sim",
    "cluster": {"reserved": 1, "transient": 2},
    "jobs": [{"workload": "wordcount", "size_mb": 2, "maps": 2, "reduces": 2}],
}


def write(tmp_path: Path, **fields: object) -> Path:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump({**SCENARIO, **fields}))
    return path


def test_run_backend_sim_writes_a_run_directory_marked_sim(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["run", str(write(tmp_path)), "--backend", "sim", "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == "sim" and summary["succeeded"] == 1
    for table in ("events.jsonl", "jobs.csv", "tasks.csv", "nodes.csv"):
        assert (out / table).stat().st_size > 0, table
    assert not (out / "outputs").exists()
    assert main(["report", str(out)]) == 0


def test_the_scenario_can_ask_for_the_simulator(tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert main(["run", str(write(tmp_path, backend="sim")), "--out", str(out)]) == 0
    assert json.loads((out / "summary.json").read_text())["backend"] == "sim"


def test_check_output_says_a_simulated_run_has_no_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run"
    main(["run", str(write(tmp_path)), "--set", "backend=sim", "--out", str(out)])
    capsys.readouterr()
    assert main(["check-output", "--run", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "simulated run" in error


def test_more_nodes_than_a_real_backend_runs_are_for_the_simulator(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    big = write(tmp_path, cluster={"reserved": 1, "transient": 2000})
    assert main(["validate", str(big)]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and "backend: sim" in error
    assert main(["validate", str(big), "--set", "backend=sim"]) == 0
