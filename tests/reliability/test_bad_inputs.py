"""Bad inputs fail before anything starts, with exit status 2 and a message saying what to change."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from testbed.node.processes import child_env

GOOD = {
    "name": "bad",
    "cluster": {"reserved": {"count": 1, "memory_mb": 2048}, "transient": {"count": 2, "memory_mb": 1024}},
    "jobs": [{"workload": "wordcount", "size_mb": 1, "maps": 1, "reduces": 1}],
}


def cli(*args: str, user_reads_everything: bool = True) -> subprocess.CompletedProcess[str]:
    """``testbed ARGS``; without ``user_reads_everything``, as root stripped of its right to
    read files whatever their permissions (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH)."""
    prefix: list[str] = []
    if not user_reads_everything and os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root without setpriv: cannot make a file unreadable")
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--inh-caps=-all"]
    command = [*prefix, sys.executable, "-m", "testbed.app.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=child_env())


def scenario_file(tmp_path: Path, **changes: object) -> Path:
    data = {**GOOD, **changes}
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def assert_refused(result: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    for phrase in phrases:
        assert phrase in result.stderr, result.stderr


def test_the_good_scenario_is_accepted(tmp_path: Path) -> None:
    result = cli("validate", str(scenario_file(tmp_path)))
    assert result.returncode == 0, result.stderr


def test_a_missing_input_file(tmp_path: Path) -> None:
    jobs = [{"workload": "wordcount", "input": str(tmp_path / "nowhere.txt")}]
    result = cli("validate", str(scenario_file(tmp_path, jobs=jobs)))
    assert_refused(result, "jobs.0.input", "no input file matches", "give an existing file")


def test_an_unreadable_input_file(tmp_path: Path) -> None:
    text = tmp_path / "words.txt"
    text.write_text("to be or not to be\n")
    text.chmod(0)
    jobs = [{"workload": "wordcount", "input": str(text)}]
    result = cli("validate", str(scenario_file(tmp_path, jobs=jobs)), user_reads_everything=False)
    assert_refused(result, "jobs.0.input", "cannot read input file", "Permission denied", "make it readable")


def test_an_unreadable_scenario_file(tmp_path: Path) -> None:
    path = scenario_file(tmp_path)
    path.chmod(0)
    assert_refused(cli("validate", str(path), user_reads_everything=False), "cannot read the file")


def test_an_unknown_workload(tmp_path: Path) -> None:
    result = cli("validate", str(scenario_file(tmp_path, jobs=[{"workload": "grep"}])))
    assert_refused(result, "jobs.0", "unknown workload 'grep'", "expected one of wordcount, sort")


@pytest.mark.parametrize(
    ("field", "hint"),
    [
        ("scheduler", "neither a built-in scheduler (fifo, yarn, yarn-me, eagle, firmament), an import path"),
        ("strategy", "neither a built-in strategy (spark, spark-checkpoint, pado, auto), an import path"),
        ("autoscaler", "neither a built-in autoscaler (static, cloudcoaster), an import path"),
    ],
)
def test_an_unknown_policy_name(tmp_path: Path, field: str, hint: str) -> None:
    result = cli("validate", str(scenario_file(tmp_path, policy={field: "magic"})))
    assert_refused(result, f"policy.{field}", "'magic'", hint)


def test_a_task_larger_than_every_node(tmp_path: Path) -> None:
    jobs = [{"workload": "sleep", "tasks": 1}, {"workload": "wordcount", "memory_mb": 4096}]
    result = cli("validate", str(scenario_file(tmp_path, jobs=jobs)))
    assert_refused(result, "jobs.1.memory_mb", "needs 4096 MB", "largest node has 2048 MB", "at most 2048")


def test_only_classes_that_exist_count(tmp_path: Path) -> None:
    """2048 MB fits the reserved class, but there is no reserved node."""
    cluster = {"reserved": {"count": 0, "memory_mb": 4096}, "transient": {"count": 2, "memory_mb": 1024}}
    jobs = [{"workload": "wordcount", "memory_mb": 2048}]
    result = cli("validate", str(scenario_file(tmp_path, cluster=cluster, jobs=jobs)))
    assert_refused(result, "largest node has 1024 MB")


def test_run_refuses_before_starting_anything(tmp_path: Path) -> None:
    jobs = [{"workload": "wordcount", "memory_mb": 4096}]
    out = tmp_path / "run"
    result = cli("run", str(scenario_file(tmp_path, jobs=jobs)), "--out", str(out))
    assert_refused(result, "jobs.0.memory_mb")
    assert not out.exists(), "the run directory was created for a scenario that cannot run"
