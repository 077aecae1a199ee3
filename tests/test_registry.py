"""The registry: every built-in is found, checked and built by the plugin code, and the
names the scenario schema knows are the registry's."""

from __future__ import annotations

import importlib
import typing
from pathlib import Path

import pytest

from master.policy_setup import make_policy
from testbed import registry
from testbed.scenario.jobs import PLUGIN_TAG, JobSpec
from testbed.scenario.plugins import find_plugin
from testbed.scenario.schema import ScenarioError, load_scenario
from tests.support.scenarios import make_scenario

POLICIES = [
    (kind, name) for kind in ("scheduler", "strategy", "autoscaler") for name in registry.BUILTINS[kind]
]
EAGLE = {"options": {"eagle": {"short_fraction": 0.5}}}


@pytest.mark.parametrize(("kind", "name"), POLICIES, ids=[name for _, name in POLICIES])
def test_every_built_in_policy_is_built_through_the_plugin_path(kind: str, name: str) -> None:
    policy = {"scheduler": "eagle", **EAGLE} if name == "cloudcoaster" else {}
    scenario = make_scenario(policy={**policy, kind: name})
    plugin = find_plugin(kind, name, f"policy.{kind}")
    assert plugin.import_path == registry.BUILTINS[kind][name]
    built = make_policy(kind, scenario)
    assert type(built) is plugin.target


def test_a_built_in_takes_its_options_and_refuses_unknown_ones() -> None:
    built = make_policy(
        "scheduler", make_scenario(policy={"scheduler": "yarn", "options": {"yarn": {"ordering": "fifo"}}})
    )
    assert built.ordering == "fifo"
    with pytest.raises(ScenarioError, match=r"policy\.options\.fifo\.speed: Extra inputs are not permitted"):
        make_policy("scheduler", make_scenario(policy={"options": {"fifo": {"speed": 2}}}))


def test_the_schema_knows_exactly_the_registered_workloads() -> None:
    members = typing.get_args(typing.get_args(JobSpec)[0])
    tags = {typing.get_args(member)[1].tag for member in members}
    assert tags - {PLUGIN_TAG} == set(registry.BUILTINS["workload"])


@pytest.mark.parametrize("name", list(registry.BUILTINS["workload"]))
def test_every_built_in_workload_module_plans_its_jobs(name: str) -> None:
    module = importlib.import_module(registry.BUILTINS["workload"][name])
    assert callable(module.plan)


def test_an_unknown_name_lists_the_built_ins(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: s\ncluster: {reserved: 1, transient: 1}\njobs: [{workload: noop}]\n"
        "policy: {scheduler: fiffo}\n",
        encoding="utf-8",
    )
    with pytest.raises(ScenarioError) as raised:
        make_policy("scheduler", load_scenario(path))
    [line] = raised.value.problems
    assert line.startswith(
        "policy.scheduler: 'fiffo' is neither a built-in scheduler (fifo, yarn, yarn-me, eagle"
    )
    assert "transient_testbed.schedulers" in line


def test_every_kind_has_a_group_and_a_table() -> None:
    assert set(registry.GROUPS) == set(registry.BUILTINS) == set(registry.KINDS)
    assert registry.BUILTINS["speculation"] == {}
