"""The autoscaler's snapshot reuses the scheduling round's jobs (``Scaling.snapshot(seen)``):
in every step of a CloudCoaster run, its answers are those of a fresh snapshot of the core."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from master.core.scaling import Scaling
from master.policy_setup import make_autoscaler
from master.shell.run import run_blocking
from master.sim.run import SimBackend, sim_settings
from testbed.api.policy import ClusterSnapshot
from testbed.scenario.schema import parse_scenario
from tests.support.sim import events

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("seed", [1, 2])
def test_the_reused_snapshot_answers_as_a_fresh_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    data: dict[str, Any] = yaml.safe_load((ROOT / "scenarios" / "cloudcoaster.yaml").read_text())
    data["seed"] = seed
    data.pop("fidelity")  # the real backend's scale model: not the simulator's
    data["arrivals"]["synthetic"]["horizon_s"] = 900
    scenario = parse_scenario(data)
    reference = make_autoscaler(scenario)  # its own census: fed the fresh snapshots only
    assert reference is not None
    original = Scaling.snapshot
    checked = []

    def checking(self: Scaling, seen: ClusterSnapshot | None = None) -> ClusterSnapshot:
        reused = original(self, seen)
        if seen is not None:
            fresh = original(self)
            assert reused.nodes == fresh.nodes and reused.now == fresh.now
            pending = self.provisioning
            assert reference.decide(fresh, pending) == self.autoscaler.decide(reused, pending)
            assert reference.facts(fresh) == self.autoscaler.facts(reused)
            assert reference.wake_at(fresh, pending) == self.autoscaler.wake_at(reused, pending)
            checked.append(bool(reference.facts(fresh)["long_servers"]))
        return reused

    monkeypatch.setattr(Scaling, "snapshot", checking)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    run_blocking(sim_settings(scenario), run_dir, SimBackend())
    assert len(checked) > 100 and any(checked)
    assert events(run_dir, "autoscale")  # the autoscaler acted
