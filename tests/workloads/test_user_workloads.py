"""Workload plugins: refused in one line when broken; run through the real spill, merge and
block files under a tight budget; checked against their own reference."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import pytest

from testbed.api import API_VERSION
from testbed.app.cli import main
from testbed.testing import check_workload
from testbed.wire.protocol import TaskMetrics
from testbed.workloads.base import WorkloadError
from testbed.workloads.groups import GroupBuffer
from testbed.workloads.spill import SpillFiles
from tests.support.plugins import ITERATIVE, path_graph, write_doc_files

GOOD = '''
from testbed.api import Workload


class CharCount(Workload):
    """Each character of the input with its count (keys: str), combined by summing."""

    def map(self, record):
        for char in record:
            yield char, 1

    def combine(self, key, values):
        return sum(values)

    def reduce(self, key, values):
        return f"{key!r}\\t{sum(values)}"
'''

BROKEN = {
    "missing": (
        "class W:\n    def reduce(self, key, values):\n        return []\n",
        "lacks the method map()",
    ),
    "signature": (
        "class W:\n    def map(self, record):\n        return []\n"
        "    def reduce(self, key):\n        return []\n",
        "define reduce(self, key, values)",
    ),
    "imports": ("import no_such_module_here\n", "cannot import"),
    "syntax": ("class W(:\n", "cannot import"),
    "version": (
        "class W:\n    api_version = '2.0'\n    def map(self, r):\n        return []\n"
        "    def reduce(self, k, v):\n        return []\n",
        "is written for testbed.api 2.0, this testbed has " + API_VERSION,
    ),
}


@pytest.fixture
def plugin_dir(tmp_path: Path, isolated_path: None) -> Path:
    """A directory for plugin modules, importable for this test only."""
    sys.path.insert(0, str(tmp_path))
    return tmp_path


def scenario_file(directory: Path, job: str) -> Path:
    path = directory / "s.yaml"
    job = job.replace("INPUT", f"'{path}'")  # the scenario file itself: any readable file will do
    path.write_text(f"name: p\ncluster: {{reserved: 1, transient: 1}}\njobs: [{job}]\n", encoding="utf-8")
    return path


def refused(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_plugin_is_refused_in_one_line_naming_field_file_and_fix(
    case: str, plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, expected = BROKEN[case]
    (plugin_dir / f"bad_{case}.py").write_text(code, encoding="utf-8")
    err = refused(scenario_file(plugin_dir, f"{{workload: 'bad_{case}:W', input: INPUT}}"), capsys)
    assert err.startswith(f"{plugin_dir / 's.yaml'}: jobs.0.workload: ") and expected in err
    if case in ("missing", "signature", "version"):
        assert f"bad_{case}.py" in err  # the plugin's file, for its author


def test_bad_options_and_a_missing_input_are_refused(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (plugin_dir / "opts.py").write_text(
        GOOD + "\n\nclass Tuned(CharCount):\n    from pydantic import BaseModel as _B\n\n"
        "    class Options(_B, extra='forbid'):\n        width: int = 1\n\n"
        "    def __init__(self, width=1):\n        self.width = width\n",
        encoding="utf-8",
    )
    err = refused(
        scenario_file(plugin_dir, "{workload: 'opts:Tuned', input: INPUT, options: {width: x}}"), capsys
    )
    assert "jobs.0.options.width: Input should be a valid integer" in err
    err = refused(scenario_file(plugin_dir, "{workload: 'opts:CharCount'}"), capsys)
    assert "jobs.0.input:" in err and "define generate(self, split, splits, seed)" in err
    err = refused(scenario_file(plugin_dir, "{workload: grep}"), capsys)
    expected = "jobs.0: unknown workload 'grep'; expected one of wordcount, sort, pagerank, mlr, sleep, "
    expected += "noop, sql"
    assert expected in err


def test_a_good_plugin_validates(plugin_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (plugin_dir / "good.py").write_text(GOOD, encoding="utf-8")
    assert (
        main(["validate", str(scenario_file(plugin_dir, "{workload: 'good:CharCount', input: INPUT}"))]) == 0
    )


def text_input(directory: Path) -> Path:
    inputs = directory / "in"
    inputs.mkdir()
    for i in range(3):
        lines = (f"line {n} of file {i}: {'ab' * (n % 7)} ünïcödé\n" for n in range(100))
        (inputs / f"f{i}.txt").write_text("".join(lines), encoding="utf-8")
    return inputs


def test_a_plugin_over_files_spills_and_matches_its_reference(plugin_dir: Path) -> None:
    (plugin_dir / "good.py").write_text(GOOD, encoding="utf-8")
    job = {"workload": "good:CharCount", "input": str(text_input(plugin_dir)), "maps": 4, "reduces": 3}
    assert check_workload(job, plugin_dir / "work", budget_bytes=64 * 1024) == []
    outputs = plugin_dir / "work" / "outputs"
    assert len(list(outputs.glob("part-*"))) == 3


def test_the_check_catches_a_wrong_combiner(plugin_dir: Path) -> None:
    """A combiner that keeps one value of each key: the reference (no combiner) disagrees."""
    (plugin_dir / "wrong.py").write_text(
        GOOD.replace("return sum(values)", "return values[0]"), encoding="utf-8"
    )
    job = {"workload": "wrong:CharCount", "input": str(text_input(plugin_dir)), "maps": 2}
    problems = check_workload(job, plugin_dir / "work", budget_bytes=64 * 1024)
    assert problems and "lines are not in the reference" in problems[-1]


RUNTIME = {
    "raises": ("def map(self, record):\n        raise KeyError('plugin bug')", "map() raised KeyError"),
    "mixed keys": (
        "def map(self, record):\n        yield (1 if len(record) % 2 else 'a'), 1",
        "do not sort together",
    ),
    "unpackable": ("def map(self, record):\n        yield record, object()", "msgpack cannot carry"),
    "not pairs": ("def map(self, record):\n        yield record", "must yield (key, value) pairs"),
}


@pytest.mark.parametrize("case", sorted(RUNTIME))
def test_a_plugin_failing_at_run_time_is_a_workload_error_with_its_traceback(
    case: str, plugin_dir: Path
) -> None:
    method, expected = RUNTIME[case]
    code = GOOD.replace(
        "def map(self, record):\n        for char in record:\n            yield char, 1", method
    )
    (plugin_dir / "fails.py").write_text(code, encoding="utf-8")
    job = {"workload": "fails:CharCount", "input": str(text_input(plugin_dir)), "maps": 2}
    with pytest.raises(WorkloadError, match=re.escape(expected)) as raised:
        check_workload(job, plugin_dir / "work")
    if case == "raises":
        assert 'fails.py", line' in str(raised.value)


def test_group_buffer_merges_many_spilled_runs_in_key_order(tmp_path: Path) -> None:
    metrics = TaskMetrics()
    buffer = GroupBuffer(lambda key: key % 2, 2, 16_384, SpillFiles(tmp_path, metrics), lambda k, vs: sum(vs))
    for i in range(5000):
        buffer.add((i * 7919) % 1000, 1)
    merged = {p: list(pairs) for p, pairs in buffer.finish()}
    assert metrics.spills > 10 and metrics.merge_passes >= 2
    for partition, pairs in merged.items():
        assert [k for k, _ in pairs] == sorted(k for k in range(1000) if k % 2 == partition)
        assert all(count == 5 for _, count in pairs)
    assert not list(tmp_path.glob("spill-*"))


def sim_tasks(scenario: Path, run_dir: Path, overrides: tuple[str, ...] = ()) -> list[dict[str, str]]:
    from master.shell.run import run_blocking
    from master.sim.run import SimBackend, sim_settings
    from testbed.scenario.schema import load_scenario

    result = run_blocking(sim_settings(load_scenario(scenario, list(overrides))), run_dir, SimBackend())
    assert result.ok and result.summary["succeeded"] == 1, result.summary
    with (run_dir / "tasks.csv").open(encoding="utf-8") as table:
        return list(csv.DictReader(table))


def test_a_plugin_workload_runs_on_the_simulator_with_its_own_sim_model(plugin_dir: Path) -> None:
    """The doc's inverted index declares its SimModel: a generated split of 400 documents is
    400 x 101 bytes, computed at 3 s/MB; maps' output is 0.73 of that, cut in 2 partitions."""
    write_doc_files(plugin_dir)
    maps = [t for t in sim_tasks(plugin_dir / "index.yaml", plugin_dir / "run") if t["stage"] == "0"]
    split = int(400 * 101 / 2**20 * 2**20)
    assert [int(t["bytes_in"]) for t in maps] == [split] * 3
    assert float(maps[0]["compute_wall_s"]) == pytest.approx(3.0 * split / 2**20, abs=1e-3)
    assert int(maps[0]["bytes_out"]) == int(split * 0.73)


def test_the_scenarios_simulation_ops_override_a_plugins_sim_model(plugin_dir: Path) -> None:
    write_doc_files(plugin_dir)
    ops = 'simulation.ops={"inverted_index:InvertedIndex.map": {s_per_mb: 30, output_ratio: 0.5}}'
    maps = [t for t in sim_tasks(plugin_dir / "index.yaml", plugin_dir / "run", (ops,)) if t["stage"] == "0"]
    assert float(maps[0]["compute_wall_s"]) == pytest.approx(30 * int(maps[0]["bytes_in"]) / 2**20, abs=1e-3)
    assert int(maps[0]["bytes_out"]) == int(int(maps[0]["bytes_in"]) * 0.5)


def test_a_plugin_without_a_sim_model_costs_only_overheads_and_a_broken_one_is_refused(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (plugin_dir / "good.py").write_text(GOOD, encoding="utf-8")
    path = scenario_file(plugin_dir, "{workload: 'good:CharCount', input: INPUT}")
    tasks = sim_tasks(path, plugin_dir / "run")
    assert {float(t["compute_wall_s"]) for t in tasks} == {0.0}
    (plugin_dir / "broken.py").write_text(
        GOOD + "\n    def sim_model(self):\n        raise ValueError('no model yet')\n", encoding="utf-8"
    )
    path = scenario_file(plugin_dir, "{workload: 'broken:CharCount', input: INPUT}")
    assert main(["run", str(path), "--backend", "sim", "--out", str(plugin_dir / "run2")]) == 2
    err = capsys.readouterr().err
    assert "jobs.0.workload: broken:CharCount.sim_model() raised ValueError: no model yet" in err, err


def test_a_package_beside_the_scenario_registers_a_workload_by_entry_point(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (plugin_dir / "charcount_pkg.py").write_text(GOOD, encoding="utf-8")
    info = plugin_dir / "charcount-0.3.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: charcount\nVersion: 0.3.1\n", encoding="utf-8"
    )
    (info / "top_level.txt").write_text("charcount_pkg\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        "[transient_testbed.workloads]\ncharcount = charcount_pkg:CharCount\n", encoding="utf-8"
    )
    sys.path.remove(str(plugin_dir))  # found through the scenario's directory (policy.plugin_path)
    path = scenario_file(plugin_dir, "{workload: charcount, input: INPUT}")
    assert main(["validate", str(path)]) == 0, capsys.readouterr().err
    from master.policy_setup import policy_plugins
    from testbed.scenario.schema import load_scenario

    assert policy_plugins(load_scenario(path))["workloads"]["charcount"] == {
        "name": "charcount",
        "import_path": "charcount_pkg:CharCount",
        "version": "0.3.1",
    }


def test_measure_sim_model_times_the_plugins_real_tasks(plugin_dir: Path) -> None:
    from testbed.testing import measure_sim_model

    write_doc_files(plugin_dir)
    job = {"workload": "inverted_index:InvertedIndex", "maps": 2, "options": {"docs_per_split": 400}}
    model = measure_sim_model(job, plugin_dir / "work")
    assert model.generated_split_mb == pytest.approx(400 * 101 / 2**20, rel=0.05)  # the doc's estimate
    assert 0.5 < model.map_output_ratio < 1.0 and model.map_s_per_mb > 0 and model.reduce_s_per_mb > 0


@pytest.mark.parametrize("iterations", [0, 1, 4])
def test_an_iterative_plugin_runs_its_rounds_of_step_through_the_shuffle(
    plugin_dir: Path, iterations: int
) -> None:
    (plugin_dir / "minlabel.py").write_text(ITERATIVE, encoding="utf-8")
    job = {
        "workload": "minlabel:MinLabel",
        "input": str(path_graph(plugin_dir)),
        "maps": 3,
        "reduces": 2,
        "options": {"iterations": iterations},
    }
    assert check_workload(job, plugin_dir / "work", budget_bytes=16 * 1024) == []
    labels = dict(
        line.split("\t")
        for part in (plugin_dir / "work" / "outputs").glob("part-*")
        for line in part.read_text().split("\n")
        if line
    )
    assert labels["10"] == str(max(0, 10 - iterations)) and labels["100"] == "100"


def test_an_iterative_plugins_rounds_without_step_are_refused(
    plugin_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (plugin_dir / "nostep.py").write_text(GOOD + "\n    iterations = 2\n", encoding="utf-8")
    err = refused(scenario_file(plugin_dir, "{workload: 'nostep:CharCount', input: INPUT}"), capsys)
    assert "jobs.0.workload: nostep:CharCount" in err and "has iterations = 2 but no step()" in err
