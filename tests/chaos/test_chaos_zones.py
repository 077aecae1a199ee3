"""Zones: which zone each node is in, storms and live evictions by zone, the plan per zone."""

from __future__ import annotations

import numpy as np
import pytest

from master.chaos.plan import format_plan, plan_evictions
from master.chaos.select import select_victims
from master.core.commands import Evicted
from master.core.events import EvictRequest
from testbed.api.policy import NodeView
from testbed.chaosmodels.lifetimes import lifetime_for, parse_lifetime
from testbed.chaosmodels.zones import zone_of, zone_pattern
from testbed.scenario.chaos import EvictSpec
from testbed.scenario.loading import ScenarioError
from testbed.scenario.schema import parse_scenario
from tests.support.driver import Driver

TWO_ZONES = {"a": 3, "b": 2}


def zoned(chaos: dict, zones: dict, transient: int = 5, seed: int = 1):
    return parse_scenario(
        {
            "name": "zones",
            "seed": seed,
            "cluster": {"transient": {"count": transient, "zones": zones}, "reserved": 1},
            "jobs": [{"workload": "sleep"}],
            "chaos": chaos,
        }
    )


def test_counts_fill_the_zones_in_order_and_later_ordinals_wrap() -> None:
    assert zone_pattern(TWO_ZONES, 5) == ("a", "a", "a", "b", "b")
    assert [zone_of(TWO_ZONES, 5, k) for k in (4, 5, 8, 9)] == ["b", "a", "b", "b"]
    assert zone_of({}, 5, 0) is None


def test_fractions_are_apportioned_by_largest_remainder() -> None:
    # 7 nodes: shares 2.33, 2.33, 2.33; one extra node, ties to the zone listed first.
    assert zone_pattern({"x": 1 / 3, "y": 1 / 3, "z": 1 / 3}, 7) == ("x", "x", "x", "y", "y", "z", "z")
    assert zone_pattern({"x": 0.75, "y": 0.25}, 4) == ("x", "x", "x", "y")
    assert len(zone_pattern({"x": 0.5, "y": 0.5}, 0)) == 100  # a class that starts empty


@pytest.mark.parametrize(
    ("zones", "message"),
    [
        ({"a": 3, "b": 1}, "node counts must be >= 0 and sum to the class's count (5); found 4"),
        ({"a": 0.5, "b": 0.4}, "fractions in [0, 1] summing to 1"),
        ({"": 5}, "a zone name must not be empty"),
    ],
)
def test_bad_zones_are_a_scenario_error(zones: dict, message: str) -> None:
    with pytest.raises(ScenarioError, match=r"cluster\.transient") as error:
        zoned({}, zones)
    assert message in str(error.value)


def test_a_storm_naming_an_unknown_zone_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError, match=r"chaos.storms.0.evict.zone: unknown zone 'c'; zones: a, b"):
        zoned({"storms": [{"at": 10, "evict": {"fraction": 1.0, "zone": "c"}}]}, TWO_ZONES)


def test_selection_keeps_to_the_zone() -> None:
    nodes = [NodeView(f"transient-{k}", "transient", 1, 1, zone=zone_of(TWO_ZONES, 5, k)) for k in range(5)]
    victims = select_victims(nodes, EvictSpec(fraction=1.0, zone="b"), np.random.default_rng(0))
    assert sorted(victims) == ["transient-3", "transient-4"]
    assert select_victims(nodes, EvictSpec(count=9, zone="c"), np.random.default_rng(0)) == []


def test_a_zone_wide_revocation_in_the_plan() -> None:
    chaos = {
        "transient": {"lifetime": "azure-spot", "provisioning_delay": "1m"},
        "storms": [{"at": "10m", "evict": {"fraction": 1.0, "zone": "b"}}],
    }
    case = zoned(chaos, TWO_ZONES)
    plan = plan_evictions(case, horizon_s=15 * 60)
    storm = [e for e in plan if e.reason == "storm"]
    assert [(e.node_id, e.zone, e.warn_trace_s, e.trace_s) for e in storm] == [
        ("transient-3", "b", 600.0, 630.0),
        ("transient-4", "b", 600.0, 630.0),
    ]
    text = format_plan(plan, case)
    assert "transient (5, a 3, b 2): lifetime azure-spot" in text
    assert "storm 0: evict all of the transient nodes of zone b, random, at 10m" in text
    assert text.splitlines()[-1].startswith(f"{len(plan)} evictions") and "per zone: " in text
    assert " zone " in text.splitlines()[4]


def test_a_live_eviction_by_zone_takes_only_that_zones_nodes() -> None:
    driver = Driver(zoned({}, TWO_ZONES))
    driver.boot()
    chaos = driver.core.chaos
    transients = [n for n in chaos.candidates() if n.node_class == "transient"]
    assert [n.zone for n in transients] == ["a", "a", "a", "b", "b"]
    _, victims = chaos.rules.choose(EvictSpec(fraction=1.0, zone="a"), np.random.default_rng(1))
    assert sorted(victims) == ["transient-0", "transient-1", "transient-2"]
    (answer,) = [
        c for c in driver.do(EvictRequest(EvictSpec(fraction=1.0, zone="b"))) if isinstance(c, Evicted)
    ]
    assert sorted(answer.nodes) == ["transient-3", "transient-4"]


def test_a_zone_with_a_lifetime_model_of_its_own() -> None:
    """Zone b's nodes live by `high`; zone a's (the class's `none`) are never evicted: only
    ordinals of zone b (3, 4, and replacements k with k mod 5 in {3, 4}) are in the plan."""
    case = zoned({"transient": {"zones": {"b": {"lifetime": "high"}}}}, TWO_ZONES)
    plan = plan_evictions(case, horizon_s=6 * 3600)
    assert plan and {e.zone for e in plan} == {"b"} and {e.ordinal % 5 for e in plan} == {3, 4}
    high = parse_lifetime("high")
    assert [e.lifetime_s for e in plan] == [lifetime_for(high, 1, 1, e.ordinal) for e in plan]
    assert "  zone b: lifetime high = weibull(shape=0.7, scale=15m)" in format_plan(plan, case)


def test_a_zone_model_for_an_unknown_zone_is_a_scenario_error() -> None:
    with pytest.raises(
        ScenarioError, match=r"chaos.transient.zones: unknown zone 'c'; zones of transient: a, b"
    ):
        zoned({"transient": {"zones": {"c": {"lifetime": "high"}}}}, TWO_ZONES)
    with pytest.raises(ScenarioError, match=r"chaos.transient.zones.b.lifetime"):
        zoned({"transient": {"zones": {"b": {"lifetime": "hgh"}}}}, TWO_ZONES)
