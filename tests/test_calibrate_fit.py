"""testbed/app/calibrate.py: the execution model fitted from a run directory's tables."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from master.shell.run import run_blocking
from master.sim.run import SimBackend, sim_settings
from testbed.app.calibrate import (
    CALIBRATION_SCENARIO,
    COPY_CPU_KEYS,
    compute_seconds,
    copy_cpu,
    final_split_ops,
    fit,
    fit_line,
    launch_values,
    stage_ops,
    startup_values,
    write_calibration_scenario,
)
from testbed.app.host_settings import host_dilation
from testbed.app.sim_commands import calibration_overrides
from testbed.scenario.schema import load_scenario, parse_scenario
from testbed.scenario.simulation import FINAL_OP, OP_MODELS

MB = 2**20
CALIBRATED = {op for op in OP_MODELS if op.partition(".")[0] in ("wordcount", "sort", "pagerank", "mlr")}
"""The ops the calibration scenario measures: every built-in workload's."""
TASKS = """\
task_id,job_id,stage,attempt,start_s,end_s,status,bytes_in,bytes_out,compute_s
j000.s0.t0,j000,0,0,0.0,2.2,succeeded,{mb},{half},2.0
j000.s0.t1,j000,0,0,0.0,4.4,succeeded,{two_mb},{mb},4.0
j000.s0.t2,j000,0,0,0.0,9.0,failed,{mb},0,8.0
j000.s1.t0,j000,1,0,4.4,5.0,succeeded,{mb},0,0.2
j001.s0.t0,j001,0,0,0.0,1.0,succeeded,{mb},{mb},0.5
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
    # 2 s for 1 MB, 4 s for 2 MB: a line through the origin; output 1.5 of 3 MB
    assert values["ops"]["sort.map"] == {"s_per_mb": 2.0, "output_ratio": 0.5, "fixed_s": 0.0}
    assert values["ops"]["sort.reduce"] == {
        "s_per_mb": 0.2,
        "output_ratio": OP_MODELS["sort.reduce"].output_ratio,
        "fixed_s": 0.0,
    }
    assert values["launch_overhead"] == pytest.approx(0.4)  # median of 0.2, 0.4, 0.4 (failed left out)
    assert values["node_startup"] == 3.0  # median of 2 and 4
    assert values["will_delay"] == 0.02
    assert values["fetch_overlap"] is True  # its streamed ops are fitted for it (compute_seconds)
    assert samples == {
        "ops.sort.map": "2 attempts of 1 to 2 MB",
        "ops.sort.reduce": "1 attempts of 1 to 1 MB",
        "launch_overhead": "3 attempts",
        "node_startup": "2 node starts",
        "will_delay": "1 evicted nodes",
    }


def test_fit_reports_emulated_seconds(tmp_path: Path) -> None:
    values, _ = fit([run_dir(tmp_path, dilation=2.0)], {("sort", 0): "sort.map"})
    assert values["ops"]["sort.map"]["s_per_mb"] == 1.0
    assert values["node_startup"] == 1.5 and values["will_delay"] == 0.01


def test_faithful_start_ups_are_given_with_their_nodes_cores(tmp_path: Path) -> None:
    """A faithful run's agents start inside their nodes' CPU quotas: each start is scaled to the
    median node's cores (reserved-0 of 2 cores in 2 s, transient-0 of 1 core in 4 s: 2 s at 2
    cores each), and the file says of which cores; an unisolated run's starts are as measured."""
    run = run_dir(tmp_path)
    (run / "summary.json").write_text(json.dumps({"dilation": 1.0, "fidelity_mode": "faithful"}))
    events = [{**e, "class": e["node"].split("-")[0]} for e in EVENTS]
    (run / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    cores = {"reserved": 2.0, "transient": 1.0}
    values, _ = fit([run], {}, cores=cores)
    assert (values["node_startup"], values["node_startup_cores"]) == (2.0, 2.0)
    # scaled to 2 cores: 2.0, 2.5, 2.2
    assert startup_values([(2.0, 2.0), (5.0, 1.0), (2.2, 2.0)]) == {
        "node_startup": 2.2,
        "node_startup_cores": 2.0,
    }
    (run / "summary.json").write_text(json.dumps({"dilation": 1.0, "fidelity_mode": "unisolated"}))
    values, _ = fit([run], {}, cores=cores)
    assert values["node_startup"] == 3.0 and "node_startup_cores" not in values


def test_a_launch_is_fitted_per_node_size_when_the_nodes_had_several() -> None:
    """Faithful runs on 1- and 2-core nodes, medians 0.03 and 0.016 s: 0.002 + 0.028 / cores.
    Attempts of an unisolated run (no quota), of one node size, or no faster on the larger
    node: the median attempt's, for every node."""
    overheads = [(0.03, 1.0), (0.032, 1.0), (0.028, 1.0), (0.015, 2.0), (0.016, 2.0), (0.017, 2.0)]
    assert launch_values(overheads) == pytest.approx({"launch_overhead": 0.002, "launch_cpu_s": 0.028})
    assert launch_values([(seconds, None) for seconds, _ in overheads]) == {"launch_overhead": 0.0225}
    assert launch_values([(seconds, 1.0) for seconds, _ in overheads]) == {"launch_overhead": 0.0225}
    assert launch_values([(0.01, 1.0), (0.02, 2.0)]) == {"launch_overhead": 0.015}


def test_a_streamed_ops_compute_is_no_less_than_its_workers_cpu() -> None:
    """MLR's Spark aggregate sums its frames as they come: 0.26 s measured, 0.25 s of modelled
    fetch, 0.075 s of the worker's CPU: 0.075, not 0.01 (and no more than the measured). An op
    that does not stream: the measured less the fetch, as before."""
    assert compute_seconds("mlr.aggregate", 0.26, 0.25, {"cpu_s": "0.075"}) == pytest.approx(0.075)
    assert compute_seconds("mlr.model.final", 0.1, 0.0, {"cpu_s": "0.12"}) == pytest.approx(0.1)
    assert compute_seconds("mlr.aggregate", 1.0, 0.1, {"cpu_s": "0.5"}) == pytest.approx(0.9)
    assert compute_seconds("sort.reduce", 0.26, 0.25, {"cpu_s": "0.075"}) == pytest.approx(0.01)


def test_the_calibration_scenario_covers_every_calibrated_op() -> None:
    ops = set(stage_ops(parse_scenario(CALIBRATION_SCENARIO)).values())
    assert ops == CALIBRATED


def test_fit_line_separates_a_per_task_constant_from_the_rate() -> None:
    sizes = [1.0, 1.0, 4.0, 4.0, 16.0]
    fixed, rate = fit_line(sizes, [0.3 + 0.05 * mb for mb in sizes])
    assert fixed == pytest.approx(0.3) and rate == pytest.approx(0.05)


def test_fit_line_keeps_both_parts_non_negative() -> None:
    # seconds fall with size: no rate, the mean as a constant
    assert fit_line([1.0, 4.0], [2.0, 1.0]) == (1.5, 0.0)
    # the best line would start below 0: through the origin instead
    fixed, rate = fit_line([1.0, 2.0, 4.0], [0.5, 1.9, 4.1])
    assert fixed == 0.0 and rate == pytest.approx((0.5 + 3.8 + 16.4) / 21)


def test_fit_line_of_one_size_is_the_ratio_of_the_sums() -> None:
    """Splits of nearly one size cannot tell a constant from a rate: the whole time per MB."""
    fixed, rate = fit_line([4.0, 4.0, 4.1, 4.0], [1.0, 3.0, 1.2, 1.0])
    assert fixed == 0.0 and rate == pytest.approx(6.2 / 16.1)


def test_calibrating_on_the_simulator_gives_back_its_model(tmp_path: Path) -> None:
    """The calibration scenario simulated with a known per-task constant and rate per op, and
    its own for the final stages of mlr's model and PageRank's iterate: the fit of its tables
    finds them again (a constant where an op's attempts are of several sizes: mlr's aggregate
    and model, final or not, read one size, and have none)."""
    model = {
        op: {"s_per_mb": round(0.01 * (i + 1), 4), "output_ratio": spec.output_ratio, "fixed_s": 0.05 * i}
        for i, (op, spec) in enumerate(sorted(OP_MODELS.items()))
        if op in CALIBRATED
    }
    model["mlr.model"]["fixed_s"] = 0.0
    model["mlr.model.final"] = {"s_per_mb": 0.5, "output_ratio": 0.5}
    model["pagerank.iterate.final"] = {"s_per_mb": 0.2, "output_ratio": 0.0, "fixed_s": 0.1}
    # the agents' serving takes no CPU here: it would slow the attempts beside it, which the fit
    # of the ops counts as theirs (so a real calibration does; test_cpu.py tests the sharing);
    # nor do MLR's sums overlap their fetch, whose time the fit here is not given to take off
    simulation = {"ops": model, "serve_cpu_s_per_mb": 0, "fetch_overlap": False}
    scenario = parse_scenario({**CALIBRATION_SCENARIO, "simulation": simulation})
    run = tmp_path / "run"
    run.mkdir()
    assert run_blocking(sim_settings(scenario), run, SimBackend()).ok
    values, samples = fit([run], stage_ops(scenario), final_split=final_split_ops(scenario))
    assert values["ops"].keys() == model.keys()
    for op, expected in model.items():
        assert values["ops"][op]["fixed_s"] == pytest.approx(expected.get("fixed_s", 0.0), abs=2e-3), samples
        assert values["ops"][op]["s_per_mb"] == pytest.approx(expected["s_per_mb"], abs=2e-3), samples


def test_an_ops_final_stages_are_fitted_apart_when_it_also_runs_as_another_stage(tmp_path: Path) -> None:
    """PageRank's iterate is both a middle stage and, the last iteration, the job's final stage
    (it writes the ranks as the run's output): its final stage's attempts are fitted as
    ``pagerank.iterate.final``, the others as ``pagerank.iterate``. A job that did not succeed has
    no final stage known (its last attempts count as the others'); an op that is always final
    (sort's reduce) keeps its name."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"dilation": 1.0}))
    head = "task_id,job_id,stage,attempt,start_s,end_s,status,bytes_in,bytes_out,compute_s\n"
    rows = [
        f"j0.s0.t0,j0,0,0,0,1,succeeded,{MB},{MB // 2},0.1",
        f"j0.s0.t1,j0,0,0,0,1,succeeded,{2 * MB},{MB},0.2",
        f"j0.s1.t0,j0,1,0,1,3,succeeded,{MB},0,2.0",  # j0's final stage: 10x the seconds per MB
        f"j0.s1.t1,j0,1,0,1,3,failed,{MB},0,9.0",
        f"j1.s0.t0,j1,0,0,0,1,succeeded,{MB},{MB // 2},0.1",
        f"j1.s1.t0,j1,1,0,1,2,succeeded,{3 * MB},{3 * MB // 2},0.3",  # j1 failed: a middle stage
        f"j2.s0.t0,j2,0,0,0,1,succeeded,{MB},{MB},0.5",
        f"j2.s1.t0,j2,1,0,1,2,succeeded,{MB},0,0.7",
    ]
    (run / "tasks.csv").write_text(head + "\n".join(rows) + "\n")
    jobs = "job_id,workload,status\nj0,pagerank,succeeded\nj1,pagerank,failed\nj2,sort,succeeded\n"
    (run / "jobs.csv").write_text(jobs)
    ops_of = {
        ("pagerank", 0): "pagerank.iterate",
        ("pagerank", 1): "pagerank.iterate",
        ("sort", 0): "sort.map",
        ("sort", 1): "sort.reduce",
    }
    values, samples = fit([run], ops_of, final_split=frozenset({"pagerank.iterate"}))
    # 0.1 s per MB through the origin (1, 2, 1 and 3 MB); blocks of 3.5 of their 7 MB
    assert values["ops"]["pagerank.iterate"] == {"s_per_mb": 0.1, "output_ratio": 0.5, "fixed_s": 0.0}
    assert values["ops"]["pagerank.iterate" + FINAL_OP] == {
        "s_per_mb": 2.0,
        "output_ratio": OP_MODELS["pagerank.iterate"].output_ratio,  # it writes no block
        "fixed_s": 0.0,
    }
    assert values["ops"]["sort.reduce"]["s_per_mb"] == 0.7
    assert samples["ops.pagerank.iterate.final"] == "1 attempts of 1 to 1 MB"
    # without the split (the old fit): one line over both
    assert fit([run], ops_of)[0]["ops"].keys() == {"pagerank.iterate", "sort.map", "sort.reduce"}


def test_the_ops_split_are_those_a_final_stage_and_another_stage_in_the_scenario() -> None:
    assert final_split_ops(parse_scenario(CALIBRATION_SCENARIO)) == {"mlr.model", "pagerank.iterate"}
    sort_only = {**CALIBRATION_SCENARIO, "jobs": CALIBRATION_SCENARIO["jobs"][:4]}
    assert final_split_ops(parse_scenario(sort_only)) == frozenset()


def test_the_modelled_fetch_is_taken_off_a_reduces_compute() -> None:
    """Two reduces each reading two maps' outputs, one of them from its own node: half their
    input is remote, booked on the sender's ``net-out`` and the reader's ``net-in`` as the
    simulator's links book it; the slower side is the fetch's time."""
    from testbed.app.calibrate import fetch_seconds
    from testbed.plan import Dependency

    head = "task_id,job_id,stage,index,attempt,node_id,node_class,start_s,end_s,status,bytes_in,bytes_out\n"
    table = head + (
        "j0.s0.t0,j0,0,0,0,a,reserved,0,1,succeeded,100,500\n"
        "j0.s0.t1,j0,0,1,0,b,transient,0,1,succeeded,100,500\n"
        "j0.s1.t0,j0,1,0,0,a,reserved,1,3,succeeded,1000,0\n"
        "j0.s1.t1,j0,1,1,0,b,transient,1,3,succeeded,1000,0\n"
        "j1.s0.t0,j1,0,0,0,b,transient,2,3,succeeded,1000,0\n"
    )
    tasks = list(csv.DictReader(io.StringIO(table)))
    deps = {("sort", 1): (Dependency(0, "shuffle"),)}
    nic = {"reserved": 100.0, "transient": 500.0}
    seconds = fetch_seconds(tasks, {"j0": "sort", "j1": "mlr"}, deps, nic)
    # 500 bytes b -> a: 1 s on b's net-out, 5 s on a's net-in; a -> b: 5 s on a's net-out
    assert seconds == {("j0.s1.t0", "0"): 5.0, ("j0.s1.t1", "0"): 5.0}
    # at dilation 2 the tables' seconds are twice the emulated ones; a 0.5 s burst lets an idle
    # link run 1 s ahead: 500 bytes over 100 B/s wait 4 s
    halved = [{**t, "start_s": str(2 * float(t["start_s"]))} for t in tasks]
    seconds = fetch_seconds(halved, {"j0": "sort", "j1": "mlr"}, deps, nic, dilation=2.0, burst=0.5)
    assert seconds == {("j0.s1.t0", "0"): 4.0, ("j0.s1.t1", "0"): 4.0}


def test_the_copy_cpu_benchmark_measures_each_side_of_the_real_data_plane() -> None:
    """``agents.copy_cpu`` (what ``testbed calibrate`` runs): a sender, a receiver and a server
    each cost some CPU per MB, a few milliseconds on this machine (2.4, 4.5 and 1.25 ms)."""
    measured = copy_cpu(mb=1.0, repeats=4)
    assert measured["copies"] == 4 and measured["mb"] == pytest.approx(4.0, rel=0.05)
    for key in COPY_CPU_KEYS:
        assert 0.0 <= measured[key] < 0.5
    assert measured["copy_send_cpu_s_per_mb"] + measured["copy_receive_cpu_s_per_mb"] > 0


def test_crosscheck_calibrates_at_the_dilation_and_node_sizes_of_its_real_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--calibrate`` measures at the real runs' dilation, ``auto`` resolved for their cluster
    (16 cores on a 2-core host keeping 0.5 for the control plane: 10.67), not at the one the
    calibration scenario's smaller cluster would resolve to, and on nodes of their classes'
    cores and slots."""
    monkeypatch.setattr("testbed.settings.run_settings.host_cores", lambda: 2.0)  # Host.this_machine()
    cluster = {"reserved": {"count": 1, "slots": 8}, "transient": {"count": 8, "slots": 1}}
    faithful = {"mode": "faithful", "dilation": "auto", "control_plane_cores": 0.5}
    base = parse_scenario({**CALIBRATION_SCENARIO, "cluster": cluster, "fidelity": faithful})
    assert calibration_overrides(base, host_dilation(base)) == [
        "fidelity.mode=faithful",
        "fidelity.dilation=10.67",
        *("cluster.reserved.cpus=8", "cluster.reserved.slots=8"),
        *("cluster.transient.cpus=1", "cluster.transient.slots=1"),
    ]
    fixed = parse_scenario({**CALIBRATION_SCENARIO, "fidelity": {"mode": "faithful", "dilation": 6}})
    overrides = calibration_overrides(fixed, host_dilation(fixed))
    assert overrides[:2] == ["fidelity.mode=faithful", "fidelity.dilation=6"]
    scenario = write_calibration_scenario(tmp_path / "calibrate.yaml")
    calibration = load_scenario(scenario, calibration_overrides(base, host_dilation(base)))
    assert (calibration.cluster.reserved.cores, calibration.cluster.transient.slots) == (8, 1)
