"""Where a sweep's cells run, decided before any runs: the options' checks and the order in
which cells start (a real cell not beside another real one). The runs themselves:
tests/e2e/test_sweep_executors.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.app.cli import main
from testbed.app.sweep.cells import CellCommand
from testbed.app.sweep.executor import _next_startable

SCENARIO = """\
name: t
backend: sim
cluster: {reserved: 1, transient: 1}
jobs: [{workload: sleep, tasks: 1}]
"""


def cell(name: str, real: bool) -> CellCommand:
    return CellCommand(name, ("run",), f"/nowhere/{name}", "/", real)


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (["--jobs", "0"], "--jobs: expected a whole number >= 1"),
        (["--jobs", "2", "--dask", "tcp://127.0.0.1:1"], "--jobs and --dask: choose one"),
    ],
)
def test_bad_executor_options_are_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: list[str], line: str
) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    for command in ("sweep", "crosscheck"):
        assert main([command, str(scenario), "--out", str(tmp_path / command), *options]) == 2
        assert capsys.readouterr().err.startswith(line)
    assert main(["calibrate", str(scenario), "--out", str(tmp_path / "c.yaml"), *options]) == 2
    assert capsys.readouterr().err.startswith(line)
    assert not (tmp_path / "sweep" / "sweep.json").exists()


def test_a_real_cell_waits_for_the_real_one_in_flight() -> None:
    waiting = [cell("real-2", True), cell("sim-1", False), cell("real-3", True)]
    assert _next_startable(waiting, [], share_host=False) == 0
    assert _next_startable(waiting, [cell("sim-0", False)], share_host=False) == 0
    assert _next_startable(waiting, [cell("real-1", True)], share_host=False) == 1  # the sim cell
    assert _next_startable(waiting[::2], [cell("real-1", True)], share_host=False) is None
    assert _next_startable(waiting, [cell("real-1", True)], share_host=True) == 0
