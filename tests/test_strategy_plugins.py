"""A recovery strategy plugin named in a scenario (``policy.strategy: module:Class``): found
beside the scenario, built with its options, run by the core, named in the run's provenance;
a bad one is one line and exit 2."""

from __future__ import annotations

import asyncio
import json
import re
import textwrap
from pathlib import Path

import pytest

from master.policy_setup import make_strategy, policy_plugins
from testbed.scenario.schema import load_scenario
from testbed.testing import run
from tests.support.cli import assert_validate_refuses
from tests.support.plugins import plugin_module, reruns, write_doc_files

PLUGIN = '''
from testbed.api import Note, Ready, Strategy


class OnReserved(Strategy):
    """Lineage recovery with every task on the reserved nodes; journals each success."""

    def __init__(self, reason: str = "reserved only") -> None:
        self.reason = reason

    def plan(self, view, job):
        return (Ready(key, frozenset({"reserved"})) for key in job.ready())

    def on_task_succeeded(self, view, event):
        job = view.jobs[event.job_id]
        task = job.task_id(event.key)
        return [Note("push_failed", {"job": job.job_id, "task": task, "error": self.reason})]


class Raises(OnReserved):
    """Raises on its first success: a bug in a plugin."""

    def on_task_succeeded(self, view, event):
        raise RuntimeError("a bug in the plugin")


class NoLaunch:
    def plan(self, view, job):
        return []
'''


@pytest.fixture
def plugin_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> tuple[Path, str]:
    """A scenario directory holding a plugin module with a name of its own."""
    return tmp_path, plugin_module(tmp_path, PLUGIN, "strategy_", monkeypatch, request)


def scenario(directory: Path, policy: str) -> Path:
    path = directory / "s.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: strategy-plugin
        seed: 3
        cluster: {{reserved: 2, transient: 2}}
        policy: {policy}
        jobs: [{{workload: wordcount, size_mb: 1, maps: 3, reduces: 2}}]
        """),
        encoding="utf-8",
    )
    return path


def test_a_strategy_beside_the_scenario_is_built_with_its_options(plugin_dir: tuple[Path, str]) -> None:
    directory, module = plugin_dir
    name = f"{module}:OnReserved"
    path = scenario(directory, f'{{strategy: "{name}", options: {{"{name}": {{reason: mine}}}}}}')
    built = make_strategy(load_scenario(path))
    assert type(built).__name__ == "OnReserved" and built.reason == "mine"  # type: ignore[attr-defined]
    provenance = policy_plugins(load_scenario(path))["strategy"]
    assert provenance["import_path"] == name
    assert re.fullmatch(r"sha256:[0-9a-f]{12}", provenance["version"])


def test_an_installed_package_registers_a_strategy_by_entry_point(plugin_dir: tuple[Path, str]) -> None:
    """The group is transient_testbed.strategies (it was looked up as '...strategys')."""
    directory, module = plugin_dir
    info = directory / "fancy_recovery-0.4.dist-info"
    info.mkdir()
    metadata = "Metadata-Version: 2.1\nName: fancy-recovery\nVersion: 0.4\n"
    (info / "METADATA").write_text(metadata, encoding="utf-8")
    (info / "top_level.txt").write_text(f"{module}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        f"[transient_testbed.strategies]\nfancy = {module}:OnReserved\n", encoding="utf-8"
    )
    loaded = load_scenario(scenario(directory, "{strategy: fancy}"))
    assert type(make_strategy(loaded)).__name__ == "OnReserved"
    assert policy_plugins(loaded)["strategy"]["version"] == "0.4"


def test_a_strategy_plugin_runs_on_the_simulator(plugin_dir: tuple[Path, str], tmp_path: Path) -> None:
    directory, module = plugin_dir
    path = scenario(directory, f'{{strategy: "{module}:OnReserved"}}')
    asyncio.run(run(path, tmp_path / "run", backend="sim"))
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    started = [e for e in events if e["event"] == "task_started"]
    assert len(started) == 5 and {e["class"] for e in started} == {"reserved"}
    noted = [e["task"] for e in events if e["event"] == "push_failed" and e["error"] == "reserved only"]
    assert sorted(noted) == sorted(e["task"] for e in started)  # its handler's decisions, applied
    assert [e["status"] for e in events if e["event"] == "job_finished"] == ["succeeded"]
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["plugins"]["strategy"]["import_path"] == f"{module}:OnReserved"


def test_a_strategy_that_raises_ends_its_simulated_run_cleanly(
    plugin_dir: tuple[Path, str], tmp_path: Path
) -> None:
    # the run ends at once (it raised out of the simulated run before): its job failed, the plugin's
    # traceback in the journal, summary.json written, as a real run ends
    directory, module = plugin_dir
    path = scenario(directory, f'{{strategy: "{module}:Raises"}}')
    result = asyncio.run(run(path, tmp_path / "run", backend="sim"))
    assert not result.ok
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    (error,) = [e for e in events if e["event"] == "master_error"]
    assert "a bug in the plugin" in error["error"] and "on_task_succeeded" in error["traceback"]
    assert [e["status"] for e in events if e["event"] == "job_finished"] == ["failed"]
    assert events[-1]["event"] == "run_finished" and events[-1]["status"] == "failed"
    assert json.loads((tmp_path / "run" / "summary.json").read_text())["failed"] == 1


BAD = [
    ("{strategy: '{module}:NoLaunch'}", "is no strategy: it lacks the method launch()"),
    ("{strategy: nope}", "'nope' is neither a built-in strategy (spark, spark-checkpoint, pado, auto)"),
    ("{strategy: 'no_such_module_xyz:S'}", "policy.strategy: cannot import 'no_such_module_xyz'"),
]


@pytest.mark.parametrize(("policy", "expected"), BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_a_bad_strategy_plugin_is_one_line_and_exit_2(
    plugin_dir: tuple[Path, str], capsys: pytest.CaptureFixture[str], policy: str, expected: str
) -> None:
    directory, module = plugin_dir
    path = scenario(directory, policy.replace("{module}", module))
    assert_validate_refuses(path, "policy.strategy", expected.replace("{module}", module), capsys)


def test_the_docs_strategy_sends_interrupted_tasks_to_reserved_nodes_on_the_simulator(
    tmp_path: Path, isolated_path: None
) -> None:
    write_doc_files(tmp_path)
    asyncio.run(run(tmp_path / "evicted.yaml", tmp_path / "run", backend="sim"))
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    assert [e["status"] for e in events if e["event"] == "job_finished"] == ["succeeded"]
    assert [e for e in events if e["event"] == "node_lost"]
    again = reruns(events)
    assert again and {cls for _, cls in again} == {"reserved"}, again
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["plugins"]["strategy"]["import_path"] == "evicted_to_reserved:EvictedToReserved"
