"""`testbed sweep`: the grid runs, an interrupted sweep resumes without redoing finished cells."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from testbed.app.cli import main
from testbed.app.sweep.grid import Variation, grid

pytestmark = pytest.mark.e2e

SCENARIO = """\
name: tiny
cluster: {reserved: 1, transient: 1, heartbeat_interval: 0.2}
jobs:
  - {workload: sleep, tasks: 2, duration: 0.2}
"""


def test_grid_is_the_product_of_variations_and_seeds() -> None:
    cells = grid(
        [Variation.parse("policy.scheduler=fifo,yarn"), Variation.parse("jobs.0.tasks=1,2,3")], [1, 2]
    )
    assert len(cells) == 12
    assert cells[0].overrides() == ["policy.scheduler=fifo", "jobs.0.tasks=1", "seed=1"]
    assert len({c.name for c in cells}) == 12
    # seed by seed: the six variants of seed 1 run back to back, so a pair is minutes apart
    assert [c.seed for c in cells] == [1] * 6 + [2] * 6


def test_sweep_resumes_and_summarises(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "sweep"
    # A cell finished before the interruption: it must be skipped, its summary kept.
    done = out / "tasks-1_seed-1"
    done.mkdir(parents=True)
    (done / "summary.json").write_text(json.dumps({"mean_jct_s": 123.0, "evictions": 0}))
    # The cell the interruption stopped: its partial record must not leak into its rerun.
    stopped = out / "tasks-2_seed-1"
    stopped.mkdir()
    (stopped / "events.jsonl").write_text('{"t": 0.0, "event": "run_started", "run_id": "stopped"}\n')
    (stopped / "evictions.csv").write_text(
        "t_s,node_id,node_class,reason,lifetime_s,tasks_running,bytes_lost\n0.1,transient-0,transient,lifetime,6,0,0\n"
    )
    args = ["sweep", str(scenario), "--vary", "jobs.0.tasks=1,2", "--seeds", "1", "--out", str(out)]
    assert main(args) == 0
    assert not (out / "logs" / "tasks-1_seed-1.log").exists()
    assert json.loads((stopped / "summary.json").read_text())["evictions"] == 0
    assert (stopped / "events.jsonl").read_text().count('"run_started"') == 1
    rows = {r["run"]: r for r in csv.DictReader((out / "sweep.csv").open())}
    assert float(rows["tasks-1_seed-1"]["mean_jct_s"]) == 123.0
    assert 0 < float(rows["tasks-2_seed-1"]["mean_jct_s"]) < 60
    assert (out / "sweep.png").stat().st_size > 0
    assert "123" in (out / "sweep.md").read_text()
    assert main(["sweep", str(scenario), "--vary", "jobs.0.tasks=1,2", "--out", str(out)]) == 0
    assert "resuming: 2 of 2 runs already done" in capsys.readouterr().err


def test_bad_variation_is_exit_2_and_leaves_no_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    monkeypatch.chdir(tmp_path)  # the default --out, sweeps/<name>, is relative
    assert main(["sweep", str(scenario), "--vary", "nonsense"]) == 2
    assert main(["sweep", str(scenario), "--vary", "policy.scheduler=fifo,nope"]) == 2
    assert main(["sweep", str(scenario), "--vary", "jobs.0.tasks=1", "--repeats", "0"]) == 2
    assert not (tmp_path / "sweeps").exists()


def test_a_failed_run_is_flagged_everywhere_and_fails_the_sweep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The hour-long tasks cannot end within the 15 s timeout: that run's job fails. It showed as
    `-` in sweep.md, vanished from sweep.png and the sweep exited 0."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "sweep"
    vary = ["--vary", "jobs.0.duration=0.2,3600", "--set", "timeout=15s"]
    args = ["sweep", str(scenario), *vary, "--out", str(out)]
    assert main(args) == 1
    assert "1 of 2 runs failed: duration-3600_seed-1 (failed)" in capsys.readouterr().err
    rows = {r["run"]: r for r in csv.DictReader((out / "sweep.csv").open())}
    assert rows["duration-3600_seed-1"]["status"] == "failed"
    assert rows["duration-0.2_seed-1"]["status"] == "ok"
    table = (out / "sweep.md").read_text()
    assert "**1 of 1**: duration-3600_seed-1 (failed)" in table and "**1 run(s) failed**" in table
    assert (out / "sweep.png").stat().st_size > 0
