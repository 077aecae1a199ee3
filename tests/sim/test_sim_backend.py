"""The simulator as a backend of the one run pipeline (``master.shell.run.run`` on
``master.sim.run.SimBackend``): it prepares the run directory as a real run's, and a cancelled
run (Ctrl-C) stops the simulator's thread instead of leaving it to run to the end."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run
from master.sim.run import SimBackend, sim_settings
from testbed.api.policy import ClusterSnapshot, Decision, Scheduler
from testbed.scenario.schema import parse_scenario
from testbed.testing import run as run_scenario_file
from tests.support.sim import rows

SCENARIO: dict[str, Any] = {
    "name": "sim-backend",
    "seed": 3,
    "timeout": 3600,
    "cluster": {"reserved": {"count": 2, "slots": 2}, "transient": {"count": 2, "slots": 2}},
    "jobs": [{"workload": "sleep", "tasks": 40, "duration": 1.0} for _ in range(10)],
}


class HeldScheduler:
    """The scenario's scheduler, whose first round waits until the test lets it go on."""

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler
        self.entered = threading.Event()
        self.release = threading.Event()

    def schedule(self, snap: ClusterSnapshot) -> list[Decision]:
        self.entered.set()
        self.release.wait()
        return self.scheduler.schedule(snap)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.scheduler, name)


def test_a_cancelled_simulated_run_stops_its_simulator_failing_the_unfinished_jobs(tmp_path: Path) -> None:
    settings = sim_settings(parse_scenario(SCENARIO))
    held = HeldScheduler(settings.policies.scheduler)
    settings = replace(settings, policies=replace(settings.policies, scheduler=held))
    run_dir = tmp_path / "run"
    run_dir.mkdir()

    async def cancel_in_its_first_round() -> None:
        running = asyncio.create_task(run(settings, run_dir, SimBackend()))
        await asyncio.to_thread(held.entered.wait)
        running.cancel()
        held.release.set()  # the simulator goes on to its next look at whether to stop
        with pytest.raises(asyncio.CancelledError):
            await running
        # the run waited for the simulator's thread: its journal is closed before the run lets
        # go of its directory
        failed = [j for j in rows(run_dir, "jobs") if j["status"] == "failed"]
        assert failed and {j["error"] for j in failed} == {"the run was cancelled"}

    asyncio.run(cancel_in_its_first_round())
    assert not (run_dir / "summary.json").exists()  # a cancelled run has no summary


async def test_a_simulated_run_records_its_inputs_as_a_real_run_does(tmp_path: Path) -> None:
    data = tmp_path / "data.txt"
    data.write_text("one two\n")
    job = {"workload": "wordcount", "input": str(data), "maps": 1, "reduces": 1}
    result = await run_scenario_file({**SCENARIO, "jobs": [job]}, tmp_path / "run", backend="sim")
    assert result.ok and result.summary["backend"] == "sim"
    assert str(data) in (tmp_path / "run" / "inputs.json").read_text()
    assert (tmp_path / "run" / "scenario.yaml").is_file()
