"""The scenario schema's checks of the chaos section."""

from __future__ import annotations

import pytest

from testbed.scenario import Scenario, ScenarioError, parse_scenario


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
    assert scenario.chaos.transient.lifetime == {"empirical": "life.csv"}


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
