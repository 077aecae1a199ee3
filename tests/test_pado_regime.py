"""benchmarks/pado_regime.py on hand-built sweep folders: a cell's job length is Spark's
no-eviction JCT at its reserved slots times its time_scale over the lifetime model's mean, its
share the reserved slots over all, and Pado's ratio the geometric mean over the seeds, paired;
unfinished runs are left out."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from pado_regime import mean_lifetime_s, read_grid, table


def run(folder: Path, strategy: str, seed: int, jct: float | None, **scenario: object) -> None:
    name = f"{strategy}-{seed}-{'-'.join(f'{k}{v}' for k, v in sorted(scenario.items()))}"
    run_dir = folder / name
    run_dir.mkdir(parents=True)
    slots = scenario.get("slots", 4)
    resolved = {
        "seed": seed,
        "time_scale": scenario.get("time_scale", 1.0),
        "policy": {"strategy": strategy},
        "cluster": {"reserved": {"count": 5, "slots": slots}, "transient": {"count": 40, "slots": 4}},
        "chaos": {"transient": {"lifetime": scenario.get("lifetime", "high")}},
    }
    (run_dir / "scenario.yaml").write_text(yaml.safe_dump(resolved))
    summary = {"mean_jct_s": jct, "failed": 0 if jct is not None else 1}
    (run_dir / "summary.json").write_text(json.dumps(summary))


def test_the_high_rate_mean_is_weibull_0_7_at_15_minutes() -> None:
    assert mean_lifetime_s("high") == pytest.approx(900 * math.gamma(1 + 1 / 0.7), rel=0.005)
    assert mean_lifetime_s({"exponential": {"mean": "10m"}}) == pytest.approx(600, rel=0.005)


def test_a_cell_places_the_job_against_the_lifetimes_and_pairs_pado_by_seed(tmp_path: Path) -> None:
    run(tmp_path / "none", "spark", 1, 228.0, slots=8, lifetime="none")
    run(tmp_path / "none", "spark", 1, 114.0, slots=16, lifetime="none")
    for seed, (spark, checkpoint, pado) in enumerate([(400.0, 300.0, 100.0), (800.0, 300.0, 400.0)], 1):
        for slots in (8, 16):
            run(tmp_path / "grid", "spark", seed, spark, slots=slots, time_scale=2.0)
            run(tmp_path / "grid", "spark-checkpoint", seed, checkpoint, slots=slots, time_scale=2.0)
            run(tmp_path / "grid", "pado", seed, pado, slots=slots, time_scale=2.0)
    run(tmp_path / "grid", "pado", 3, None, slots=8, time_scale=2.0)  # failed: left out
    eight, sixteen = read_grid(tmp_path)
    assert eight.length == pytest.approx(228.0 * 2.0 / mean_lifetime_s("high"))
    assert sixteen.length == pytest.approx(eight.length / 2)
    assert (eight.share, sixteen.share) == (40 / 200, 80 / 240)
    assert eight.jct == {"spark": 600.0, "spark-checkpoint": 300.0, "pado": 250.0}
    assert eight.ratios["spark"].geo == pytest.approx(math.sqrt(0.25 * 0.5))  # type: ignore[union-attr]
    assert eight.ratios["spark-checkpoint"].geo == pytest.approx(math.sqrt(1 / 3 * 4 / 3))  # type: ignore[union-attr]
    assert eight.ratios["spark"].n == 2  # type: ignore[union-attr]
    assert "| 5 x 8 reserved slots, time_scale 2 | 0.4 | 0.200 | 600 | 300 | 250 | 0.354" in table([eight])
