"""Lifetime models: parsing, statistical sampling, presets and per-node reproducibility."""

from __future__ import annotations

import math

import numpy as np
import pytest

from testbed.chaosmodels.lifetime_model import format_seconds
from testbed.chaosmodels.lifetimes import (
    PRESETS,
    Exponential,
    Fixed,
    LogNormal,
    NoLifetime,
    Uniform,
    Weibull,
    effective_notice,
    lifetime_for,
    parse_lifetime,
)
from testbed.scenario.chaos import ClassChaosSpec
from tests.support.lazy import lazy_module

stats = lazy_module("scipy.stats")

N = 4000
MINUTE = 60.0


def draw(model, n: int = N, seed: int = 20240601) -> np.ndarray:
    return model.sample(np.random.default_rng(seed), n)


# ------------------------------------------------------------------ parsing


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("none", NoLifetime()),
        ({"exponential": {"mean": "10m"}}, Exponential(600.0)),
        ({"weibull": {"shape": 0.7, "scale": "20m"}}, Weibull(0.7, 1200.0)),
        ({"lognormal": {"mu": 6.4, "sigma": 1}}, LogNormal(6.4, 1.0)),
        ({"uniform": {"a": "1m", "b": 600}}, Uniform(60.0, 600.0)),
        ({"fixed": "5m"}, Fixed(300.0)),
        ({"fixed": 90}, Fixed(90.0)),
    ],
)
def test_parse_each_family(value, expected):
    assert parse_lifetime(value) == expected


@pytest.mark.parametrize("name", ["low", "medium", "high", "spot"])
def test_parse_presets(name):
    assert parse_lifetime(name) is PRESETS[name]
    assert name in parse_lifetime(name).describe()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("hgh", "unknown lifetime model 'hgh'"),
        (5, "a lifetime model is a preset name"),
        ({"weibull": {"shape": 1}, "fixed": 3}, "a mapping with one family"),
        ({"gamma": {"k": 2}}, "gamma: unknown parameter 'k'; expected shape, scale"),
        ({"pareto": {"a": 2}}, "unknown lifetime family 'pareto'"),
        ({"weibull": {"shape": 0.7}}, "weibull: missing parameter 'scale'"),
        ({"weibull": {"shape": 0.7, "scale": 1, "loc": 0}}, "unknown parameter 'loc'"),
        ({"weibull": {"shape": 0, "scale": 60}}, "weibull shape: must be greater than 0"),
        ({"weibull": {"shape": "x", "scale": 60}}, "weibull shape: expected a number"),
        ({"weibull": "0.7"}, "weibull: expected a mapping of shape, scale"),
        ({"exponential": {"mean": "ten minutes"}}, "exponential mean: expected a duration"),
        ({"exponential": {"mean": 0}}, "exponential mean: must be longer than 0s"),
        ({"lognormal": {"mu": 6, "sigma": -1}}, "lognormal sigma: must be greater than 0"),
        ({"uniform": {"a": "5m", "b": "1m"}}, "uniform: b (1m) must exceed a (5m)"),
        ({"fixed": -3}, "fixed: expected a duration"),
        ({"empirical": 3}, "empirical: expected the path of a CSV file"),
    ],
)
def test_bad_models_have_clear_errors(value, message):
    with pytest.raises(ValueError) as error:
        parse_lifetime(value)
    assert message in str(error.value)


def test_describe_names_the_parameters():
    assert Weibull(0.7, 1200.0).describe() == "weibull(shape=0.7, scale=20m)"
    assert LogNormal(math.log(600), 1.0).describe().endswith("median 10m)")
    assert PRESETS["spot"].describe() == "spot = exponential(mean=18h), notice 2m"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0.25, "0.25s"),
        (45, "45s"),
        (59.97, "1m"),
        (90, "1m30s"),
        (7200, "2h"),
        (3661, "1h1m1s"),
        (math.inf, "never"),
    ],
)
def test_format_seconds(seconds, text):
    assert format_seconds(seconds) == text


# ------------------------------------------------------------------ sampling


@pytest.mark.parametrize(
    ("model", "reference", "parameters"),  # scipy.stats' distribution, made in the test
    [
        (Exponential(600.0), "expon", {"scale": 600.0}),
        (Weibull(0.7, 1200.0), "weibull_min", {"c": 0.7, "scale": 1200.0}),
        (Weibull(2.5, 300.0), "weibull_min", {"c": 2.5, "scale": 300.0}),
        (LogNormal(6.4, 0.8), "lognorm", {"s": 0.8, "scale": math.exp(6.4)}),
        (Uniform(60.0, 600.0), "uniform", {"loc": 60.0, "scale": 540.0}),
    ],
)
def test_sampling_matches_the_analytical_cdf(model, reference, parameters):
    cdf = getattr(stats, reference)(**parameters).cdf
    assert stats.kstest(draw(model), cdf).pvalue > 0.01


def test_the_ks_check_rejects_a_wrong_distribution():
    """The check above can fail: Weibull(0.7) is not the exponential of the same mean."""
    weibull = Weibull(0.7, 1200.0)
    same_mean = stats.expon(scale=1200.0 * math.gamma(1 + 1 / 0.7))
    assert stats.kstest(draw(weibull), same_mean.cdf).pvalue < 1e-6


def test_fixed_and_none():
    assert set(draw(Fixed(300.0), 10)) == {300.0}
    assert np.isinf(draw(NoLifetime(), 3)).all()


# ------------------------------------------------------------------ presets


def test_presets_are_ordered_high_sooner_than_medium_sooner_than_low():
    quantiles = [0.1, 0.25, 0.5, 0.75, 0.9]
    names = ("low", "medium", "high", "spot")
    by_rate = {name: np.quantile(draw(PRESETS[name], 20000), quantiles) for name in names}
    assert (by_rate["high"] < by_rate["medium"]).all()
    assert (by_rate["medium"] < by_rate["low"]).all()
    assert (by_rate["low"] < by_rate["spot"]).all()


def test_pado_presets_meet_their_documented_anchors():
    high, medium, low = (draw(PRESETS[name], 20000) for name in ("high", "medium", "low"))
    # "most transient containers are evicted within half an hour" (high): 80 %
    assert np.mean(high <= 30 * MINUTE) == pytest.approx(0.80, abs=0.015)
    # "evictions can occur only a few minutes after ... allocated": a quarter within 3 min
    assert np.mean(high <= 3 * MINUTE) == pytest.approx(0.27, abs=0.015)
    assert np.median(medium) == pytest.approx(30 * MINUTE, rel=0.04)
    assert np.median(low) == pytest.approx(60 * MINUTE, rel=0.04)


def test_spot_is_hours_scale_with_a_two_minute_notice():
    spot = PRESETS["spot"]
    assert np.mean(draw(spot, 20000)) == pytest.approx(18 * 3600, rel=0.03)
    assert spot.default_notice == 120.0
    assert PRESETS["high"].default_notice == 0.0


def test_a_scenario_notice_overrides_the_preset_one_even_when_zero():
    implicit = ClassChaosSpec(lifetime="spot")
    explicit = ClassChaosSpec(lifetime="spot", notice=0)
    spot = PRESETS["spot"]
    assert effective_notice(implicit.notice, "notice" in implicit.model_fields_set, spot) == 120
    assert effective_notice(explicit.notice, "notice" in explicit.model_fields_set, spot) == 0
    assert effective_notice(30.0, True, PRESETS["high"]) == 30.0


# ------------------------------------------------------------------ per node


def test_lifetime_by_ordinal_is_independent_of_launch_order_and_other_draws():
    model = PRESETS["high"]
    forward = [lifetime_for(model, 7, 1, i) for i in range(20)]
    noise = np.random.default_rng(7)
    backward = {}
    for i in reversed(range(20)):
        noise.random(5)  # unrelated draws between launches change nothing
        backward[i] = lifetime_for(model, 7, 1, i)
    assert forward == [backward[i] for i in range(20)]
    assert len(set(forward)) == 20


def test_lifetime_depends_on_seed_class_and_ordinal():
    model = Exponential(600.0)
    base = lifetime_for(model, 1, 1, 0)
    assert lifetime_for(model, 2, 1, 0) != base
    assert lifetime_for(model, 1, 0, 0) != base
    assert lifetime_for(model, 1, 1, 1) != base
    assert lifetime_for(model, -1, 1, 0) != base


def test_per_node_lifetimes_follow_the_model():
    lifetimes = [lifetime_for(Exponential(600.0), 3, 1, i) for i in range(1500)]
    assert stats.kstest(lifetimes, stats.expon(scale=600.0).cdf).pvalue > 0.01


def test_no_lifetime_gives_none_and_bad_nodes_are_refused():
    assert lifetime_for(NoLifetime(), 1, 1, 0) is None
    with pytest.raises(ValueError, match="no node"):
        lifetime_for(Fixed(1.0), 1, -1, 0)
    with pytest.raises(ValueError, match="no node"):
        lifetime_for(Fixed(1.0), 1, 1, -1)
