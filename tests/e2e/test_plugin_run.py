"""A scheduler plugin from a directory outside the package, in real runs on local agents."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from testbed.app.cli import main
from testbed.app.report.compare import compare_runs
from tests.support.plugins import write_doc_files

pytestmark = pytest.mark.e2e

RAISES = """
from testbed.api import Autoscaler, Scheduler, Strategy


class Raises(Scheduler):
    def schedule(self, snapshot):
        raise RuntimeError("plugin bug: no placement today")


class RaisesLater(Autoscaler):
    def decide(self, snapshot, provisioning):
        if any(node.running for node in snapshot.nodes):
            raise RuntimeError("plugin bug: scaling while tasks run")
        return []


class RaisesOnSuccess(Strategy):
    def on_task_succeeded(self, view, event):
        raise RuntimeError("plugin bug: a strategy's handler")
"""


def events(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def test_the_docs_random_scheduler_runs_checked_and_labelled(tmp_path: Path, isolated_path: None) -> None:
    plugins = tmp_path / "my-policies"
    plugins.mkdir()
    write_doc_files(plugins)
    run_dir = tmp_path / "run"
    assert main(["run", str(plugins / "random.yaml"), "--out", str(run_dir)]) == 0
    assert main(["check-output", "--run", str(run_dir)]) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    label = summary["plugins"]["scheduler"]
    assert label["import_path"] == "random_placement:RandomScheduler"
    assert re.fullmatch(r"sha256:[0-9a-f]{12}", label["version"])
    comparison = compare_runs([run_dir, run_dir])
    assert f"random_placement:RandomScheduler {label['version']}" in comparison.to_markdown()


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        ("{scheduler: 'raises_plugin:Raises'}", "plugin bug: no placement today"),
        ("{autoscaler: 'raises_plugin:RaisesLater'}", "plugin bug: scaling while tasks run"),
        ("{strategy: 'raises_plugin:RaisesOnSuccess'}", "plugin bug: a strategy's handler"),
    ],
    ids=["scheduler", "autoscaler-mid-run", "strategy-mid-run"],
)
def test_a_plugin_that_raises_fails_the_run_cleanly(
    tmp_path: Path, isolated_path: None, policy: str, message: str
) -> None:
    (tmp_path / "raises_plugin.py").write_text(RAISES, encoding="utf-8")
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        "name: raises\ncluster: {reserved: 1, transient: 1, heartbeat_interval: 0.2, heartbeat_timeout: 2}\n"
        f"policy: {policy}\n"
        "jobs: [{workload: wordcount, size_mb: 2, maps: 2, reduces: 1}]\ntimeout: 120s\n",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    assert main(["run", str(scenario), "--out", str(run_dir)]) == 1
    error = next(e for e in events(run_dir) if e["event"] == "master_error")
    assert message in error["traceback"]
    assert 'raises_plugin.py", line' in error["traceback"]
    finished = [e for e in events(run_dir) if e["event"] == "job_finished"]
    assert [e["status"] for e in finished] == ["failed"]
    assert not any((run_dir / "outputs").glob("j000/*"))


def test_the_docs_scheduler_over_its_workload_on_local_agents_and_the_simulator(
    tmp_path: Path, isolated_path: None
) -> None:
    """The doc's experiment.yaml, from a directory outside the package: exact on local agents,
    modelled by its SimModel on the simulator, both runs labelled with both plugins' versions."""
    plugins = tmp_path / "my-plugins"
    plugins.mkdir()
    write_doc_files(plugins)
    runs = {backend: tmp_path / backend for backend in ("local", "sim")}
    for backend, run_dir in runs.items():
        assert (
            main(["run", str(plugins / "experiment.yaml"), "--backend", backend, "--out", str(run_dir)]) == 0
        )
    assert main(["check-output", "--run", str(runs["local"])]) == 0
    labels = [json.loads((run_dir / "summary.json").read_text())["plugins"] for run_dir in runs.values()]
    assert labels[0] == labels[1] and set(labels[0]) == {"scheduler", "workloads"}
    workload = labels[0]["workloads"]["inverted_index:InvertedIndex"]
    shown = f"inverted_index:InvertedIndex {workload['version']}"
    assert main(["report", str(runs["local"])]) == 0
    assert shown in (runs["local"] / "report.md").read_text()
    assert shown in compare_runs(list(runs.values())).to_markdown()
    maps = [row for row in (runs["sim"] / "tasks.csv").read_text().splitlines()[1:] if ".s0." in row]
    assert len(maps) == 3 and all(",40400," in row for row in maps)  # the SimModel's 400 x 101 bytes


async def test_the_harness_runs_a_scenario_in_a_line(tmp_path: Path, isolated_path: None) -> None:
    from testbed.testing import run

    write_doc_files(tmp_path)
    result = await run(tmp_path / "random.yaml", tmp_path / "run")
    assert result.ok, result.summary
    assert result.summary["plugins"]["scheduler"]["name"] == "random_placement:RandomScheduler"


def test_the_docs_autoscaler_sees_the_whole_backlog_under_fifo(tmp_path: Path, isolated_path: None) -> None:
    """Ten ready maps, two slots: FIFO's round sees a window of two, and the autoscaler saw that
    window ("2 tasks wait"; on the full cluster none). It must see the 8 that wait."""
    write_doc_files(tmp_path)
    scenario = tmp_path / "backlog.yaml"  # the doc's
    run_dir = tmp_path / "run"
    assert main(["run", str(scenario), "--out", str(run_dir)]) == 0
    launches = [e for e in events(run_dir) if e["event"] == "autoscale" and e["action"] == "launch"]
    assert [(e["reason"], e["facts"]) for e in launches] == [("8 tasks wait", {"waiting": 8})]
    assert main(["check-output", "--run", str(run_dir)]) == 0


DUCK_TYPED = """
from testbed.api import Assign, Launch


class Spread:
    def schedule(self, snapshot):
        room = {n.node_id: [n.free_slots, n.free_memory_mb] for n in snapshot.nodes if not n.draining}
        decisions = []
        for job in snapshot.jobs:
            for task in job.pending:
                node = next((i for i, (s, m) in room.items() if s > 0 and m >= task.ideal_memory_mb), None)
                if node is not None:
                    room[node][0] -= 1
                    room[node][1] -= task.ideal_memory_mb
                    decisions.append(Assign(task.task_id, node, task.ideal_memory_mb))
        return decisions


class OneMore:
    def decide(self, snapshot, provisioning):
        transient = [n for n in snapshot.nodes if n.node_class == "transient"]
        waiting = any(job.pending for job in snapshot.jobs)
        if waiting and not transient and not provisioning:
            return [Launch("transient", reason="backlog")]
        return []


class Words:
    def map(self, record):
        for word in record.split():
            yield word, 1

    def reduce(self, key, values):
        return f"{key}\\t{sum(values)}"

    def generate(self, split, splits, seed):
        for line in range(200):
            yield f"w{line % 7} w{(line * split) % 5} {seed}\\n".encode()
"""


def test_duck_typed_plugins_of_three_kinds_run_on_local_agents(tmp_path: Path, isolated_path: None) -> None:
    """A scheduler, an autoscaler and a workload none of which subclasses its interface: they
    failed the run (needs_all_pending, provisioning_delay_s, combine missing)."""
    (tmp_path / "duck_plugins.py").write_text(DUCK_TYPED, encoding="utf-8")
    scenario = tmp_path / "duck.yaml"
    scenario.write_text(
        "name: duck\ncluster: {reserved: 1, transient: 0, heartbeat_interval: 0.2, heartbeat_timeout: 5}\n"
        "policy: {scheduler: 'duck_plugins:Spread', autoscaler: 'duck_plugins:OneMore'}\n"
        "jobs: [{workload: 'duck_plugins:Words', maps: 6, reduces: 2}]\ntimeout: 120s\n",
        encoding="utf-8",
    )
    run_dir = tmp_path / "run"
    assert main(["run", str(scenario), "--out", str(run_dir)]) == 0
    assert main(["check-output", "--run", str(run_dir)]) == 0
    assert [e["action"] for e in events(run_dir) if e["event"] == "autoscale"][:1] == ["launch"]
