"""Price over time: steps, a trace and a seeded random walk, and the cost integral."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from testbed.chaosmodels.prices import parse_price
from testbed.scenario.loading import ScenarioError
from testbed.scenario.schema import load_scenario


def test_the_integral_of_steps_by_hand() -> None:
    curve = parse_price({"steps": [[0, 0.3], ["1h", 0.9], ["90m", 0.5]]})
    assert [curve.price_at(t) for t in (0.0, 3599.0, 3600.0, 5400.0, 1e6)] == [0.3, 0.3, 0.9, 0.5, 0.5]
    # 30 min at 0.3, 30 min at 0.9, 30 min at 0.5, in price x seconds
    assert curve.integral(1800.0, 7200.0) == pytest.approx(1800 * 0.3 + 1800 * 0.9 + 1800 * 0.5)
    assert curve.integral(4000.0, 4100.0) == pytest.approx(100 * 0.9)
    assert curve.integral(10.0, 10.0) == 0.0


def test_a_price_trace(tmp_path: Path) -> None:
    trace = tmp_path / "prices.csv"
    trace.write_text("time,price\n0,0.25\n# the spike\n2h,1.5\n3h,0.25\n")
    curve = parse_price({"trace": str(trace)})
    assert curve.times == [0.0, 7200.0, 10800.0] and curve.prices == [0.25, 1.5, 0.25]
    assert curve.integral(0.0, 4 * 3600.0) / 3600 == pytest.approx(0.25 * 3 + 1.5)


def test_the_walk_is_seeded_clipped_and_stepped() -> None:
    walk = {"walk": {"start": 0.3, "every": "1h", "sigma": 0.5, "floor": 0.1, "cap": 0.6}}
    one = parse_price(walk, seed=3)
    prices = [one.price_at(k * 3600.0 + 1) for k in range(200)]
    assert prices == [parse_price(walk, seed=3).price_at(k * 3600.0 + 1) for k in range(200)]
    assert prices != [parse_price(walk, seed=4).price_at(k * 3600.0 + 1) for k in range(200)]
    assert prices[0] == 0.3 and min(prices) == 0.1 and max(prices) == 0.6  # sigma 0.5 hits both bounds
    assert len(set(prices)) > 50
    # the integral of a step function: the sum of the hourly prices
    assert one.integral(0.0, 200 * 3600.0) / 3600 == pytest.approx(math.fsum(prices))


@pytest.mark.parametrize(
    ("price", "message"),
    [
        ("cheap", "cluster.transient.price: .*expected one of steps, trace or walk"),
        ({"steps": [[60, 0.3]]}, "steps: the first step must start at 0"),
        ({"steps": [[0, 0.3], ["2h", 0.5], ["1h", 0.4]]}, "steps: step times must increase"),
        ({"steps": [[0, -1]]}, "steps 0 price: expected a price per hour >= 0"),
        ({"bid": 0.3}, "unknown price model 'bid'"),
        (
            {"walk": {"start": 0.3, "every": "1h", "sigma": 1e6, "floor": 0, "cap": 1}},
            "walk sigma: must be at most 10",
        ),
        ({"walk": {"start": 0.3}}, "walk: expected start, every, sigma, floor, cap"),
        (
            {"walk": {"start": 0.9, "every": "1h", "sigma": 0.1, "floor": 0.1, "cap": 0.5}},
            "floor <= start <= cap",
        ),
    ],
)
def test_a_bad_price_is_one_line_naming_file_and_field(tmp_path: Path, price: object, message: str) -> None:
    import yaml

    path = tmp_path / "scenario.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "p",
                "jobs": [{"workload": "sleep"}],
                "cluster": {"transient": {"count": 1, "price": price}},
            }
        )
    )
    with pytest.raises(ScenarioError, match=message) as error:
        load_scenario(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_a_relative_price_trace_is_anchored_at_the_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "prices.csv").write_text("0,0.3\n")
    path = tmp_path / "scenario.yaml"
    path.write_text(
        "name: p\njobs: [{workload: sleep}]\ncluster: {transient: {count: 1, price: {trace: prices.csv}}}\n"
    )
    assert load_scenario(path).cluster.transient.price == {"trace": str(tmp_path.resolve() / "prices.csv")}


def test_chaos_plan_prints_the_moving_price() -> None:
    from master.chaos.plan import format_plan
    from testbed.scenario.schema import parse_scenario

    case = parse_scenario(
        {
            "name": "p",
            "jobs": [{"workload": "sleep"}],
            "cluster": {"transient": {"count": 1, "price": {"steps": [[0, 0.3], ["2h", 0.9]]}}},
        }
    )
    assert "  price steps: 2 steps, 0.3 to 0.9/h" in format_plan([], case)
