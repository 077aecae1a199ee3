"""testbed compare: values and ratios against numbers computed from the fixtures' data."""

from __future__ import annotations

import csv
import io
import json
import statistics
from pathlib import Path

import pytest
import yaml

from testbed.app.report.compare import compare_runs
from tests.support.recorded_run import RecordedRun, crash, write_run


def mean_jct(run: RecordedRun) -> float:
    return statistics.mean(j["jct_s"] for j in run.jobs)


def cost(run: RecordedRun) -> float:
    return sum(
        ((n["ended_s"] if n["ended_s"] is not None else run.end) - n["launched_s"])
        / 3600
        * n["price_per_hour"]
        for n in run.nodes
    )


def test_ratios_are_to_the_first_run(spark_run: RecordedRun, pado_run: RecordedRun) -> None:
    comparison = compare_runs([spark_run.path, pado_run.path])
    assert [run.label for run in comparison.runs] == ["spark", "pado"]
    expected = mean_jct(pado_run) / mean_jct(spark_run)
    assert comparison.ratio("mean JCT (s, emulated)", 1) == pytest.approx(expected)
    assert comparison.ratio("cost", 1) == pytest.approx(cost(pado_run) / cost(spark_run))
    assert comparison.ratio("evictions", 1) == 1.0
    assert f"pado / spark mean JCT (s, emulated) {expected:.2f}x" in comparison.ratio_lines()


def test_markdown_table(spark_run: RecordedRun, pado_run: RecordedRun) -> None:
    text = compare_runs([spark_run.path, pado_run.path]).to_markdown()
    assert "| metric | spark | pado | pado / spark | A/A: spark halves |" in text
    spark, pado = mean_jct(spark_run), mean_jct(pado_run)
    row = next(line for line in text.splitlines() if line.startswith("| mean JCT (s, emulated) |"))
    assert row.startswith(f"| mean JCT (s, emulated) | {spark:.4g} [")
    assert f"| {pado / spark:.2f}x |" in row  # 3 jobs: no ratio interval
    assert "| spark (baseline) | fifo / spark / static |" in text
    spill = sum(t["spill_bytes"] for t in spark_run.tasks)
    assert f"| spill bytes | {spill} | {spill} | 1.00x |  |" in text


T_975_DF2 = 4.302652729911275
"""Student's t 97.5% quantile with 2 degrees of freedom (a table's value)."""


def test_statistics_over_three_jobs_have_t_intervals_and_ratios_none(
    spark_run: RecordedRun, pado_run: RecordedRun
) -> None:
    """3 jobs are too few for a bootstrap (it gave intervals far too narrow): a mean gets
    Student's t interval, a percentile and a ratio none, and the table says so."""
    comparison = compare_runs([spark_run.path, pado_run.path])
    jcts = [j["jct_s"] for j in spark_run.jobs]
    half = T_975_DF2 * statistics.stdev(jcts) / len(jcts) ** 0.5
    interval = comparison.interval("mean JCT (s, emulated)", 0)
    assert interval is not None and interval.samples == 3
    assert interval.low == pytest.approx(statistics.mean(jcts) - half)
    assert interval.high == pytest.approx(statistics.mean(jcts) + half)
    p95 = comparison.interval("p95 JCT (s, emulated)", 0)
    assert p95 is not None and p95.low is None and p95.high is None
    ratio = comparison.ratio_interval("mean JCT (s, emulated)", 1)
    assert ratio is not None and ratio.value == pytest.approx(mean_jct(pado_run) / mean_jct(spark_run))
    assert ratio.low is None and ratio.high is None
    assert comparison.interval("evictions", 0) is None  # one number per run: no interval
    text = comparison.to_markdown()
    assert "**warning: only 1, 3 jobs behind some numbers (fewer than 5)" in text
    row = next(line for line in text.splitlines() if line.startswith("| mean JCT (s, emulated) |"))
    assert f"{statistics.mean(jcts) - half:.3g}, {statistics.mean(jcts) + half:.3g}]" in row


def test_the_aa_noise_floor_pairs_jobs_of_the_same_workload(spark_run: RecordedRun) -> None:
    """The fixture's jobs are a wordcount then two sorts: alternate halves set the wordcount
    and a sort against the other sort; pairs by workload set sort against sort, and leave
    out the lone wordcount."""
    assert [j["workload"] for j in spark_run.jobs] == ["wordcount", "sort", "sort"]
    jcts = [j["jct_s"] for j in spark_run.jobs]
    aa = compare_runs([spark_run.path]).aa_interval("mean JCT (s, emulated)")
    assert aa is not None and aa.samples == 1
    assert aa.value == pytest.approx(jcts[2] / jcts[1])


def test_statistics_over_many_jobs_have_bootstrap_intervals(tmp_path: Path) -> None:
    """From 5 jobs on, the intervals are bootstraps (within the sample's range) and the
    ratios have one; no warning."""
    from testbed.app.stats import estimate, ratio

    jcts = [10.0, 12.0, 11.0, 15.0, 9.0, 13.0]
    interval = estimate(jcts)
    assert interval is not None and interval.low is not None and interval.high is not None
    assert min(jcts) <= interval.low < statistics.mean(jcts) < interval.high <= max(jcts)
    halved = ratio(jcts, [v / 2 for v in jcts])
    assert halved is not None and halved.low is not None and halved.high is not None
    assert halved.low < 0.5 < halved.high < 1.0 and not halved.few


def test_overlay_cdfs_are_one_paper_column_wide(
    spark_run: RecordedRun, pado_run: RecordedRun, tmp_path: Path
) -> None:
    paths = compare_runs([spark_run.path, pado_run.path]).plot(tmp_path / "cmp")
    assert sorted(p.name for p in paths) == sorted(
        f"cmp-{kind}-cdf.{ext}" for kind in ("jct", "queue") for ext in ("png", "svg")
    )
    assert 'width="237.6pt"' in (tmp_path / "cmp-jct-cdf.svg").read_text()  # 3.3 in


def test_csv_table(spark_run: RecordedRun, pado_run: RecordedRun) -> None:
    comparison = compare_runs([spark_run.path, pado_run.path])
    rows = {r["metric"]: r for r in csv.DictReader(io.StringIO(comparison.to_csv()))}
    assert float(rows["mean JCT (s, emulated)"]["spark"]) == pytest.approx(mean_jct(spark_run))
    assert float(rows["mean JCT (s, emulated)"]["pado"]) == pytest.approx(mean_jct(pado_run))
    assert float(rows["mean JCT (s, emulated)"]["pado / spark"]) == pytest.approx(
        mean_jct(pado_run) / mean_jct(spark_run)
    )
    jcts = [j["jct_s"] for j in spark_run.jobs]
    assert float(rows["p95 JCT (s, emulated)"]["spark"]) == pytest.approx(
        statistics.quantiles(jcts, n=100, method="inclusive")[94]
    )
    assert float(rows["cost"]["spark"]) == pytest.approx(cost(spark_run))
    assert float(rows["mean_short_queue_s"]["pado"]) == pado_run.summary["mean_short_queue_s"]


def test_only_shared_summary_keys_are_compared(spark_run: RecordedRun, pado_run: RecordedRun) -> None:
    summary = dict(pado_run.summary, pushed_bytes=123)
    (pado_run.path / "summary.json").write_text(json.dumps(summary))
    metrics = compare_runs([spark_run.path, pado_run.path]).metrics
    assert "pushed_bytes" not in metrics
    assert {"mean_short_queue_s", "max_short_queue_s"} <= set(metrics)


def test_zero_baseline(spark_run: RecordedRun, pado_run: RecordedRun) -> None:
    header = (spark_run.path / "evictions.csv").read_text().splitlines()[0]
    (spark_run.path / "evictions.csv").write_text(header + "\n")
    comparison = compare_runs([spark_run.path, pado_run.path, spark_run.path])
    assert comparison.ratio("evictions", 1) is None
    assert comparison.ratio("evictions", 2) == 1.0
    assert "| evictions | 0 | 1 | 0 | n/a | 1.00x |" in comparison.to_markdown()


def test_labels_for_same_policy_use_seeds_then_settings_then_numbers(tmp_path: Path) -> None:
    seeds = [write_run(tmp_path / f"s{seed}", seed=seed).path for seed in (1, 2)]
    assert [r.label for r in compare_runs(seeds).runs] == ["spark seed=1", "spark seed=2"]
    names = ("20261123T145528.942469Z-eviction-storm", "20261123T150102.118200Z-eviction-storm")
    same = [write_run(tmp_path / name).path for name in names]
    comparison = compare_runs(same)
    assert [r.label for r in comparison.runs] == ["spark run 1", "spark run 2"]
    assert all(name in comparison.to_markdown() for name in names)  # the legend names the directories
    scenario = same[1] / "scenario.yaml"
    data = yaml.safe_load(scenario.read_text())
    data["chaos"]["transient"]["lifetime"] = "high"
    scenario.write_text(yaml.safe_dump(data))
    labels = [r.label for r in compare_runs(same).runs]
    assert labels == ["spark lifetime=exponential(mean=6s)", "spark lifetime=high"]


def test_runs_of_several_scenarios_are_labelled_by_scenario(tmp_path: Path) -> None:
    runs = [write_run(tmp_path / name).path for name in ("a", "b")]
    scenario, summary = runs[1] / "scenario.yaml", runs[1] / "summary.json"  # both name it
    scenario.write_text(yaml.safe_dump({**yaml.safe_load(scenario.read_text()), "name": "storm"}))
    summary.write_text(json.dumps({**json.loads(summary.read_text()), "name": "storm"}))
    assert [r.label for r in compare_runs(runs).runs] == ["fixture-spark: spark", "storm: spark"]


def test_a_partial_run_is_flagged(spark_run: RecordedRun, pado_run: RecordedRun) -> None:
    crash(pado_run, at=5.0)
    comparison = compare_runs([spark_run.path, pado_run.path])
    assert comparison.runs[1].partial
    assert "| pado (partial) |" in comparison.to_markdown()


def test_policy_comes_from_the_summary_without_a_scenario(
    spark_run: RecordedRun, pado_run: RecordedRun
) -> None:
    for run in (spark_run, pado_run):
        (run.path / "scenario.yaml").unlink()
    assert [r.label for r in compare_runs([spark_run.path, pado_run.path]).runs] == [
        "spark",
        "pado",
    ]


def test_each_metric_is_listed_once(spark_run: RecordedRun, pado_run: RecordedRun) -> None:
    for run in (spark_run, pado_run):  # keys the master writes beside the headline numbers
        summary = json.loads((run.path / "summary.json").read_text())
        summary.update(spill_bytes=10, shuffle_bytes=20, error_relaunches=0, task_attempts=10)
        (run.path / "summary.json").write_text(json.dumps(summary))
    metrics = compare_runs([spark_run.path, pado_run.path]).metrics
    assert {"spill bytes", "shuffle bytes written", "relaunches after task errors"} <= set(metrics)
    assert not {"spill_bytes", "shuffle_bytes", "error_relaunches"} & set(metrics)
    assert len(metrics) == len(set(metrics))
