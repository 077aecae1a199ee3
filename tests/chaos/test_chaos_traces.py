"""Traces in: the testbed's interruption-trace CSV, its Kaplan-Meier model, node-by-node replay,
and the Alibaba spot-GPU converter."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from master.chaos.plan import plan_evictions
from testbed.app.chaos_check import ks_distance
from testbed.chaosmodels.lifetimes import lifetime_for, parse_lifetime, rng_for
from testbed.chaosmodels.traces import read_trace
from testbed.scenario.loading import ScenarioError
from testbed.scenario.schema import load_scenario

TRACE = """instance_type,zone,start,end
m5.large,a,0,10
m5.large,b,0,20
c5.xlarge,a,0,40
m5.large,a,5,
"""


def write(tmp_path: Path, text: str = TRACE, name: str = "trace.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_rows_are_selected_and_a_row_without_end_is_censored_at_the_traces_end(tmp_path: Path) -> None:
    path = write(tmp_path)
    assert read_trace(path, "m5.large") == ([10.0, 20.0, 35.0], [False, False, True])  # last time 40
    assert read_trace(path, zone="a") == ([10.0, 40.0, 35.0], [False, False, True])
    with pytest.raises(ValueError, match="no rows of instance_type 'p3'"):
        read_trace(path, "p3")
    iso = write(tmp_path, "start,end\n2024-03-01T10:00:00+00:00,2024-03-01T13:20:00+00:00\n", "iso.csv")
    assert read_trace(iso) == ([12000.0], [False])


def test_the_distribution_is_kaplan_meier_by_hand(tmp_path: Path) -> None:
    """m5.large: 10 and 20 observed, one censored at 35: S(10) = 2/3, S(20) = 1/3, then a third
    of the nodes are never evicted (the trace saw them outlive every interruption)."""
    model = parse_lifetime({"trace": {"file": str(write(tmp_path)), "instance_type": "m5.large"}})
    assert model.cdf_at(np.array([9.9, 10.0, 19.0, 20.0, 1e9])) == pytest.approx(
        [0, 1 / 3, 1 / 3, 2 / 3, 2 / 3]
    )
    assert model.cdf_before(np.array([10.0, 20.0])) == pytest.approx([0, 1 / 3])
    draws = model.sample(rng_for(3, 0), 3000)
    assert set(np.unique(draws)) == {10.0, 20.0, math.inf}
    assert np.mean(np.isinf(draws)) == pytest.approx(1 / 3, abs=0.03)
    finite = draws[np.isfinite(draws)]
    assert ks_distance(finite, model) < 0.4  # a third of the mass is 'never': compare the finite part
    assert "trace(" in model.describe() and "33% never" in model.describe()


def test_a_trace_replayed_node_by_node(tmp_path: Path) -> None:
    model = parse_lifetime({"trace": {"file": str(write(tmp_path)), "replay": "nodes"}})
    lives = [lifetime_for(model, 1, 1, k) for k in range(5)]
    assert lives == [10.0, 20.0, 40.0, None, 10.0]  # row 3 has no end: never; ordinal 4 wraps


def test_the_plan_replays_the_trace(tmp_path: Path) -> None:
    path = write(tmp_path, "start,end\n0,60\n0,120\n0,30\n")
    body = {
        "name": "replay",
        "cluster": {"transient": 3, "reserved": 1},
        "jobs": [{"workload": "sleep"}],
        "chaos": {
            "transient": {"lifetime": {"trace": {"file": "trace.csv", "replay": "nodes"}}, "replace": False}
        },
    }
    scenario_file = tmp_path / "scenario.yaml"
    scenario_file.write_text(yaml.safe_dump(body))
    scenario = load_scenario(scenario_file)
    assert scenario.chaos.transient.lifetime == {"trace": {"file": str(path.resolve()), "replay": "nodes"}}
    plan = plan_evictions(scenario, 3600, base_dir=tmp_path)
    assert [(e.node_id, e.trace_s) for e in plan] == [
        ("transient-2", 30.0),
        ("transient-0", 60.0),
        ("transient-1", 120.0),
    ]


@pytest.mark.parametrize(
    ("text", "lifetime", "message"),
    [
        ("a,b\n1,2\n", None, "the header must name columns start and end"),
        ("start,end\n5,1\n", None, "line 2: end comes before start"),
        ("start,end\nyesterday,5\n", None, "line 2: start: expected seconds or an ISO 8601 timestamp"),
        ("start,end\n0,\n", None, "no interruption among the rows selected"),
        (TRACE, {"file": "trace.csv", "replay": "all"}, "trace replay: expected distribution or nodes"),
        (TRACE, {"file": "trace.csv", "type": "x"}, "trace: unknown key 'type'"),
        ("start,end\n0,5\n", {"file": "trace.csv", "zone": "a"}, "no zone column to select 'a' by"),
    ],
)
def test_a_bad_trace_is_one_line_naming_file_and_field(
    tmp_path: Path, text: str, lifetime: object, message: str
) -> None:
    write(tmp_path, text)
    body = {
        "name": "bad",
        "jobs": [{"workload": "sleep"}],
        "chaos": {"transient": {"lifetime": {"trace": lifetime or "trace.csv"}}},
    }
    scenario_file = tmp_path / "scenario.yaml"
    scenario_file.write_text(yaml.safe_dump(body))
    with pytest.raises(ScenarioError, match=message) as error:
        load_scenario(scenario_file)
    assert "chaos.transient.lifetime" in str(error.value) and "\n" not in str(error.value)


JOB_INFO = """job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type
239255,13,A10,20,1,1,0,2764799,HP
437260,57,A100-SXM4-80GB,15,1,2,9589663,41060,Spot
437262,57,A10,15,1,1,9589700,3600,Spot
"""


def test_the_alibaba_spot_gpu_converter(tmp_path: Path) -> None:
    source = write(tmp_path, JOB_INFO, "job_info_df.csv")
    out = tmp_path / "lifetimes.csv"
    cli = [sys.executable, "-m", "testbed.app.cli", "chaos", "import-trace", "alibaba-spot-gpu"]
    done = subprocess.run([*cli, str(source), "--out", str(out)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert out.read_text().splitlines() == [
        "instance_type,zone,start,end",
        "A100-SXM4-80GB,,9589663,9630723",  # one row per worker: 2
        "A100-SXM4-80GB,,9589663,9630723",
        "A10,,9589700,9593300",
    ]
    model = parse_lifetime({"trace": {"file": str(out), "instance_type": "A10"}})
    assert model.sample(rng_for(1, 0), 3).tolist() == [3600.0] * 3
    bad = write(tmp_path, "a,b\n1,2\n", "other.csv")
    refused = subprocess.run([*cli, str(bad)], capture_output=True, text=True, check=False)
    assert refused.returncode == 2 and refused.stderr.strip().count("\n") == 0
    assert "not the Alibaba spot-GPU trace's job_info_df.csv: no column gpu_model" in refused.stderr
