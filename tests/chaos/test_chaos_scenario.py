"""The scenario schema's checks of the chaos section."""

from __future__ import annotations

import pytest

from testbed.chaosmodels.lifetimes import parse_lifetime
from testbed.scenario.schema import Scenario, ScenarioError, load_scenario, parse_scenario, to_yaml


def chaos_scenario(chaos: dict) -> dict:
    return {"name": "chaos-test", "jobs": [{"workload": "sleep"}], "chaos": chaos}


@pytest.mark.parametrize(
    ("lifetime", "message"),
    [
        ("hgh", "chaos.transient.lifetime: unknown lifetime model 'hgh'"),
        ({"weibull": {"shape": 0.7}}, "chaos.transient.lifetime: weibull: missing parameter"),
        ({"empirical": "absent.csv"}, "chaos.transient.lifetime: empirical absent.csv: cannot"),
        (7, "chaos.transient.lifetime: a lifetime model is a preset name"),
    ],
)
def test_a_bad_lifetime_is_a_scenario_error_naming_the_field(lifetime, message):
    with pytest.raises(ScenarioError) as error:
        parse_scenario(chaos_scenario({"transient": {"lifetime": lifetime}}))
    assert len(error.value.problems) == 1
    assert message in error.value.problems[0]


def test_a_good_lifetime_is_kept_as_written():
    value = {"weibull": {"shape": 0.7, "scale": "20m"}}
    scenario = parse_scenario(chaos_scenario({"transient": {"lifetime": value}}))
    assert scenario.chaos.transient.lifetime == value


def test_empirical_paths_resolve_against_the_context_base_dir(tmp_path):
    (tmp_path / "life.csv").write_text("60\n120\n")
    data = chaos_scenario({"transient": {"lifetime": {"empirical": "life.csv"}}})
    with pytest.raises(ScenarioError):
        parse_scenario(data)
    scenario = Scenario.model_validate(data, context={"base_dir": tmp_path})
    assert scenario.chaos.transient.lifetime == {"empirical": str(tmp_path.resolve() / "life.csv")}


@pytest.mark.parametrize(
    ("storm", "message"),
    [
        ({"at": 60, "times": 3}, "times > 1 needs every"),
        ({"every": 60, "times": 3}, "a storm needs at"),
        ({"from": 0, "to": 60, "rate": 1, "every": 5}, "every repeats a scheduled storm"),
    ],
)
def test_storm_repetition_needs_at_and_every(storm, message):
    with pytest.raises(ScenarioError) as error:
        parse_scenario(chaos_scenario({"storms": [storm]}))
    assert message in str(error.value)


def test_a_scenario_file_reads_its_empirical_lifetimes_next_to_it(tmp_path, monkeypatch):
    """Wherever testbed runs from: the plan, the run (controller, the run's scenario.yaml) and
    --resume all read the file next to the scenario."""
    folder = tmp_path / "scenarios"
    folder.mkdir()
    (folder / "life.csv").write_text("60\n120\n")
    scenario_path = folder / "s.yaml"
    scenario_path.write_text(
        "name: s\njobs: [{workload: sleep}]\nchaos: {transient: {lifetime: {empirical: life.csv}}}\n"
    )
    monkeypatch.chdir(tmp_path)
    scenario = load_scenario(scenario_path)
    resolved = scenario.chaos.transient.lifetime
    assert resolved == {"empirical": str(folder / "life.csv")}
    assert parse_lifetime(resolved).describe() == parse_lifetime({"empirical": "life.csv"}, folder).describe()
    rewritten = tmp_path / "run" / "scenario.yaml"
    rewritten.parent.mkdir()
    rewritten.write_text(to_yaml(scenario))
    assert load_scenario(rewritten).chaos.transient.lifetime == resolved
    overridden = load_scenario(scenario_path, ["chaos.transient.lifetime={empirical: life.csv}"])
    assert overridden.chaos.transient.lifetime == resolved
