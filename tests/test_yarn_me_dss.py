"""benchmarks/yarn_me_dss.py: YARN-ME's simulation study on the schedulers' own driver."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from yarn_me_dss import run, summary


def test_summary_reads_the_traces_as_the_papers_fig_6a() -> None:
    text = summary([0.5, 0.7, 0.9, 0.6])
    assert "n=4" in text and "median 0.650" in text and "worst 0.900" in text and "at most 0.7: 75%" in text


@pytest.mark.parametrize("distribution", ["uniform", "exp"])
def test_yarn_me_beats_yarn_on_a_small_memory_bound_trace(distribution: str) -> None:
    yarn, _, _ = run(2, "yarn", 5, 5, "3x", distribution)
    me, elastic, _ = run(2, "yarn-me", 5, 5, "3x", distribution)
    assert elastic > 0 and me < yarn
