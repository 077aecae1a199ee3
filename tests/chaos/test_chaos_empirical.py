"""Empirical lifetime models from CSV files: observed lifetimes or CDF points."""

from __future__ import annotations

import numpy as np
import pytest

from testbed.chaosmodels.lifetimes import parse_lifetime
from tests.support.lazy import lazy_module

stats = lazy_module("scipy.stats")


def write(tmp_path, text: str, name: str = "lifetimes.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def draw(model, n: int = 4000) -> np.ndarray:
    return model.sample(np.random.default_rng(99), n)


def piecewise_cdf(lifetimes, cdf):
    return lambda x: np.interp(x, lifetimes, cdf)


def test_cdf_points_are_interpolated(tmp_path):
    write(tmp_path, "lifetime,cdf\n60,0\n2m,0.5\n600,1.0\n")
    model = parse_lifetime({"empirical": "lifetimes.csv"}, tmp_path)
    samples = draw(model)
    assert samples.min() >= 60 and samples.max() <= 600
    assert stats.kstest(samples, piecewise_cdf([60, 120, 600], [0, 0.5, 1])).pvalue > 0.01
    # halfway between the points at 60 s (0) and 120 s (0.5) sits a quarter of the mass
    assert np.mean(samples <= 90) == pytest.approx(0.25, abs=0.02)


def test_a_first_cdf_point_above_zero_implies_zero_at_zero(tmp_path):
    path = write(tmp_path, "1m,0.2\n10m,1\n")
    samples = draw(parse_lifetime({"empirical": str(path)}))
    assert samples.min() >= 0
    assert np.mean(samples <= 60) == pytest.approx(0.2, abs=0.02)
    assert np.mean(samples <= 30) == pytest.approx(0.1, abs=0.02)


def test_a_cdf_jump_is_an_atom(tmp_path):
    write(tmp_path, "300,0\n300,0.6\n900,1\n")
    samples = draw(parse_lifetime({"empirical": "lifetimes.csv"}, tmp_path))
    assert np.mean(samples == 300) == pytest.approx(0.6, abs=0.02)


def test_observed_lifetimes_interpolate_between_order_statistics(tmp_path):
    write(tmp_path, "# observed in a trace\nlifetime\n400\n100\n\n200\n")
    model = parse_lifetime({"empirical": "lifetimes.csv"}, tmp_path)
    samples = draw(model)
    assert samples.min() >= 100 and samples.max() <= 400
    assert stats.kstest(samples, piecewise_cdf([100, 200, 400], [0, 0.5, 1])).pvalue > 0.01
    assert "3 points" in model.describe()


def test_many_observations_reproduce_their_distribution(tmp_path):
    observed = np.random.default_rng(5).exponential(600.0, 3000)
    write(tmp_path, "\n".join(f"{x:.3f}" for x in observed))
    samples = draw(parse_lifetime({"empirical": "lifetimes.csv"}, tmp_path))
    assert np.median(samples) == pytest.approx(600.0 * np.log(2), rel=0.08)


def test_a_single_observation_is_a_fixed_lifetime(tmp_path):
    write(tmp_path, "5m\n")
    assert set(draw(parse_lifetime({"empirical": "lifetimes.csv"}, tmp_path), 5)) == {300.0}


def test_a_relative_path_without_base_dir_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    write(tmp_path, "120\n")
    monkeypatch.chdir(tmp_path)
    assert draw(parse_lifetime({"empirical": "lifetimes.csv"}), 1)[0] == 120.0


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no lifetimes in the file"),
        ("lifetime,cdf\n", "no lifetimes in the file"),
        ("60\n120,1\n", "found a mix"),
        ("60,0\n120,0.5\n", "the last cdf value must be 1"),
        ("60,0\n50,1\n", "line 2: lifetimes and cdf values must both be non-decreasing"),
        ("60,0.5\n120,0.2\n180,1\n", "non-decreasing"),
        ("60,10\n120,100\n", "line 1: cdf must be a number in [0, 1] (give fractions"),
        ("60,x\n120,1\n", "cdf must be a number in [0, 1]; found 'x'"),
        ("60\nsoon\n", "line 2: expected a lifetime such as 300 or 5m; found 'soon'"),
    ],
)
def test_bad_files_have_clear_errors(tmp_path, text, message):
    write(tmp_path, text)
    with pytest.raises(ValueError) as error:
        parse_lifetime({"empirical": "lifetimes.csv"}, tmp_path)
    assert message in str(error.value)
    assert "lifetimes.csv" in str(error.value)


def test_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="cannot read the file"):
        parse_lifetime({"empirical": "absent.csv"}, tmp_path)
