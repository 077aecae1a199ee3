"""testbed.settings.resolve: the host is an explicit input, the policies built once."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.scenario.schema import ScenarioError, load_scenario
from testbed.settings.resolve import resolution, resolve
from testbed.settings.run_settings import Host

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_auto_dilation_follows_the_given_host_not_this_machine() -> None:
    faithful = ["fidelity.mode=faithful", "fidelity.dilation=auto"]
    scenario = load_scenario(SCENARIOS / "quickstart.yaml", faithful)
    small, large = resolve(scenario, Host(2.0)), resolve(scenario, Host(64.0))
    assert small.dilation > large.dilation == 1.0
    assert small.host == Host(2.0)
    assert small.scenario.fidelity.factor == small.dilation


def test_the_policies_are_built_with_their_options() -> None:
    settings = resolve(load_scenario(SCENARIOS / "yarn-me.yaml"), Host(4.0))
    assert type(settings.policies.scheduler).__name__ == "YarnMeScheduler"


def test_every_policy_problem_is_named_in_one_pass() -> None:
    scenario = load_scenario(
        SCENARIOS / "quickstart.yaml",
        ["policy.options.fifo={nope: 1}", "policy.strategy=pado", "policy.options.pado={nope: 2}"],
    )
    with pytest.raises(ScenarioError) as raised:
        resolve(scenario, Host(4.0), "q.yaml")
    assert len(raised.value.problems) == 2
    assert all(problem.startswith("q.yaml: policy.options.") for problem in raised.value.problems)


def test_a_bad_speculation_option_is_found_in_resolve_with_the_others() -> None:
    late = ["policy.speculation=late", "policy.options.speculation={late: {cap: 0}}"]
    scenario = load_scenario(SCENARIOS / "quickstart.yaml", [*late, "policy.options.fifo={nope: 1}"])
    with pytest.raises(ScenarioError) as raised:
        resolve(scenario, Host(4.0), "q.yaml")
    assert len(raised.value.problems) == 2
    assert any("policy.options.speculation.late.cap" in problem for problem in raised.value.problems)


def test_the_speculator_is_built_with_the_policies() -> None:
    scenario = load_scenario(SCENARIOS / "quickstart.yaml", ["policy.speculation=late"])
    assert type(resolve(scenario, Host(4.0)).policies.speculator).__name__ == "LateSpeculator"


def test_a_resolution_with_problems_still_gives_the_scenario_resolved_for_the_host() -> None:
    broken = ["fidelity.mode=faithful", "fidelity.dilation=auto", "policy.options.fifo={nope: 1}"]
    found = resolution(load_scenario(SCENARIOS / "quickstart.yaml", broken), Host(2.0), "q.yaml")
    assert found.scenario.fidelity.factor == resolve(
        load_scenario(SCENARIOS / "quickstart.yaml", broken[:2]), Host(2.0)
    ).dilation > 1.0
    assert [p.split(":")[0] for p in found.problems] == ["q.yaml"]
    with pytest.raises(ScenarioError) as raised:
        found.settings()
    assert raised.value.problems == list(found.problems)


def test_the_yarn_me_scheduler_is_built_under_the_dilation_it_runs_at() -> None:
    """The simulator's settings (dilation 1) and a dilated run's: the disk budget is divided
    by the dilation when the scheduler is built, so each needs its own."""
    from master.sim.run import sim_settings

    dilated = load_scenario(SCENARIOS / "yarn-me.yaml", ["fidelity.dilation=4"])
    real, simulated = resolve(dilated, Host(4.0)), sim_settings(dilated)
    assert (real.dilation, simulated.dilation) == (4.0, 1.0)
    budget = simulated.policies.scheduler.elastic_disk_mb_s
    assert real.policies.scheduler.elastic_disk_mb_s == budget / 4


def test_the_profiles_are_read_once_and_a_malformed_one_is_named_with_the_other_problems(
    tmp_path: Path,
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text("{}")
    fine = resolve(load_scenario(SCENARIOS / "yarn-me.yaml"), Host(4.0))
    assert {role for _, role in fine.profiles} == {"map", "reduce"}
    overrides = [f"profiles=[{broken}]", "policy.options.fifo={nope: 1}"]
    with pytest.raises(ScenarioError) as raised:
        resolve(load_scenario(SCENARIOS / "quickstart.yaml", overrides), Host(4.0), "q.yaml")
    assert [p.split(": ")[1] for p in raised.value.problems] == ["policy.options.fifo.nope", "profiles"]
