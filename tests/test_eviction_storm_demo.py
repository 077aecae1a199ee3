"""scenarios/eviction-storm.yaml, the shipped eviction demo, shows lineage recovery: its storm
takes busy nodes, and tasks they ran run again elsewhere (before, every eviction of 6 of 6 runs
hit an idle node between jobs, and nothing was relaunched). Simulated here over seeds; on
local agents, with every output checked, in tests/e2e/test_eviction_storm_demo_run.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.app.cli import main
from tests.support.eviction_storm import SCENARIO, storm_recovery


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_simulated_storm_sets_back_busy_nodes_work(tmp_path: Path, seed: int) -> None:
    run_dir = tmp_path / "run"
    argv = ["run", str(SCENARIO), "--backend", "sim", "--set", f"seed={seed}", "--out", str(run_dir)]
    assert main(argv) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    victims, relaunched = storm_recovery(run_dir)
    assert summary["succeeded"] == 3 and len(victims) == 2
    assert relaunched and summary["relaunched_tasks"] >= len(relaunched)
