"""A job whose input glob runs through symlink loops reads each file once, for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from master.shell.run import run_scenario
from testbed.workloads.check import check_output
from testbed.workloads.wordcount import read_output, reference_counts
from tests.support.runs import assert_clean
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


async def test_a_glob_through_two_symlink_loops_counts_each_file_once(tmp_path: Path) -> None:
    texts = {"a.txt": "to be or not to be\n" * 500, "deep/b.txt": "that is the question\n" * 300}
    loop = tmp_path / "loop"
    for name, text in texts.items():
        (loop / name).parent.mkdir(parents=True, exist_ok=True)
        (loop / name).write_text(text)
    (loop / "self").symlink_to(".")
    (loop / "deep" / "up").symlink_to("..")
    scenario = make_scenario(
        jobs=[{"workload": "wordcount", "input": f"{loop}/**/*.txt", "maps": 2, "reduces": 2}]
    )
    result = await run_scenario(settings_of(scenario), tmp_path / "run")
    assert result.ok, result.summary
    output = tmp_path / "run" / "outputs" / "j000"
    assert read_output(output) == reference_counts(t.encode() for t in texts.values())
    assert check_output(scenario.jobs[0], 7000, output) == []
    assert_clean(tmp_path / "run")
