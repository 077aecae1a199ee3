"""LATE's straggler recipe (``testbed.node.stragglers``): the straggler leaf's weight and its
loops for a factor and a node's slots, and the backends that refuse ``straggler: processes``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from testbed.app.cli import main
from testbed.node.stragglers import MAX_LOOPS, busy_loops, straggler_group


@pytest.mark.parametrize(
    ("factor", "slots", "loops"), [(3, 1, 2), (1.5, 1, 1), (1.5, 2, 1), (8, 2, 14), (100, 4, MAX_LOOPS)]
)
def test_a_slot_shares_its_quota_with_factor_minus_one_loops(factor: float, slots: int, loops: int) -> None:
    assert busy_loops(factor, slots) == loops


@pytest.mark.parametrize(
    ("version", "factor", "slots", "file", "weight"),
    [(1, 3, 1, "cpu.shares", "2048"), (2, 3, 2, "cpu.weight", "400"), (2, 1000, 4, "cpu.weight", "10000")],
)
def test_the_straggler_leaf_weighs_factor_minus_one_times_the_slots(
    tmp_path: Path, version: int, factor: float, slots: int, file: str, weight: str
) -> None:
    """A slot's default weight (v1 1024 shares, v2 100) times (factor - 1) x slots, at most the
    version's largest."""
    group = straggler_group(version, tmp_path, slots, factor)
    assert group == tmp_path / "straggler"
    assert (group / file).read_text() == weight


@pytest.mark.parametrize(
    ("backend", "says"),
    [
        ("docker", "chaos.slowdown.straggler: processes runs beside local nodes only, not --backend docker"),
        ("attach", "chaos.slowdown: --backend attach does not enforce slow nodes"),
    ],
)
def test_straggler_processes_are_refused_off_local_nodes_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str, says: str
) -> None:
    data = {
        "name": "slow",
        "cluster": {"reserved": {"count": 1, "slots": 1}, "transient": 0},
        "jobs": [{"workload": "sleep"}],
        "fidelity": {"mode": "faithful", "dilation": 1},
        "chaos": {"slowdown": {"nodes": {"reserved-0": 3}, "straggler": "processes"}},
    }
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path), "--backend", backend]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert any(line.startswith(says) for line in lines), lines
