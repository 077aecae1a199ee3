"""benchmarks/firmament.py runs on a small cluster: every phase of a round is timed, the model
printed beside them, and every ready task placed (its calls follow the scheduler's API: the
benchmark failed for a session after ``admitted`` gained its preemption moves);
benchmarks/firmament_maintained.py measures the kept network against a fresh build."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from firmament import measure, show


@pytest.mark.parametrize("cost_model", ["quincy", "transient"])
def test_a_small_clusters_rounds_are_measured(cost_model: str, capsys: pytest.CaptureFixture[str]) -> None:
    measure(50, 2, cost_model, 7)
    out = capsys.readouterr().out
    header = re.search(r"([\d,]+) ready tasks, ([\d,]+) placed per round", out)
    assert header is not None and int(header[1]) > 0 and header[2] == header[1]
    for phase in ("model", "build", "solve", "extract", "admit", "round"):
        assert f"    {phase} " in out


def test_the_small_instance_is_drawn(capsys: pytest.CaptureFixture[str]) -> None:
    show("transient")
    out = capsys.readouterr().out
    assert "optimal cost" in out and out.rstrip().splitlines()[-1].startswith("placed: {")


@pytest.mark.parametrize("cost_model", ["quincy", "transient"])
def test_the_kept_network_is_measured_against_a_fresh_build(
    cost_model: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both ways on the same rounds (the benchmark checks them equal arc for arc)."""
    from firmament_maintained import compare

    compare(50, 3, cost_model, 7, 0.02)
    out = capsys.readouterr().out
    assert "3,000 ready tasks" not in out and " 50 nodes" in out and "maintained/rebuilt" in out
