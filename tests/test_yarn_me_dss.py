"""benchmarks/yarn_me_dss.py: YARN-ME's simulation study on the testbed's simulator, beside
DSS's method (tests/support/dss_driver.py), the oracle it is checked against."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from yarn_me_dss import SCHEDULERS, Trace, main, oracle_run, simulated_run, size_labels, summary


def test_summary_reads_the_traces_as_the_papers_fig_6a() -> None:
    text = summary([0.5, 0.7, 0.9, 0.6])
    assert "n=4" in text and "median 0.650" in text and "worst 0.900" in text and "at most 0.7: 75%" in text


@pytest.mark.parametrize("trace", [Trace(2, 3, 3), Trace(3, 3, 3), Trace(1, 3, 3, distribution="exp")])
def test_the_simulator_and_dss_method_agree_on_a_trace(trace: Trace) -> None:
    """The differential test of ``--backend sim`` against the oracle: the same scheduler objects,
    trace and penalty, with and without the master core between them. What the core adds is its
    messages' and launches' latency (under a second a task, against tasks of 50-500 s), so the
    mean JCTs agree to 1% (measured: 0.01% to 0.11% on these traces; 1.4% at most on 9 traces of 3
    nodes and 4 jobs)."""
    yarn, me = (simulated_run(trace, scheduler) for scheduler in SCHEDULERS)
    dss_yarn, dss_me = (oracle_run(trace, scheduler) for scheduler in SCHEDULERS)
    assert yarn.mean_jct_s == pytest.approx(dss_yarn.mean_jct_s, rel=0.01)
    assert me.mean_jct_s == pytest.approx(dss_me.mean_jct_s, rel=0.01)
    assert me.elastic > 0 and me.mean_jct_s < yarn.mean_jct_s


def test_weak_scaling_runs_each_size_with_as_many_jobs_and_draws_the_ratio_against_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stem = tmp_path / "scaling"
    argv = ["yarn_me_dss.py", "--nodes", "2,3", "--seeds", "2", "--heartbeat", "1", "--jobs-at-once", "1"]
    monkeypatch.setattr(sys, "argv", [*argv, "--scaling", str(stem)])
    assert main() == 0
    out = capsys.readouterr().out
    assert (
        "uniform, 2 nodes, 2 jobs, testbed: n=1" in out
        and "uniform, 3 nodes, 3 jobs, DSS's method: n=1" in out
    )
    assert stem.with_suffix(".png").stat().st_size > 0 and "<svg" in stem.with_suffix(".svg").read_text()


def test_sizes_too_close_on_the_log_axis_go_unlabelled_keeping_the_largest() -> None:
    labels = size_labels([10, 25, 100, 200, 300, 1000, 2000, 3000])
    assert labels == ["10", "25", "100", "", "300", "1k", "", "3k"]
    assert size_labels([100]) == ["100"]
