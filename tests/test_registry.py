"""The registry: every built-in is found, checked and built by the plugin code, and the
names the scenario schema knows are the registry's."""

from __future__ import annotations

import importlib
import typing
from pathlib import Path

import pytest
from pydantic import BaseModel

from testbed import registry
from testbed.scenario.jobs import PLUGIN_TAG, JobSpec
from testbed.scenario.plugins import find_plugin
from testbed.scenario.schema import ScenarioError, load_scenario
from testbed.settings.policies import make_policy
from testbed.wire.protocol import INLINE_NOOP
from testbed.workloads.catalog import OPERATIONS, builtin, lineage, plan_job
from testbed.workloads.description import BuiltinWorkload
from tests.support.scenarios import make_scenario

POLICIES = [
    (kind, name)
    for kind in ("scheduler", "strategy", "autoscaler", "speculation")
    for name in registry.BUILTINS[kind]
]
EAGLE = {"options": {"eagle": {"short_fraction": 0.5}}}
PLANNED_JOBS = [
    {"workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 1},
    {"workload": "sort", "size_mb": 1, "maps": 2, "reduces": 1},
    {"workload": "pagerank", "nodes": 100, "edges": 400, "iterations": 2, "reduces": 2},
    {"workload": "mlr", "points": 1000, "features": 4, "iterations": 2, "maps": 2, "reduces": 1},
    {"workload": "sleep", "tasks": 2, "duration": 1},
    {"workload": "noop", "tasks": 2},
]
"""A job of every built-in workload but sql (whose tables are files a test writes)."""


@pytest.mark.parametrize(("kind", "name"), POLICIES, ids=[f"{kind}-{name}" for kind, name in POLICIES])
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
def test_every_built_in_workload_module_plans_its_jobs_and_names_its_ops(name: str) -> None:
    module = importlib.import_module(registry.BUILTINS["workload"][name])
    assert callable(module.plan)
    assert set(module.COMBINERS) <= set(module.OPERATIONS)
    assert all(op.startswith(f"{name}.") for op in module.OPERATIONS)
    assert set(OPERATIONS) >= set(module.OPERATIONS)


def test_every_planned_op_has_its_task_function(tmp_path: Path) -> None:
    (tmp_path / "t.tbl").write_text("1|a|\n2|b|\n")
    table = {"input": str(tmp_path / "t.tbl"), "schema": {"k": "int", "v": "string"}}
    sql = {"workload": "sql", "query": "select v, count(*) from t group by v", "tables": {"t": table}}
    scenario = make_scenario(jobs=[*PLANNED_JOBS, sql])
    ops = {stage.op for job in scenario.jobs for stage in plan_job(job, 7, scenario).stages}
    assert ops - {INLINE_NOOP} <= set(OPERATIONS)
    prefixes = {op.partition(".")[0] for op in ops - {INLINE_NOOP}}
    assert prefixes == set(registry.BUILTINS["workload"]) - {"noop", "sql"} | {"dag"}  # sql runs as a DAG


@pytest.mark.parametrize("name", list(registry.BUILTINS["workload"]))
def test_every_built_in_workload_is_one_package_declaring_the_whole_seam(name: str) -> None:
    module = importlib.import_module(registry.BUILTINS["workload"][name])
    assert Path(module.__file__ or "").parent.name == name  # its folder testbed/workloads/<name>/
    assert builtin(name) is module
    declared = set(typing.get_type_hints(BuiltinWorkload)) | {"plan", "lineage"}
    assert {attr for attr in declared if not hasattr(module, attr)} == set()
    assert isinstance(module.RECORD_BYTES, int) and module.RECORD_BYTES >= 1
    for part in (module.check, module.generate, module.lineage):
        assert part is None or callable(part)


def test_a_built_in_plans_lineage_runs_each_dag_operator_in_one_stage() -> None:
    scenario = make_scenario(jobs=PLANNED_JOBS)
    with_dags = set()
    for job in scenario.jobs:
        plan = plan_job(job, 7, scenario)
        found = lineage(plan)
        if found is None:
            continue
        with_dags.add(job.workload)
        assert len(found.operators) == len(plan.stages)
        ran = [op for stage in found.operators for op in stage]
        assert sorted(ran) == sorted(op.op_id for op in found.dag.operators)
    assert with_dags == {"wordcount", "sort", "pagerank", "mlr"}


def test_the_simulator_sizes_a_generated_source_by_its_workloads_record() -> None:
    assert builtin("sort").RECORD_BYTES == 100
    assert builtin("pagerank").RECORD_BYTES == 16  # an edge: two int64
    assert builtin("plugin") is None


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


@pytest.mark.parametrize(("kind", "name"), POLICIES, ids=[f"{kind}-{name}" for kind, name in POLICIES])
def test_every_built_in_policy_declares_its_options(kind: str, name: str) -> None:
    model = find_plugin(kind, name, f"policy.{kind}").target.Options
    assert issubclass(model, BaseModel)
    field = f"speculation.{name}" if kind == "speculation" else name  # a rule's names are other kinds' too
    with pytest.raises(ScenarioError, match=rf"policy\.options\.{field}\.no_such_knob: Extra inputs"):
        find_plugin(kind, name, f"policy.{kind}").checked_options({"no_such_knob": 1})


def test_the_spark_strategy_and_the_spark_speculation_rule_keep_their_own_options() -> None:
    """Both are named spark: the rule's options live under policy.options.speculation.spark, so the
    strategy's (it takes none) still refuse a stray knob."""
    options = {"speculation": {"spark": {"quantile": 0.75}}}
    policy = {"strategy": "spark", "speculation": "spark", "options": options}
    scenario = make_scenario(policy=policy)
    assert type(make_policy("strategy", scenario)).__name__ == "SparkStrategy"
    assert make_policy("speculation", scenario).quantile == 0.75
    stray = make_scenario(policy={"strategy": "spark", "options": {"spark": {"quantile": 0.75}}})
    with pytest.raises(ScenarioError, match=r"policy\.options\.spark\.quantile: Extra inputs"):
        make_policy("strategy", stray)


def test_a_built_in_option_of_the_wrong_type_is_named_as_a_plugins_is() -> None:
    policy = {"scheduler": "eagle", "options": {"eagle": {"probes": "3"}}}
    with pytest.raises(ScenarioError, match=r"policy\.options\.eagle\.probes: Input should be a valid int"):
        make_policy("scheduler", make_scenario(policy=policy))
