from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from testbed.app.workload_args import add_workload_commands
from testbed.workloads import sort
from testbed.workloads.task_model import load_profile


def run_cli(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="testbed")
    add_workload_commands(parser.add_subparsers(required=True))
    args = parser.parse_args(argv)
    return args.handler(args)


def test_gen_then_sort_the_generated_file_and_check_it(tmp_path: Path, run_at):
    assert run_cli("gen", "sort", "--size-mb", "0.5", "--seed", "4", "--out", str(tmp_path / "r.dat")) == 0
    from testbed.scenario.schema import SortJob

    job = SortJob(workload="sort", input=str(tmp_path / "r.dat"), maps=2, reduces=2)
    local = run_at(job, 1, 1.0)
    args = ["check-output", "sort", str(local.outputs), "--input", str(tmp_path / "r.dat")]
    assert run_cli(*args) == 0
    part = sort.output_parts(local.outputs)[1]
    part.write_bytes(part.read_bytes()[100:])
    assert run_cli(*args) == 1


def test_check_output_says_which_generation_options_it_assumed(run_at, capsys):
    from testbed.scenario.schema import SortJob

    local = run_at(SortJob(workload="sort", size_mb=0.25, maps=2, reduces=2), 3, 1.0)
    assert run_cli("check-output", "sort", str(local.outputs), "--reduces", "2") == 1
    out = capsys.readouterr().out
    assert "records, the input has" in out
    assert "the reference assumed --size-mb 16, --maps auto, --seed 1 (not given)" in out
    args = ("--size-mb", "0.25", "--maps", "2", "--seed", "3")
    assert run_cli("check-output", "sort", str(local.outputs), *args) == 0
    assert "assumed" not in capsys.readouterr().out


def test_profile_out_that_cannot_be_a_directory_is_one_line(tmp_path: Path, capsys):
    (tmp_path / "file").write_text("")
    assert run_cli("profile", "sort", "--size-mb", "0.1", "--out", str(tmp_path / "file" / "sub")) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_gen_pagerank_writes_an_edge_list(tmp_path: Path):
    out = tmp_path / "g.txt"
    assert run_cli("gen", "pagerank", "--nodes", "50", "--edges", "200", "--out", str(out)) == 0
    lines = out.read_text().splitlines()
    assert lines[0].startswith("#") and len(lines) == 201
    assert all(0 <= int(x) < 50 for line in lines[1:] for x in line.split())


def test_profile_prints_a_penalty_curve_and_saves_loadable_profiles(tmp_path: Path, capsys):
    status = run_cli(
        "profile",
        "wordcount",
        "--size-mb",
        "0.5",
        "--maps",
        "1",
        "--reduces",
        "1",
        "--fractions",
        "1.0,0.5,0.1",
        "--out",
        str(tmp_path / "profiles" / "new"),
    )
    assert status == 0
    tmp_path = tmp_path / "profiles" / "new"  # created by the command
    printed = capsys.readouterr().out
    assert "normalised" in printed and "reducer model" in printed
    for role in ("map", "reduce"):
        profile = load_profile(tmp_path / f"wordcount-{role}.json")
        assert profile.role == role and profile.model.ideal_memory_mb >= 1
        assert profile.model.penalty.multiplier(1.0) == 1.0
        data = json.loads((tmp_path / f"wordcount-{role}.json").read_text())
        spilled = {m["fraction"]: m["spill_bytes"] for m in data["measurements"]}
        assert spilled[1.0] == 0 and spilled[0.1] > 0
        assert all(m["peak_rss_bytes"] > 2**20 for m in data["measurements"])  # VmHWM while it ran
        assert len(profile.stage_ideal_memory_mb) == 2  # map and reduce stages of the job
        assert profile.stage_ideal_memory_mb[0 if role == "map" else 1] >= profile.model.ideal_memory_mb
        assert data["job"]["size_mb"] == 0.5 and data["seed"] == 1


def test_profiled_ideal_is_where_spilling_starts_for_a_combining_reducer(tmp_path: Path):
    """PageRank's reduce combines its contributions in memory, so the peak it held
    unconstrained overstates its need; the profile's ideal budget is where it starts to spill."""
    argv = ["profile", "pagerank", "--iterations", "2"]
    assert run_cli(*argv, "--fractions", "1.0,0.9,0.5", "--out", str(tmp_path)) == 0
    data = json.loads((tmp_path / "pagerank-reduce.json").read_text())
    spilled = {m["fraction"]: m["spill_bytes"] for m in data["measurements"]}
    assert spilled[1.0] == 0 and spilled[0.9] > 0 and spilled[0.5] > 0


@pytest.mark.parametrize(
    "argv",
    [
        ["profile", "sort", "--fractions", "1.5"],
        ["profile", "sort", "--fractions", "abc"],
        ["gen", "sort", "--nodes", "5", "--out", "x"],
        ["gen", "wordcount", "--size-mb", "-2", "--out", "x"],
        ["gen", "sort", "--size-mb", "0.1", "--out", "/"],
        ["gen", "sort", "--seed", "-1", "--out", "x"],
        ["profile", "wordcount", "--seed", str(2**32)],
        ["check-output", "sort", "out", "--seed", "-1"],
        ["check-output", "sort"],
        ["check-output", "--run", "/nonexistent-run"],
    ],
)
def test_bad_arguments_give_one_line_and_status_2(argv, capsys):
    assert run_cli(*argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("testbed: ") and "\n" not in err


def test_the_parsers_workloads_are_the_handlers() -> None:
    """``testbed --help`` names the workloads without importing their models: the same ones."""
    from testbed.app import workload_args
    from testbed.workloads import cli

    assert sorted(cli.JOB_MODELS) == workload_args.WORKLOADS
    assert cli.DEFAULT_SEED == workload_args.DEFAULT_SEED
