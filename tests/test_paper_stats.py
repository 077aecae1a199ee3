"""benchmarks/paper_stats.py: the paired table of a paper sweep's runs."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from paper_stats import cells, table


def _run(sweep: Path, name: str, jct: float, failed: int = 0) -> None:
    (sweep / name).mkdir(parents=True)
    (sweep / name / "summary.json").write_text(
        json.dumps({"mean_jct_s": jct, "failed": failed, "backend": "sim"})
    )


def test_paired_ratio_interval_and_test(tmp_path: Path) -> None:
    for seed, (slow, fast) in enumerate([(100.0, 50.0), (120.0, 58.0), (90.0, 46.0)], start=1):
        _run(tmp_path, f"strategy-spark_lifetime-high_seed-{seed}", slow)
        _run(tmp_path, f"strategy-pado_lifetime-high_seed-{seed}", fast)
    _run(tmp_path, "strategy-pado_lifetime-none_seed-1", 40.0, failed=1)
    text = table(cells([tmp_path]), "mean_jct_s", "strategy", "pado")
    assert "**lifetime=high** (mean_jct_s)" in text and "**lifetime=none** (mean_jct_s)" in text
    assert "| pado | 1,2,3 | 3 | 51.3 |" in text  # mean of 50, 58, 46
    line = next(row for row in text.splitlines() if row.startswith("| vs spark |"))
    cells_ = [c.strip() for c in line.split("|")[1:-1]]
    assert cells_[1] == "3" and cells_[2] == "0.498"  # geometric mean of 0.5, 0.483, 0.511
    assert float(cells_[4]) < 0.01  # paired t-test on the logs: consistent halving
    assert "failed jobs 1" in text  # flagged, not dropped


def _fake_sweeps(
    monkeypatch: pytest.MonkeyPatch, reproduce: ModuleType, out: Path, status: int = 0
) -> list[tuple[str, ...]]:
    """``reproduce.testbed`` recording its commands; each "sweep" leaves a Pado and a Spark run
    of seed 1 in ``out``, the Spark one failed when ``status`` is 1 (as ``testbed sweep`` exits)."""
    commands: list[tuple[str, ...]] = []

    def sweep(*arguments: str, **_: object) -> int:
        commands.append(arguments)
        _run(out, "strategy-pado_lifetime-high_seed-1", 100.0)
        _run(out, "strategy-spark_lifetime-high_seed-1", 300.0, failed=status)
        return status

    monkeypatch.setattr(reproduce, "testbed", sweep)
    return commands


def test_reproduce_writes_its_tables_when_some_runs_failed_and_flags_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reproduce

    _fake_sweeps(monkeypatch, reproduce, tmp_path, status=1)
    paired = reproduce.sweep("pado-mr", False, 1, [], tmp_path).read_text()
    assert "Runs with failed jobs" in paired and "'strategy': 'spark'" in paired


def test_reproduce_vary_replaces_the_papers_values_of_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reproduce

    commands = _fake_sweeps(monkeypatch, reproduce, tmp_path)
    reproduce.sweep(
        "pado-mr", True, 3, ["seed=5"], tmp_path, ("chaos.transient.lifetime=high", "time_scale=3")
    )
    (command,) = commands
    varies = [command[i + 1] for i, part in enumerate(command) if part == "--vary"]
    assert varies == [
        "policy.strategy=spark,spark-checkpoint,pado",
        "chaos.transient.lifetime=high",
        "time_scale=3",
    ]
    assert command[command.index("--set") + 1] == "seed=5"


def test_reproduce_keyed_mr_prices_the_sort_at_wordcounts_built_in_rates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reproduce

    from testbed.scenario.schema import load_scenario
    from testbed.scenario.simulation import OP_MODELS

    commands = _fake_sweeps(monkeypatch, reproduce, tmp_path)
    reproduce.sweep("pado-mr-keyed", True, 1, ["seed=5"], tmp_path)
    (command,) = commands
    assert command[1] == str(reproduce.PAPERS / "pado-mr.yaml")
    settings = [command[i + 1] for i, part in enumerate(command) if part == "--set"]
    assert settings == [*reproduce.SWEEPS["pado-mr-keyed"].settings, "seed=5"]  # at the full size too

    scenario = reproduce.PAPERS / "pado-mr.yaml"
    keyed = load_scenario(scenario, settings[:-1])
    for stage in ("map", "reduce"):
        op, wordcount = keyed.simulation.op(f"sort.{stage}"), OP_MODELS[f"wordcount.{stage}"]
        assert (op.s_per_mb, op.fixed_s) == (wordcount.s_per_mb, wordcount.fixed_s)
        assert op.output_ratio == OP_MODELS[f"sort.{stage}"].output_ratio == 1.0  # the sort's bytes
    shipped, changed = load_scenario(scenario).model_dump(), keyed.model_dump()
    assert shipped["simulation"].pop("ops") == {} and changed["simulation"].pop("ops")
    assert changed == shipped  # nothing else differs from pado-mr


def test_pado_figure_draws_the_paired_speed_ups_beside_the_papers(tmp_path: Path) -> None:
    from pado_figure import draw, speedups

    sweep = tmp_path / "mlr"
    for seed, (spark, checkpoint, pado) in enumerate([(700.0, 500.0, 200.0), (600.0, 520.0, 190.0)], start=1):
        _run(sweep, f"strategy-spark_lifetime-high_seed-{seed}", spark)
        _run(sweep, f"strategy-spark-checkpoint_lifetime-high_seed-{seed}", checkpoint)
        _run(sweep, f"strategy-pado_lifetime-high_seed-{seed}", pado)
    found = speedups(sweep)
    assert sorted(found) == ["spark", "spark-checkpoint"]
    assert found["spark"].n == 2 and 1 / found["spark"].geo == pytest.approx((3.5 * 600 / 190) ** 0.5)
    paths = draw({"mlr": found, "mr_keyed": found}, tmp_path / "figure")
    assert [p.suffix for p in paths] == [".png", ".svg"] and all(p.stat().st_size > 0 for p in paths)


def test_pado_figure_takes_the_high_rate_of_a_full_grid_and_draws_each_rate(tmp_path: Path) -> None:
    from pado_figure import draw_rates, rate_series, speedups

    sweep = tmp_path / "grid"
    for seed in (1, 2):
        for rate, spark in (("none", 100.0), ("high", 400.0 + seed)):
            _run(sweep, f"strategy-spark_lifetime-{rate}_seed-{seed}", spark)
            _run(sweep, f"strategy-pado_lifetime-{rate}_seed-{seed}", 200.0)
    ratio = speedups(sweep)["spark"]
    assert ratio.n == 2 and 1 / ratio.geo == pytest.approx((401 * 402) ** 0.5 / 200)  # the none runs left out
    series = rate_series(sweep)
    assert sorted(series["spark"]) == ["high", "none"] and len(series["spark"]["none"]) == 2
    paths = draw_rates({"mr": series}, tmp_path / "rates")
    assert [p.suffix for p in paths] == [".png", ".svg"] and all(p.stat().st_size > 0 for p in paths)


def test_reproduce_stops_on_a_sweep_that_could_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import reproduce

    assert reproduce.testbed("sweep", str(tmp_path / "missing.yaml"), check=False) == 2  # bad input: exit 2
    _fake_sweeps(monkeypatch, reproduce, tmp_path, status=2)
    with pytest.raises(SystemExit, match="exited 2"):
        reproduce.sweep("pado-mr", False, 1, [], tmp_path)


def test_a_key_with_an_underscore_is_read_from_the_sweeps_grid(tmp_path: Path) -> None:
    key = "policy.options.firmament.cost_model"
    (tmp_path / "sweep.json").write_text(
        json.dumps({"vary": [[key, ["quincy", "transient"]]], "seeds": [1, 2]})
    )
    for seed, (quincy, transient) in enumerate([(120.0, 100.0), (130.0, 104.0)], start=1):
        _run(tmp_path, f"cost_model-quincy_seed-{seed}", quincy)
        _run(tmp_path, f"cost_model-transient_seed-{seed}", transient)
    runs = cells([tmp_path])
    assert sorted(values["cost_model"] for values, _, _ in runs) == [
        "quincy",
        "quincy",
        "transient",
        "transient",
    ]
    text = table(runs, "mean_jct_s", "cost_model", "transient")
    assert "**all runs** (mean_jct_s)" in text and "| vs quincy | 2 |" in text
