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


def test_the_run_directory_is_printed_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Named when the run starts (where to look while it runs), not again under the JCT table."""
    out = tmp_path / "run"
    assert main(["run", str(write(tmp_path)), "--backend", "sim", "--out", str(out)]) == 0
    printed = capsys.readouterr()
    lines = [line for line in (printed.out + printed.err).splitlines() if "run directory" in line]
    assert lines == [f"run directory: {out}"]


def test_a_dry_run_plans_to_the_end_of_the_jobs_not_to_the_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Jobs that end seconds in, a timeout of 10 h and a node lifetime of 30 s: the plan went
    on to 10 h (2,400 evictions); it stops where a simulated run's last job ends, and says so."""
    chaos = {"transient": {"lifetime": {"fixed": "30s"}}}
    path = write(tmp_path, chaos=chaos, timeout="10h")
    assert main(["run", str(path), "--dry-run"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("horizon: ") and "where the last job ends in a simulated run" in lines[0]
    assert lines[0].endswith("the timeout would plan to 10h"), lines[0]
    evictions = int(lines[-1].split(" evictions")[0])
    assert evictions < 20, lines[-1]  # 2 nodes for the seconds the job runs, not 2,400


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
