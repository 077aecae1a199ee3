"""``strategy: auto``: the cost model's choice on hand-built plans, the choice the least of its
predictions, a simulated run mixing strategies job by job (each choice journaled as the model
computes it, each job run by its strategy exactly as that strategy alone runs it), ``testbed
plan``'s line, and bad options refused with exit 2."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from master.recovery.auto import AutoStrategy
from master.recovery.auto_cost import STRATEGIES, choose, predict, setting_of
from testbed.api.dag import JobDag, StageCost, StageInput, StageSpec
from testbed.app.cli import main
from testbed.plan import JobPlan
from testbed.scenario.schema import parse_scenario
from testbed.workloads.catalog import plan_job
from testbed.workloads.dag import plan_dag
from tests.support.auto_strategy import pado_cluster
from tests.support.cli import assert_validate_refuses
from tests.support.sim import SCENARIO, events, simulate
from tests.support.workflows import sql_scenario

JOIN = {
    "workload": "testbed.workloads.join:JoinAggregate",
    "options": {"customers": 20000, "orders": 400000, "customer_tasks": 2, "order_tasks": 6},
    "reduces": 4,
    "memory_mb": 16,
}


def chain(depth: int, tasks: int = 40, mb: float = 1000.0, s_per_mb: float = 0.05) -> JobPlan:
    """A source creating ``mb`` and ``depth - 1`` shuffles after it, each reading it all."""
    stages = [
        StageSpec("s0", "x:y", tasks, tasks, source="create", cost=StageCost(s_per_mb, 1.0, mb / tasks))
    ]
    for i in range(1, depth):
        partitions = tasks if i < depth - 1 else 1
        inputs = (StageInput(f"s{i - 1}"),)
        stages.append(StageSpec(f"s{i}", "x:y", tasks, partitions, inputs, cost=StageCost(s_per_mb, 1.0)))
    return plan_dag("chain", JobDag(tuple(stages)))


def test_without_evictions_spark_is_chosen() -> None:
    """No eviction to pay for: spark's executors on both classes and no copies are cheapest."""
    predictions = predict(chain(6), pado_cluster("none"))
    assert [p.strategy for p in predictions] == list(STRATEGIES)
    assert all(p.evictions == 0 for p in predictions)
    assert choose(predictions).strategy == "spark"
    spark, checkpoint, pado = (p.eviction_free_s for p in predictions)
    assert spark < checkpoint and spark < pado  # fewer slots for the others, and their copies


def test_a_long_lineage_under_a_high_rate_is_not_left_to_recomputation() -> None:
    """At Pado's high rate with evictions 60x as frequent (time_scale 60), a 12-stage lineage
    costs spark its recomputation of every finished stage per eviction: the model picks
    a strategy whose outputs survive an eviction."""
    setting = pado_cluster("high", 60.0)
    short, long = predict(chain(2), setting), predict(chain(12), setting)
    assert long[0].per_eviction_s > 5 * short[0].per_eviction_s  # the chain of finished stages
    assert long[0].per_eviction_s > 10 * max(p.per_eviction_s for p in long[1:])
    assert choose(long).strategy in ("spark-checkpoint", "pado")


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    depth=st.integers(1, 10),
    tasks=st.integers(1, 64),
    mb=st.floats(0, 5000),
    s_per_mb=st.floats(0, 0.5),
    lifetime=st.sampled_from(["none", "low", "medium", "high", "spot"]),
    scale=st.sampled_from([1.0, 60.0, 600.0]),
)
def test_the_choice_is_the_least_prediction(
    depth: int, tasks: int, mb: float, s_per_mb: float, lifetime: str, scale: float
) -> None:
    predictions = predict(chain(depth, tasks, mb, s_per_mb), pado_cluster(lifetime, scale))
    chosen = choose(predictions)
    assert chosen.seconds == min(p.seconds for p in predictions)
    assert chosen is next(p for p in predictions if p.seconds == chosen.seconds)  # the first on a tie


def mixed_scenario(strategy: str, candidates: list[str] | None = None) -> dict[str, Any]:
    """tests.support.sim's scenario (evictions, a storm, three jobs) and a DAG join."""
    doc = {"seed": 3, "timeout": 3600, **copy.deepcopy(SCENARIO)}
    doc["jobs"] = [*doc["jobs"], JOIN]
    doc["policy"] = {"strategy": strategy}
    if candidates is not None:
        doc["policy"]["options"] = {"auto": {"candidates": candidates}}
    return doc


def test_a_run_mixes_strategies_and_journals_each_choice_as_computed(tmp_path: Path) -> None:
    doc = mixed_scenario("auto")
    result = simulate(tmp_path, "run", **doc)
    assert result.ok and result.summary["evictions"] > 0
    chosen = {e["job"]: e for e in events(tmp_path / "run", "strategy_chosen")}
    assert sorted(chosen) == ["j000", "j001", "j002", "j003"]
    assert len({e["strategy"] for e in chosen.values()}) > 1  # one run, several strategies
    auto = AutoStrategy.from_scenario({"candidates": None}, parse_scenario({"name": "x", **doc}))
    plans = {e["job"]: e for e in events(tmp_path / "run", "job_submitted")}
    assert set(plans) == set(chosen)
    for job, event in chosen.items():
        assert event["strategy"] == min(event["predicted_s"], key=event["predicted_s"].get)
        dag = json.loads((tmp_path / "run" / "dags" / f"{job}.json").read_text())
        assert dag["strategy"] == event["strategy"]
    # the join's plan, predicted again from its plan and the scenario: the journaled figures
    join = _plan_of(tmp_path / "run", "j003")
    assert chosen["j003"]["predicted_s"] == {
        p.strategy: round(p.seconds, 4) for p in predict(join, auto.setting, STRATEGIES)
    }


def _plan_of(run: Path, job: str) -> JobPlan:
    """A job's plan as the master makes it (the scenario's ``ordinal``-th job, its seed drawn
    from the scenario's: every job here is submitted once)."""
    scenario = parse_scenario(yaml.safe_load((run / "scenario.yaml").read_text()))
    ordinal = int(job[1:])
    return plan_job(scenario.jobs[ordinal], scenario.seed * 1000 + ordinal, scenario)


@pytest.mark.parametrize("only", STRATEGIES)
def test_one_candidate_runs_every_job_as_that_strategy_alone(tmp_path: Path, only: str) -> None:
    """The dispatch changes nothing: with one candidate, the journal is that strategy's own,
    event for event, but for the choices."""
    simulate(tmp_path, "auto", **mixed_scenario("auto", [only]))
    simulate(tmp_path, "alone", **mixed_scenario(only))
    auto = [e for e in events(tmp_path / "auto") if e["event"] != "strategy_chosen"]
    assert [e["strategy"] for e in events(tmp_path / "auto", "strategy_chosen")] == [only] * 4
    assert auto == events(tmp_path / "alone")


def test_plan_prints_the_choice(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = sql_scenario(tmp_path, "select o_cust, sum(o_price) as spent from orders group by o_cust")
    doc = yaml.safe_load(path.read_text())
    doc["policy"] = {"strategy": "auto"}
    doc["chaos"] = {"transient": {"lifetime": "high"}}
    path.write_text(yaml.safe_dump(doc))
    assert main(["plan", str(path)]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("  strategy auto: ")
    figures = {name: float(s) for name, s in re.findall(r"([a-z-]+) ([0-9.]+) s \(", line)}
    assert list(figures) == list(STRATEGIES)
    chosen = line.split(": ")[1].split()[0]
    assert figures[chosen] == min(figures.values())  # as printed (two decimals)


@pytest.mark.parametrize(
    ("options", "cluster", "message"),
    [
        ({"candidates": ["spark", "nope"]}, None, "policy.options.auto.candidates.1: Input should be"),
        ({"candidates": []}, None, "policy.options.auto.candidates: List should have at least 1 item"),
        (
            {"candidates": ["pado", "pado"]},
            None,
            "policy.options.auto.candidates: Value error, each strategy at most once",
        ),
        ({"bogus": 1}, None, "policy.options.auto.bogus: Extra inputs are not permitted"),
        (
            {"candidates": ["spark", "pado"]},
            {"reserved": 0, "transient": 2},
            "policy.strategy: pado needs at least one reserved and one transient node",
        ),
    ],
)
def test_bad_options_exit_2(
    tmp_path: Path,
    options: dict[str, Any],
    cluster: dict[str, int] | None,
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = sql_scenario(tmp_path, "select o_id from orders")
    doc = yaml.safe_load(path.read_text())
    doc["policy"] = {"strategy": "auto", "options": {"auto": options}}
    if cluster is not None:
        doc["cluster"] = cluster
    path.write_text(yaml.safe_dump(doc))
    field, _, expected = message.partition(": ")
    assert_validate_refuses(path, field, expected, capsys)


def test_on_one_class_of_nodes_only_spark_is_a_candidate(tmp_path: Path) -> None:
    doc = {**mixed_scenario("auto"), "cluster": {"reserved": 0, "transient": 3}}
    assert simulate(tmp_path, "run", **doc).ok
    assert {e["strategy"] for e in events(tmp_path / "run", "strategy_chosen")} == {"spark"}
    assert all(set(e["predicted_s"]) == {"spark"} for e in events(tmp_path / "run", "strategy_chosen"))


def test_its_setting_reads_the_scenario() -> None:
    doc = mixed_scenario("auto")
    setting = setting_of(parse_scenario({"name": "x", **doc}))
    assert setting.nodes == {"reserved": 1, "transient": 6}
    assert setting.slots == {"reserved": 2, "transient": 6}
    assert setting.trace_s_per_run_s == 60.0
    assert setting.lifetime.describe().startswith("high")
