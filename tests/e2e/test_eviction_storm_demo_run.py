"""The shipped eviction demo on local agents, as its header says to run it: the storm kills
busy nodes, their tasks run again on others, and every output is exact."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.app.cli import main
from tests.support.eviction_storm import SCENARIO, storm_recovery

pytestmark = pytest.mark.e2e


def test_the_storm_relaunches_tasks_and_the_outputs_stay_exact(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    assert main(["run", str(SCENARIO), "--out", str(run_dir)]) == 0
    summary = json.loads((run_dir / "summary.json").read_text())
    victims, relaunched = storm_recovery(run_dir)
    assert summary["succeeded"] == 3 and len(victims) == 2
    assert relaunched and summary["relaunched_tasks"] >= len(relaunched)
    assert main(["check-output", "--run", str(run_dir)]) == 0
