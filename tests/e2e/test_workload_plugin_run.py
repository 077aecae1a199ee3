"""A workload plugin from a directory outside the package, on real local agents and a real
broker: exact under an eviction and a tight budget, labelled; a plugin that raises fails
its job cleanly."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from master.shell.run import run_scenario
from testbed.app.cli import main
from testbed.scenario.schema import load_scenario
from testbed.workloads.check import check_output
from tests.support.plugins import write_doc_files
from tests.support.runs import evict_first_if_none, spilled
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

RAISES = """
from testbed.api import Workload


class Raises(Workload):
    def generate(self, split, splits, seed):
        yield b"one line\\n"

    def map(self, record):
        yield record, 1

    def reduce(self, key, values):
        raise RuntimeError("plugin bug in reduce")


class RaisesInMap(Raises):
    def map(self, record):
        raise RuntimeError("plugin bug in map")
"""


async def test_the_docs_inverted_index_is_exact_under_an_eviction(
    tmp_path: Path, isolated_path: None
) -> None:
    plugins = tmp_path / "my-workloads"
    plugins.mkdir()
    write_doc_files(plugins)
    scenario = load_scenario(plugins / "index.yaml", ["time_scale=60"])
    run_dir = tmp_path / "run"
    result = await run_scenario(settings_of(scenario), run_dir, on_event=evict_first_if_none())
    assert result.ok, result.summary
    assert result.summary["evictions"] > 0
    assert spilled(run_dir) > 0
    assert check_output(scenario.jobs[0], scenario.seed * 1000, run_dir / "outputs" / "j000") == []
    label = result.summary["plugins"]["workloads"]["inverted_index:InvertedIndex"]
    assert re.fullmatch(r"sha256:[0-9a-f]{12}", label["version"])
    assert main(["check-output", "--run", str(run_dir)]) == 0


@pytest.mark.parametrize("where", ["Raises:reduce", "RaisesInMap:map"])
def test_a_workload_that_raises_fails_its_job_cleanly(
    tmp_path: Path, isolated_path: None, where: str
) -> None:
    name, method = where.split(":")
    (tmp_path / "raises_workload.py").write_text(RAISES, encoding="utf-8")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: raises\ncluster: {reserved: 1, transient: 1, heartbeat_interval: 0.2, heartbeat_timeout: 2}\n"
        f"jobs: [{{workload: 'raises_workload:{name}', maps: 2, reduces: 1}}]\ntimeout: 120s\n",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    assert main(["run", str(scenario), "--out", str(run_dir)]) == 1
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    failed = [e for e in events if e["event"] == "task_finished" and e["status"] == "failed"]
    assert failed and all(e["attempt"] == 0 for e in failed), failed  # not retried: it would fail alike
    raised = [e for e in failed if e["failure"] == "data"]
    assert raised, failed
    for event in raised:
        assert f"plugin bug in {method}" in event["error"] and 'raises_workload.py", line' in event["error"]
    for event in failed:  # a task still running when the job failed is cancelled (both maps raise: a race)
        if event["failure"] != "data":
            assert event["failure"] == "cancelled", event
            assert event["error"].startswith("cancelled: the job failed: task "), event
            assert f"plugin bug in {method}" in event["error"], event
    assert [e["status"] for e in events if e["event"] == "job_finished"] == ["failed"]
    assert not any((run_dir / "outputs").glob("j000/*"))
    logs = "".join(path.read_text() for path in (run_dir / "logs").glob("*"))
    assert f"plugin bug in {method}" in logs


async def test_an_iterative_plugin_is_exact_on_real_agents_under_an_eviction(
    tmp_path: Path, isolated_path: None
) -> None:
    """Map, 4 rounds of step, reduce: 6 stages chained by shuffles on local agents; the first
    eviction loses shuffle outputs that lineage recomputes."""
    from tests.support.plugins import ITERATIVE, path_graph

    (tmp_path / "minlabel.py").write_text(ITERATIVE, encoding="utf-8")
    scenario_file = tmp_path / "cc.yaml"
    scenario_file.write_text(
        "name: cc\nseed: 1\n"
        "cluster: {reserved: 1, transient: 2, heartbeat_interval: 0.2, heartbeat_timeout: 5}\n"
        f"jobs: [{{workload: 'minlabel:MinLabel', input: '{path_graph(tmp_path)}', maps: 3, reduces: 2,"
        " options: {iterations: 4}}]\ntimeout: 180s\n",
        encoding="utf-8",
    )
    scenario = load_scenario(scenario_file, ["time_scale=60"])
    run_dir = tmp_path / "run"
    result = await run_scenario(settings_of(scenario), run_dir, on_event=evict_first_if_none())
    assert result.ok and result.summary["evictions"] > 0, result.summary
    stages = {int(row.split(",")[2]) for row in (run_dir / "tasks.csv").read_text().splitlines()[1:]}
    assert stages == set(range(6))
    assert check_output(scenario.jobs[0], scenario.seed * 1000, run_dir / "outputs" / "j000") == []
