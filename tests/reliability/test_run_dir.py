"""Who may use a run directory: a new run only an empty one (or one it may clean), one master
at a time (an OS lock released by death), and a resume only with the inputs the run started with.

These refuse before any run starts, so they take seconds; the runs that show the same for
real are in ``test_run_dir_runs.py``.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from master.shell.run import prepare_run_dir
from master.shell.run_dir import LOCK_FILE, RunDirError, owning
from testbed.node.processes import child_env
from testbed.scenario.schema import load_scenario
from tests.support.cli import cli, one_line

SCENARIO = {
    "name": "tiny",
    "cluster": {"reserved": 1, "transient": 1},
    "jobs": [{"workload": "sleep", "tasks": 1, "duration": 0.1}],
}


def scenario_file(tmp_path: Path, **fields: object) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump({**SCENARIO, **fields}))
    return path


def test_a_directory_holding_a_run_is_refused_and_left_alone(tmp_path: Path) -> None:
    old = tmp_path / "old"
    (old / "outputs" / "j000").mkdir(parents=True)
    for name in ("scenario.yaml", "events.jsonl", "outputs/j000/part-00003"):
        (old / name).write_text("the first run's\n")
    before = sorted(p.relative_to(old) for p in old.rglob("*"))
    line = one_line(cli("run", str(scenario_file(tmp_path)), "--out", str(old)))
    assert line == (
        f"testbed run --out: {old} already holds a run; choose a new directory, continue a crashed "
        f"run with --resume {old}, or add --clean to delete that run first"
    )
    assert sorted(p.relative_to(old) for p in old.rglob("*")) == before  # not even a lock file


def test_clean_deletes_only_a_run(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious\n")
    line = one_line(cli("run", str(scenario_file(tmp_path)), "--out", str(mine)))
    assert line == f"testbed run --out: {mine} is not empty (thesis.tex); choose a new or empty directory"
    line = one_line(cli("run", str(scenario_file(tmp_path)), "--out", str(mine), "--clean"))
    assert "is not a run directory" in line and "--clean deletes only runs" in line
    assert sorted(mine.iterdir()) == [mine / "thesis.tex"]
    assert (mine / "thesis.tex").read_text() == "precious\n"


@pytest.fixture
def lock_holder(tmp_path: Path):
    """A real process holding a run directory's lock as a master does, until it is SIGKILLed."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for name in ("scenario.yaml", "events.jsonl"):
        (run_dir / name).write_text("")
    code = (
        "import sys; from pathlib import Path; from master.shell.run_dir import owning\n"
        "with owning(Path(sys.argv[1])):\n    print('held', flush=True); sys.stdin.read()\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(run_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=child_env(),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield run_dir, holder
    finally:
        holder.kill()
        holder.wait(10)


def test_a_second_master_is_refused_while_the_first_lives_and_the_lock_dies_with_it(
    lock_holder: tuple[Path, subprocess.Popen[str]],
) -> None:
    run_dir, holder = lock_holder
    busy = f"{run_dir}: in use by another testbed master (pid {holder.pid}); wait for it to end or stop it"
    assert one_line(cli("run", "--resume", str(run_dir))).startswith(f"testbed run --resume: {busy}")
    scenario = scenario_file(run_dir.parent)
    assert one_line(cli("run", str(scenario), "--out", str(run_dir), "--clean")).startswith(
        f"testbed run --out: {busy}"
    )
    assert sorted(p.name for p in run_dir.iterdir()) == ["events.jsonl", LOCK_FILE, "scenario.yaml"]
    with pytest.raises(RunDirError, match="in use by another testbed master"), owning(run_dir):
        pass
    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    with owning(run_dir), owning(run_dir):  # released by its death; re-entrant in one process
        assert (run_dir / LOCK_FILE).read_text() == f"{os.getpid()}\n"


def test_a_resume_whose_input_changed_is_refused_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "first" / "data"
    data.mkdir(parents=True)
    (data / "a.txt").write_text("the input the run started with\n")
    (data / "b.txt").write_text("unchanged\n")
    job = {"workload": "wordcount", "input": "data/*.txt", "maps": 1, "reduces": 1}
    path = scenario_file(tmp_path, jobs=[job])
    monkeypatch.chdir(tmp_path / "first")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    prepare_run_dir(load_scenario(path), run_dir)  # as `testbed run` does before it starts
    (run_dir / "events.jsonl").write_text("")  # the master died before its first event
    assert load_scenario(run_dir / "scenario.yaml").jobs[0].input == f"{data}/*.txt"

    (data / "a.txt").write_text("the input edited meanwhile\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    line = one_line(cli("run", "--resume", str(run_dir), cwd=elsewhere))
    assert line == (
        f"testbed run --resume: {run_dir}: input file {(data / 'a.txt').resolve()} changed since the "
        "run started (its size differs); restore it or start a new run"
    )


def test_a_refusal_names_the_live_holder_even_before_it_wrote_its_pid(tmp_path: Path) -> None:
    """Between a master's flock and its pid write the file names the dead master before it."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / LOCK_FILE).write_text("4194304\n")  # a pid no live process has (above pid_max)
    fd = os.open(run_dir / LOCK_FILE, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held, its pid not yet written
        busy = rf"in use by another testbed master \(pid {os.getpid()}\)"
        with pytest.raises(RunDirError, match=busy), owning(run_dir):
            pass
    finally:
        os.close(fd)


def test_a_run_directory_that_takes_no_scenario_file_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """The run's pipeline writes scenario.yaml: where it cannot (here a directory holds the
    name), a ``RunDirError`` naming the directory and the cause, which the CLI prints as one
    line with exit 2 (``testbed run --out: ...``)."""
    run_dir = tmp_path / "run"
    (run_dir / "scenario.yaml").mkdir(parents=True)
    with pytest.raises(RunDirError, match=r"run: cannot record the scenario and its inputs: .*scenario.yaml"):
        prepare_run_dir(load_scenario(scenario_file(tmp_path)), run_dir)
