"""benchmarks/yarn_me_dss.py: YARN-ME's simulation study on the schedulers' own driver."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from yarn_me_dss import main, run, size_labels, summary


def test_summary_reads_the_traces_as_the_papers_fig_6a() -> None:
    text = summary([0.5, 0.7, 0.9, 0.6])
    assert "n=4" in text and "median 0.650" in text and "worst 0.900" in text and "at most 0.7: 75%" in text


@pytest.mark.parametrize("distribution", ["uniform", "exp"])
def test_yarn_me_beats_yarn_on_a_small_memory_bound_trace(distribution: str) -> None:
    yarn, _, _ = run(2, "yarn", 5, 5, "3x", distribution)
    me, elastic, _ = run(2, "yarn-me", 5, 5, "3x", distribution)
    assert elastic > 0 and me < yarn


def test_weak_scaling_runs_each_size_with_as_many_jobs_and_draws_the_ratio_against_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stem = tmp_path / "scaling"
    argv = ["yarn_me_dss.py", "--nodes", "4,6", "--seeds", "2", "--heartbeat", "1", "--scaling", str(stem)]
    monkeypatch.setattr(sys, "argv", argv)
    assert main() == 0
    out = capsys.readouterr().out
    assert "uniform, 4 nodes, 4 jobs: n=1" in out and "uniform, 6 nodes, 6 jobs: n=1" in out
    assert stem.with_suffix(".png").stat().st_size > 0 and "<svg" in stem.with_suffix(".svg").read_text()


def test_sizes_too_close_on_the_log_axis_go_unlabelled_keeping_the_largest() -> None:
    labels = size_labels([10, 25, 100, 200, 300, 1000, 2000, 3000])
    assert labels == ["10", "25", "100", "", "300", "1k", "", "3k"]
    assert size_labels([100]) == ["100"]
