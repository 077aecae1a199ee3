"""Provider presets: notices, AWS's rebalance recommendation, GCP preemptible's 24 h cap."""

from __future__ import annotations

import math

import numpy as np
import pytest

from master.chaos.plan import format_plan, plan_evictions
from testbed.chaosmodels.lifetimes import PRESETS, lifetime_for, parse_lifetime, rebalance_lead, rng_for
from testbed.journal.schema import EVENTS
from tests.support.chaos import scenario
from tests.support.driver import Driver
from tests.support.scenarios import make_scenario

PROVIDERS = {"aws-spot": 120.0, "gcp-spot": 30.0, "gcp-preemptible": 30.0, "azure-spot": 30.0}


@pytest.mark.parametrize(("name", "notice"), PROVIDERS.items())
def test_each_provider_preset_has_its_vendors_notice(name: str, notice: float) -> None:
    model = parse_lifetime(name)
    assert model.default_notice == notice
    assert (model.rebalance is not None) == (name == "aws-spot")  # type: ignore[attr-defined]


def test_the_descriptions_name_notice_rebalance_and_cap() -> None:
    assert PRESETS["aws-spot"].describe() == (
        "aws-spot = exponential(mean=18h), notice 2m, rebalance recommendation p=0.5, up to 10m ahead"
    )
    assert PRESETS["gcp-preemptible"].describe() == (
        "gcp-preemptible = exponential(mean=18h) capped at 24h, notice 30s"
    )


def test_gcp_preemptible_never_outlives_24_hours() -> None:
    draws = PRESETS["gcp-preemptible"].sample(rng_for(5, 0), 20000)
    assert draws.max() == 24 * 3600
    # Exponential(18 h) survives 24 h with probability exp(-24/18) = 0.264: that is the atom.
    assert np.mean(draws == 24 * 3600) == pytest.approx(math.exp(-24 / 18), abs=0.01)
    uncapped = PRESETS["gcp-spot"].sample(rng_for(5, 0), 20000)
    assert uncapped.max() > 24 * 3600


def test_the_rebalance_draw_is_seeded_and_leaves_lifetimes_alone() -> None:
    aws, spot = PRESETS["aws-spot"], PRESETS["spot"]
    leads = [rebalance_lead(aws, 7, 1, k) for k in range(4000)]
    assert leads == [rebalance_lead(aws, 7, 1, k) for k in range(4000)]
    sent = [lead for lead in leads if lead is not None]
    assert len(sent) / len(leads) == pytest.approx(0.5, abs=0.03)
    assert min(sent) >= 0 and max(sent) <= 600
    assert np.mean(sent) == pytest.approx(300, rel=0.05)
    assert all(rebalance_lead(PRESETS[name], 7, 1, 0) is None for name in ("gcp-spot", "spot"))
    assert [lifetime_for(aws, 7, 1, k) for k in range(50)] == [
        lifetime_for(spot, 7, 1, k) for k in range(50)
    ]


def test_the_plan_shows_rebalance_recommendations_before_the_two_minute_notice() -> None:
    case = scenario({"transient": {"lifetime": "aws-spot"}}, transient=200, seed=3)
    plan = plan_evictions(case, horizon_s=6 * 3600)
    for eviction in plan:
        assert eviction.trace_s - eviction.warn_trace_s == pytest.approx(min(120, eviction.lifetime_s))
        lead = rebalance_lead(PRESETS["aws-spot"], 3, 1, eviction.ordinal)
        if lead is None:
            assert eviction.rebalance_trace_s is None
        else:
            expected = max(eviction.launched_s, eviction.warn_trace_s - lead)
            assert eviction.rebalance_trace_s == pytest.approx(expected)
    rebalanced = sum(e.rebalance_trace_s is not None for e in plan)
    assert 0 < rebalanced < len(plan)
    text = format_plan(plan, case)
    assert "rebalance" in text.splitlines()[3]  # the table's header
    assert f"{rebalanced} preceded by a rebalance recommendation" in text


def test_a_node_a_storm_has_warned_gets_no_rebalance_recommendation() -> None:
    chaos = {"transient": {"lifetime": "aws-spot"}, "storms": [{"at": 0, "evict": {"fraction": 1.0}}]}
    plan = plan_evictions(scenario(chaos, transient=20, seed=3), horizon_s=200)
    assert [e.reason for e in plan[:20]] == ["storm"] * 20
    assert all(e.rebalance_trace_s is None for e in plan[:20])


def test_gcp_and_azure_warn_30_seconds_ahead_and_send_no_rebalance() -> None:
    for name in ("gcp-spot", "gcp-preemptible", "azure-spot"):
        plan = plan_evictions(scenario({"transient": {"lifetime": name}}, transient=50), horizon_s=12 * 3600)
        assert plan
        assert all(e.trace_s - e.warn_trace_s == pytest.approx(min(30, e.lifetime_s)) for e in plan)
        assert all(e.rebalance_trace_s is None for e in plan)
        assert "rebalance" not in format_plan(plan, None)


def test_the_core_journals_the_recommendation_and_marks_the_node() -> None:
    driver = Driver(make_scenario(chaos={"transient": {"lifetime": "aws-spot"}}))
    driver.boot()
    driver.act(driver.core.chaos.rebalance, "transient-0", at=12.5)
    assert driver.events("rebalance_recommendation") == [{"node": "transient-0"}]
    assert driver.core.nodes["transient-0"].rebalance_at == 12.5
    assert set(EVENTS["rebalance_recommendation"].__annotations__) >= {"node"}
