"""A scenario of sleep jobs (durations pinned) run by the real backend and by the simulator
takes the same decisions: the same task on the same node, in the same order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testbed.testing import run
from tests.support.sim import events

SCENARIO: dict[str, Any] = {
    "name": "real-vs-sim",
    "seed": 5,
    "cluster": {"reserved": {"count": 1, "slots": 1}, "transient": {"count": 1, "slots": 1}},
    "policy": {"scheduler": "fifo", "strategy": "spark"},
    "jobs": [
        # one node runs 1 s tasks while the other runs the 2.5 s one: which node frees first
        # differs by 0.5 s less one launch, far more than a launch costs on this machine
        {"workload": "sleep", "durations": [1.0, 2.5, 1.0, 1.0]},
        {"workload": "sleep", "durations": [0.5], "submit_at": 0.2},
    ],
    "timeout": 120,
}


def decisions(run_dir: Path) -> list[tuple[str, str, int]]:
    return [(e["task"], e["node"], e["attempt"]) for e in events(run_dir, "task_started")]


@pytest.mark.e2e
async def test_the_real_backend_and_the_simulator_place_the_same_tasks_alike(tmp_path: Path) -> None:
    real = await run(SCENARIO, tmp_path / "real", "local")
    simulated = await run(SCENARIO, tmp_path / "sim", "sim")
    assert real.ok and simulated.ok
    assert decisions(simulated.run_dir) == decisions(real.run_dir)
