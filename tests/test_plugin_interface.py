"""A plugin is checked against its whole interface when it loads (``testbed.scenario.plugins``): a member
it lacks gets the interface's default, and one that cannot work is refused by ``testbed
validate`` in one line (exit 2), never mid-run. All four kinds."""

from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest

from master.policy_setup import make_autoscaler, make_scheduler, make_strategy
from testbed.api import ClusterSnapshot
from testbed.scenario.schema import load_scenario
from testbed.testing import check_workload, run
from tests.support.cli import assert_validate_refuses
from tests.support.plugins import plugin_module

PLUGIN = '''
from testbed.api import Assign, Scheduler, Strategy, Workload


class Spread:
    """A scheduler that does not subclass testbed.api.Scheduler: schedule() only."""

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


class SpreadWithHelpers(Spread):
    """Its helper methods share names with other kinds' methods (a workload's map, read)."""

    def map(self):
        return {}

    def read(self, a, b, c):
        return None


class Idle:
    """An autoscaler that does not subclass testbed.api.Autoscaler: decide() only."""

    def decide(self, snapshot, provisioning):
        return []


class Lineage:
    """A strategy that does not subclass testbed.api.Strategy: the two queries only."""

    def plan(self, view, job):
        return Strategy().plan(view, job)

    def launch(self, view, job, key):
        return Strategy().launch(view, job, key)


class Words:
    """A workload that does not subclass testbed.api.Workload: map, reduce and generate."""

    def map(self, record):
        for word in record.split():
            yield word, 1

    def reduce(self, key, values):
        return f"{key}\\t{sum(values)}"

    def generate(self, split, splits, seed):
        yield f"a b c a {split}\\n".encode()


class Chatty(Spread):
    needs_all_pending = "yes"


class Slotted:
    """No instance dict: it cannot be given what it lacks."""

    __slots__ = ()

    def schedule(self, snapshot):
        return []


class Forgot(Scheduler):
    def schedul(self, snapshot):
        return []


class DelayInWords(Idle):
    provisioning_delay_s = "2s"


class WakesWrong(Idle):
    def wake_at(self, snapshot):
        return None


class FactsAsData(Idle):
    facts = {"waiting": 0}


class LosesNodesWrong(Strategy):
    def on_node_lost(self, event):
        return []


class PlansWrong(Strategy):
    def plan(self, job):
        return []


class CombinesNothing(Words):
    combine = True


class NoMap(Workload):
    def reduce(self, key, values):
        return key

    def generate(self, split, splits, seed):
        yield b"a\\n"
'''


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> str:
    """The plugins above, in a module beside the test's scenarios."""
    return plugin_module(tmp_path, PLUGIN, "iface_", monkeypatch, request)


def scenario(
    directory: Path, policy: str, job: str = "{workload: wordcount, size_mb: 1, maps: 3, reduces: 2}"
) -> Path:
    path = directory / "s.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: interface
        seed: 2
        cluster: {{reserved: 1, transient: 1, heartbeat_interval: 0.2, heartbeat_timeout: 2}}
        policy: {policy}
        jobs: [{job}]
        timeout: 120s
        """),
        encoding="utf-8",
    )
    return path


def simulated(path: Path, run_dir: Path) -> list[dict]:
    """The events of a simulated run of ``path``, which must succeed."""
    result = asyncio.run(run(path, run_dir, backend="sim"))
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert result.ok, [e for e in events if e["event"] == "master_error"]
    return events


def test_a_duck_typed_scheduler_gets_the_declared_defaults_and_runs(
    tmp_path: Path, module: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """It failed its jobs mid-run: AttributeError("'Spread' object has no attribute 'needs_all_pending'")."""
    from testbed.app.cli import main

    path = scenario(tmp_path, f"{{scheduler: '{module}:Spread'}}")
    assert main(["validate", str(path)]) == 0
    built = make_scheduler(load_scenario(path))
    assert (built.needs_all_pending, built.needs_node_views, built.needs_free_index) == (True, True, True)
    events = simulated(path, tmp_path / "run")
    assert [e["status"] for e in events if e["event"] == "job_finished"] == ["succeeded"]


def test_a_scheduler_method_named_as_another_kinds_method_is_its_own_business(
    tmp_path: Path, module: str
) -> None:
    """Only a scheduler's methods are checked against a scheduler's arguments (a helper
    ``map(self)`` was refused: "define map(self, record)")."""
    built = make_scheduler(load_scenario(scenario(tmp_path, f"{{scheduler: '{module}:SpreadWithHelpers'}}")))
    assert built.map() == {}


def test_a_duck_typed_autoscaler_gets_the_declared_defaults_and_runs(tmp_path: Path, module: str) -> None:
    """It crashed the run as it started: AttributeError: 'Idle' object has no attribute
    'provisioning_delay_s'."""
    path = scenario(tmp_path, f"{{autoscaler: '{module}:Idle'}}")
    built = make_autoscaler(load_scenario(path))
    snapshot = ClusterSnapshot(now=0.0, nodes=(), jobs=())
    assert built.provisioning_delay_s == 0.0 and built.needs_current_jobs is True
    assert (built.wake_at(snapshot, 0), built.facts(snapshot)) == (None, {})
    events = simulated(path, tmp_path / "run")
    assert [e["status"] for e in events if e["event"] == "job_finished"] == ["succeeded"]


def test_a_duck_typed_strategy_gets_the_declared_handlers_and_runs(tmp_path: Path, module: str) -> None:
    """It was refused although it had both queries ("subclass testbed.api.Strategy")."""
    path = scenario(tmp_path, f"{{strategy: '{module}:Lineage'}}")
    built = make_strategy(load_scenario(path))
    assert built.on_node_lost(None, None) == []  # type: ignore[arg-type]
    events = simulated(path, tmp_path / "run")
    assert [e["status"] for e in events if e["event"] == "job_finished"] == ["succeeded"]


def test_a_duck_typed_workload_gets_the_declared_defaults_and_its_output_is_right(
    tmp_path: Path, module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its map tasks failed: AttributeError: 'Words' object has no attribute 'combine'."""
    monkeypatch.syspath_prepend(str(tmp_path))
    assert check_workload({"workload": f"{module}:Words", "maps": 3, "reduces": 2}, tmp_path / "work") == []


BAD = [
    (
        "scheduler",
        "Chatty.needs_all_pending",
        "is 'yes', but testbed.api.Scheduler declares it True or False",
    ),
    ("scheduler", "Slotted", "lacks needs_all_pending and cannot take the default of testbed.api.Scheduler"),
    (
        "scheduler",
        "Forgot",
        "is no scheduler: it lacks the method schedule(); define schedule(self, snapshot)",
    ),
    (
        "autoscaler",
        "DelayInWords.provisioning_delay_s",
        "is '2s', but testbed.api.Autoscaler declares it a number",
    ),
    ("autoscaler", "WakesWrong.wake_at(snapshot)", "define wake_at(self, snapshot, provisioning)"),
    ("autoscaler", "FactsAsData.facts", "declares it a method"),
    ("strategy", "LosesNodesWrong.on_node_lost(event)", "define on_node_lost(self, view, event)"),
    ("strategy", "PlansWrong.plan(job)", "define plan(self, view, job)"),
    ("workload", "CombinesNothing.combine", "is True, but testbed.api.Workload declares it None or a method"),
    ("workload", "NoMap", "is no workload: it lacks the method map(); define map(self, record)"),
]
"""(kind, the plugin or its member as the line names it, what the line says)."""


@pytest.mark.parametrize(("kind", "subject", "expected"), BAD, ids=[b[1] for b in BAD])
def test_a_plugin_that_cannot_work_is_refused_by_validate_in_one_line(
    tmp_path: Path, module: str, capsys: pytest.CaptureFixture[str], kind: str, subject: str, expected: str
) -> None:
    name = subject.partition(".")[0]
    if kind == "workload":
        path = scenario(tmp_path, "{}", f"{{workload: '{module}:{name}', maps: 2, reduces: 1}}")
        field = "jobs.0.workload: "
    else:
        path = scenario(tmp_path, f"{{{kind}: '{module}:{name}'}}")
        field = f"policy.{kind}: "
    line = assert_validate_refuses(path, field, expected, capsys)
    assert f"{module}:{subject} (" in line, line  # the plugin (and member), then where it is
