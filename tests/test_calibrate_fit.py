"""testbed/calibrate.py: the execution model fitted from a run directory's tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.calibrate import CALIBRATION_SCENARIO, fit, stage_ops
from testbed.scenario import parse_scenario
from testbed.scenario_sim import OP_MODELS

MB = 2**20
TASKS = """\
task_id,job_id,stage,start_s,end_s,status,bytes_in,bytes_out,compute_s
j000.s0.t0,j000,0,0.0,2.2,succeeded,{mb},{half},2.0
j000.s0.t1,j000,0,0.0,4.4,succeeded,{two_mb},{mb},4.0
j000.s0.t2,j000,0,0.0,9.0,failed,{mb},0,8.0
j000.s1.t0,j000,1,4.4,5.0,succeeded,{mb},0,0.2
j001.s0.t0,j001,0,0.0,1.0,succeeded,{mb},{mb},0.5
"""
JOBS = "job_id,workload\nj000,sort\nj001,sleep\n"
EVENTS = [
    {"t": 0.0, "event": "node_launching", "node": "reserved-0"},
    {"t": 1.0, "event": "node_launching", "node": "transient-0"},
    {"t": 2.0, "event": "node_up", "node": "reserved-0"},
    {"t": 5.0, "event": "node_up", "node": "transient-0"},
    {"t": 6.0, "event": "node_lost", "node": "transient-0", "detect_s": 0.02},
    {"t": 7.0, "event": "node_lost", "node": "reserved-0", "detect_s": None},
]


def run_dir(tmp_path: Path, dilation: float = 1.0) -> Path:
    run = tmp_path / f"run-{dilation}"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"dilation": dilation}))
    (run / "tasks.csv").write_text(TASKS.format(mb=MB, two_mb=2 * MB, half=MB // 2))
    (run / "jobs.csv").write_text(JOBS)
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in EVENTS))
    return run


def test_fit_takes_ratios_of_sums_and_medians(tmp_path: Path) -> None:
    values, samples = fit([run_dir(tmp_path)], {("sort", 0): "sort.map", ("sort", 1): "sort.reduce"})
    assert values["ops"]["sort.map"] == {"s_per_mb": 2.0, "output_ratio": 0.5}  # 6 s / 3 MB, 1.5 / 3 MB
    assert values["ops"]["sort.reduce"] == {
        "s_per_mb": 0.2,
        "output_ratio": OP_MODELS["sort.reduce"].output_ratio,
    }
    assert values["launch_overhead"] == pytest.approx(0.4)  # median of 0.2, 0.4, 0.4 (failed left out)
    assert values["node_startup"] == 3.0  # median of 2 and 4
    assert values["will_delay"] == 0.02
    assert samples == {
        "launch_overhead": "3 attempts",
        "node_startup": "2 node starts",
        "will_delay": "1 evicted nodes",
    }


def test_fit_reports_emulated_seconds(tmp_path: Path) -> None:
    values, _ = fit([run_dir(tmp_path, dilation=2.0)], {("sort", 0): "sort.map"})
    assert values["ops"]["sort.map"]["s_per_mb"] == 1.0
    assert values["node_startup"] == 1.5 and values["will_delay"] == 0.01


def test_the_calibration_scenario_covers_every_builtin_op() -> None:
    ops = set(stage_ops(parse_scenario(CALIBRATION_SCENARIO)).values())
    assert ops == set(OP_MODELS)
