"""A sweep's statistics on hand-made run directories: bootstrap and t intervals, ratios to the
baseline, the A/A row, host noise against schedule variance, and the overlay CDFs."""

from __future__ import annotations

import csv
import json
import random
import re
from pathlib import Path

import numpy as np
import pytest

from testbed.app.stats import estimate, halves, noise_split, p95, ratio
from testbed.app.sweep.grid import Variation, grid
from testbed.app.sweep.results import write_results
from testbed.scenario.schema import load_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"

JOB_COLUMNS = ["job_id", "status", "jct_s", "queue_s"]


def fake_run(run_dir: Path, jcts: list[float]) -> None:
    run_dir.mkdir(parents=True)
    summary = {"jobs": len(jcts), "failed": 0, "mean_jct_s": float(np.mean(jcts)), "evictions": 2}
    summary.update(p95_jct_s=float(np.percentile(jcts, 95)), makespan_s=max(jcts), relaunched_ratio=0.1)
    (run_dir / "summary.json").write_text(json.dumps(summary))
    with open(run_dir / "jobs.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, JOB_COLUMNS)
        writer.writeheader()
        for i, jct in enumerate(jcts):
            writer.writerow({"job_id": f"j{i:03d}", "status": "succeeded", "jct_s": jct, "queue_s": jct / 10})


def test_the_interval_covers_the_mean_and_narrows_with_more_values() -> None:
    rng = random.Random(1)
    few = estimate([rng.gauss(10, 1) for _ in range(5)])
    many = estimate([rng.gauss(10, 1) for _ in range(200)])
    assert few and many and few.low is not None and many.low is not None
    assert few.low < few.value < few.high and many.low < 10 < many.high
    assert many.high - many.low < few.high - few.low
    assert estimate([4.0]).low is None and estimate([]) is None


def test_a_ratio_of_a_sample_to_itself_is_one_and_to_half_of_it_a_half() -> None:
    sample = [9.0, 10.0, 11.0, 10.5, 9.5]
    same = ratio(sample, sample)
    half = ratio(sample, [v / 2 for v in sample])
    assert same and half and same.value == 1.0 and same.low < 1.0 < same.high
    assert half.value == 0.5 and half.high < 1.0
    assert ratio([0.0, 0.0], sample) is None
    assert ratio(sample[:4], sample[:4]).low is None  # fewer than 5 values: no ratio interval


def test_host_noise_is_the_spread_within_a_seed_and_schedule_variance_between_seeds() -> None:
    host, schedule = noise_split({1: [10.0, 10.2], 2: [20.0, 20.2], 3: [30.0, 30.2]})
    assert host is not None and schedule is not None
    assert abs(host - np.std([10.0, 10.2], ddof=1)) < 1e-9 and abs(schedule - 10.0) < 1e-9
    assert halves([1, 2, 3, 4, 5]) == ([1, 3, 5], [2, 4])


def test_sweep_md_has_intervals_ratios_the_aa_row_and_paper_sized_overlays(tmp_path: Path) -> None:
    variations = [Variation.parse("policy.strategy=spark,pado")]
    cells = grid(variations, [1, 2, 3, 4, 5], repeats=2)
    assert [c.name for c in cells[:2]] == ["strategy-spark_seed-1", "strategy-spark_seed-1_rep-1"]
    rng = random.Random(7)
    for cell in cells:
        scale = 1.0 if dict(cell.values)["policy.strategy"] == "spark" else 0.5
        fake_run(tmp_path / cell.name, [scale * (20 + cell.seed + rng.gauss(0, 1)) for _ in range(12)])
    results = write_results(tmp_path, cells, variations)
    assert {r.status for r in results} == {"ok"}
    table = (tmp_path / "sweep.md").read_text()
    spark, pado = (line for line in table.splitlines() if line.startswith(("| spark |", "| pado |")))
    low, high = map(float, re.search(r"\| 0\.5\d* \[(0\.\d+), (0\.\d+)\] \|", pado).groups())
    assert low < 0.5 < high < 1.0
    assert re.search(r"\| 1 \[0\.\d+, 1\.\d+\] \|", spark)  # the baseline over itself
    aa = next(line for line in table.splitlines() if line.startswith("| spark: even runs / odd runs"))
    assert "| 5 / 5 |" in aa and re.search(r"\| [01]\.\d+ \[0\.\d+, 1\.\d+\] \|", aa)
    for stem in ("sweep-jct-cdf", "sweep-queue-cdf"):
        assert (tmp_path / f"{stem}.png").stat().st_size > 0
        svg = (tmp_path / f"{stem}.svg").read_text()
        assert 'width="237.6pt"' in svg  # 3.3 in, one column
    rows = list(csv.DictReader((tmp_path / "sweep.csv").open()))
    assert [r["repeat"] for r in rows[:2]] == ["0", "1"]
    assert "warning" not in table


T_975 = {1: 12.706204736174698, 2: 4.302652729911275}
"""Student's t 97.5% quantiles by degrees of freedom (a table's values)."""


def test_two_seeds_give_a_t_interval_no_ratio_interval_and_a_warning(tmp_path: Path) -> None:
    """Two runs per cell: a bootstrap of two values gave "1.26 [1.24, 1.28]"; the mean now
    has Student's t interval (1 degree of freedom), the ratio none, and sweep.md warns."""
    variations = [Variation.parse("policy.strategy=spark,pado")]
    cells = grid(variations, [1, 2])
    means = {"spark": [10.0, 12.0], "pado": [12.0, 15.0]}
    for cell in cells:
        fake_run(tmp_path / cell.name, [means[dict(cell.values)["policy.strategy"]][cell.seed - 1]] * 3)
    write_results(tmp_path, cells, variations)
    table = (tmp_path / "sweep.md").read_text()
    pado = next(line for line in table.splitlines() if line.startswith("| pado |"))
    half = T_975[1] * float(np.std([12.0, 15.0], ddof=1)) / 2**0.5
    assert f"| 13.5 [{13.5 - half:.3g}, {13.5 + half:.3g}] |" in pado
    assert "| 1.23 |" in pado  # 13.5 / 11: no interval from two runs
    assert "**warning: only 2 runs behind some numbers (fewer than 5)" in table
    three = estimate([10.0, 11.0, 12.0])
    assert three is not None and three.low == pytest.approx(11 - T_975[2] / 3**0.5)
    assert estimate([10.0, 11.0, 12.0], p95).low is None  # no percentile interval below 5


def test_a_sweep_checks_a_scenario_whose_dilation_is_auto():
    """The sweep builds each cell's policies before it runs any: YARN-ME's task models are
    scaled by the dilation, which ``auto`` leaves to be resolved (it raised RuntimeError)."""
    from testbed.app.host_settings import check_settings

    scenario = load_scenario(SCENARIOS / "yarn-me.yaml", ["policy.scheduler=yarn-me"])
    assert scenario.fidelity.dilation == "auto"
    check_settings(scenario, "yarn-me.yaml")
