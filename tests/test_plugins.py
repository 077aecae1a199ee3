"""Policy plugins named in a scenario: import paths beside the scenario, options, clear errors."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest

from master.policy_setup import make_autoscaler, make_scheduler, policy_plugins
from testbed.scenario.schema import load_scenario
from tests.support.cli import assert_validate_refuses
from tests.support.plugins import plugin_module

PLUGIN = '''
from pydantic import BaseModel

from testbed.api import Assign, Autoscaler, ClusterSnapshot, Scheduler


class FirstFit(Scheduler):
    """Every pending task on the first node with a free slot."""

    class Options(BaseModel, extra="forbid"):
        memory_mb: int = 64

    def __init__(self, memory_mb: int = 64) -> None:
        self.memory_mb = memory_mb

    def schedule(self, snapshot: ClusterSnapshot) -> list:
        free = {n.node_id: n.free_slots for n in snapshot.nodes}
        decisions = []
        for job in snapshot.jobs:
            for task in job.pending:
                node = next((n for n, slots in free.items() if slots > 0), None)
                if node is None:
                    return decisions
                free[node] -= 1
                decisions.append(Assign(task.task_id, node, self.memory_mb))
        return decisions


class Idle(Autoscaler):
    def decide(self, snapshot, provisioning):
        return []


class NoSchedule:
    pass


class Explodes(Scheduler):
    def __init__(self) -> None:
        raise ValueError("boom at build")

    def schedule(self, snapshot):
        return []
'''


@pytest.fixture
def plugin_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> tuple[Path, str]:
    """A scenario directory holding a plugin module with a name of its own."""
    return tmp_path, plugin_module(tmp_path, PLUGIN, "plug_", monkeypatch, request)


def scenario(directory: Path, policy: str) -> Path:
    path = directory / "s.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: plug
        cluster: {{reserved: 1, transient: 1}}
        policy: {policy}
        jobs: [{{workload: sleep, tasks: 2, duration: 1s}}]
        """),
        encoding="utf-8",
    )
    return path


def test_a_scheduler_beside_the_scenario_is_built_with_its_options(plugin_dir: tuple[Path, str]) -> None:
    directory, module = plugin_dir
    path = scenario(
        directory, f'{{scheduler: "{module}:FirstFit", options: {{"{module}:FirstFit": {{memory_mb: 99}}}}}}'
    )
    built = make_scheduler(load_scenario(path))
    assert type(built).__name__ == "FirstFit" and built.memory_mb == 99
    provenance = policy_plugins(load_scenario(path))["scheduler"]
    assert provenance["import_path"] == f"{module}:FirstFit"
    assert re.fullmatch(r"sha256:[0-9a-f]{12}", provenance["version"])


def test_an_autoscaler_plugin_gets_the_declared_defaults(plugin_dir: tuple[Path, str]) -> None:
    directory, module = plugin_dir
    built = make_autoscaler(load_scenario(scenario(directory, f'{{autoscaler: "{module}:Idle"}}')))
    assert built.provisioning_delay_s == 0.0


def test_the_plugin_directory_reaches_agents_through_pythonpath(plugin_dir: tuple[Path, str]) -> None:
    from testbed.node.processes import child_env

    directory, module = plugin_dir
    load_scenario(scenario(directory, f'{{scheduler: "{module}:FirstFit"}}'))
    assert str(directory.resolve()) in child_env()["PYTHONPATH"].split(":")


BAD = [
    ("{scheduler: 'no_such_module_xyz:Sched'}", "policy.scheduler: cannot import 'no_such_module_xyz'"),
    ("{scheduler: '{module}:Missing'}", "policy.scheduler: module '{module}' has no 'Missing'"),
    ("{scheduler: '{module}:NoSchedule'}", "is no scheduler: it lacks the method schedule()"),
    ("{autoscaler: '{module}:NoSchedule'}", "is no autoscaler: it lacks the method decide()"),
    ("{scheduler: unknown-name}", "'unknown-name' is neither a built-in scheduler"),
    (
        "{scheduler: '{module}:FirstFit', options: {'{module}:FirstFit': {memory_mb: lots}}}",
        "policy.options.{module}:FirstFit.memory_mb: Input should be a valid integer",
    ),
    (
        "{scheduler: '{module}:FirstFit', options: {'{module}:FirstFit': {cores: 2}}}",
        "policy.options.{module}:FirstFit.cores: Extra inputs are not permitted",
    ),
    ("{scheduler: '{module}:Explodes'}", "rejects its options: boom at build"),
    ("{scheduler: 'a b'}", "policy.scheduler: String should match pattern"),
    ("{strategy: '{module}:FirstFit'}", "is no strategy: it lacks the method plan()"),
]


@pytest.mark.parametrize(("policy", "expected"), BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_a_bad_plugin_is_one_line_and_exit_2(
    plugin_dir: tuple[Path, str], capsys: pytest.CaptureFixture[str], policy: str, expected: str
) -> None:
    directory, module = plugin_dir
    path = scenario(directory, policy.replace("{module}", module))
    assert_validate_refuses(path, "policy.", expected.replace("{module}", module), capsys)


def test_an_installed_package_registers_a_scheduler_by_entry_point(plugin_dir: tuple[Path, str]) -> None:
    directory, module = plugin_dir
    info = directory / "fancy_sched-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fancy-sched\nVersion: 1.2.3\n", encoding="utf-8"
    )
    (info / "top_level.txt").write_text(f"{module}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(
        f"[transient_testbed.schedulers]\nfancy = {module}:FirstFit\n", encoding="utf-8"
    )
    loaded = load_scenario(scenario(directory, "{scheduler: fancy}"))
    assert type(make_scheduler(loaded)).__name__ == "FirstFit"
    assert policy_plugins(loaded)["scheduler"] == {
        "name": "fancy",
        "import_path": f"{module}:FirstFit",
        "version": "1.2.3",
    }


def test_the_run_directory_copy_of_the_scenario_still_finds_the_plugin(
    plugin_dir: tuple[Path, str], tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    from testbed.scenario.schema import to_yaml

    directory, module = plugin_dir
    loaded = load_scenario(scenario(directory, f'{{scheduler: "{module}:FirstFit"}}'))
    assert loaded.policy.plugin_path == [str(directory.resolve())]
    run_dir = tmp_path_factory.mktemp("run")
    (run_dir / "scenario.yaml").write_text(to_yaml(loaded), encoding="utf-8")
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p != str(directory.resolve())])
    sys.modules.pop(module, None)
    assert type(make_scheduler(load_scenario(run_dir / "scenario.yaml"))).__name__ == "FirstFit"
