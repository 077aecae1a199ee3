"""The simulator's scale scenarios (benchmarks/sim_scale.py runs them in full): each
validates, and a tiny ``--set`` version of each runs to the end in seconds."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from master.sim.run import sim_settings, simulate
from testbed.app.cli import main
from testbed.scenario.schema import load_scenario
from tests.support.sim import rows

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"

TINY = {
    "sim-10k.yaml": [
        "cluster.reserved.count=2",
        "cluster.transient.count=8",
        "jobs.0.repeat=3",
        "jobs.0.tasks=20",
        "timeout=1h",
    ],
    "sim-yarn-me-1k.yaml": [
        "cluster.reserved.count=1",
        "cluster.transient.count=3",
        "jobs.0.repeat=2",
        "jobs.0.maps=4",
        "jobs.0.reduces=2",
        "jobs.1.repeat=1",
        "jobs.1.maps=4",
        "jobs.1.reduces=2",
    ],
    "sim-eagle-day.yaml": [
        "cluster.reserved.count=30",
        "arrivals.synthetic.horizon_s=120",
        "arrivals.synthetic.long_tasks=4",
    ],
}


@pytest.mark.parametrize("name", sorted(TINY))
def test_the_scale_scenario_validates(name: str) -> None:
    assert main(["validate", str(SCENARIOS / name)]) == 0


@pytest.mark.parametrize("name", sorted(TINY))
def test_a_tiny_version_of_it_runs_in_the_simulator(name: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    sets = [arg for value in TINY[name] for arg in ("--set", value)]
    assert main(["run", str(SCENARIOS / name), *sets, "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == "sim" and summary["failed"] == 0 and summary["succeeded"] > 0


def test_a_stop_ends_the_simulation_early_and_fails_the_unfinished_jobs(tmp_path: Path) -> None:
    sets = [*TINY["sim-10k.yaml"], "jobs.0.repeat=10"]
    scenario = load_scenario(SCENARIOS / "sim-10k.yaml", sets)
    asked = []

    def stop() -> str | None:
        asked.append(1)
        return "enough for the test" if len(asked) == 2 else None

    shell, ok = simulate(sim_settings(scenario), tmp_path)
    assert ok
    whole = shell.heap.popped
    (tmp_path / "stopped").mkdir()
    shell, ok = simulate(sim_settings(scenario), tmp_path / "stopped", stop=stop)
    assert not ok and len(asked) == 2 and shell.heap.popped == 512 < whole
    errors = [row["error"] for row in rows(tmp_path / "stopped", "jobs") if row["status"] == "failed"]
    assert errors and all(error.startswith("enough for the test") for error in errors)
