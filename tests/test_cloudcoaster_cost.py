"""benchmarks/cloudcoaster_cost.py: the transients alive and the manager's target, per phase."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from cloudcoaster_cost import phases


def test_phases_are_time_weighted_shares_of_the_budget() -> None:
    """4 on-demand servers, all running long tasks from 0 to 20 s (target ceil(4 / 0.5 - 4) = 4
    = K); 4 transients from 10 s, one released at 30 s, the rest at 35 s. By hand: filling
    [0, 10) none alive, target K; [10, 30) all alive, target K for half; [30, 40) 3 alive for
    half of it, target 0."""
    changes = [(0.0, 0, 0, 4), (0.0, 0, 4, 0), (20.0, 0, -4, 0), (10.0, 4, 0, 0), (30.0, -1, 0, 0)]
    changes.append((35.0, -3, 0, 0))
    got = phases(sorted(changes), [0.0, 10.0, 30.0, 40.0], budget=4, threshold=0.5)
    assert got == [(10.0, 0.0, 1.0), (20.0, 1.0, 0.5), (10.0, pytest.approx(0.375), 0.0)]
