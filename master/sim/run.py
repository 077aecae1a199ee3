"""One simulated run (``testbed run --backend sim``): the same run directory as a real run
(events.jsonl, the CSV tables, summary.json), marked ``backend: sim``, with no outputs."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from master.core.machine import MasterCore
from master.execution_model import ExecutionModel
from master.sim.agents import ModelAgents
from master.sim.shell import SimShell
from testbed.app.progress import sim_progress_line
from testbed.scenario.schema import Scenario
from testbed.scenario.simulation import calibration_digest
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host, RunSettings

SIM_RUN_ID = "sim"
"""Every simulated run has the same run id: nothing outside it sees it, and its journal is then
the same byte for byte for the same scenario and seed."""


def sim_scenario(scenario: Scenario) -> Scenario:
    """The scenario as the simulator runs it: no dilation (there is no host to fit)."""
    fidelity = scenario.fidelity.model_copy(update={"dilation": 1.0})
    return scenario.model_copy(update={"backend": "sim", "fidelity": fidelity})


SIM_HOST = Host(cores=1.0)
"""The simulator's host: there is none to fit (its scenario's dilation is 1), so none is read."""


def sim_settings(scenario: Scenario, where: str | None = None) -> RunSettings:
    """The scenario compiled as the simulator runs it (``sim_scenario``): its policies built
    under dilation 1 (the yarn-me scheduler and the pado strategy read it when built)."""
    return resolve(sim_scenario(scenario), SIM_HOST, where)


@dataclass(frozen=True)
class SimBackend:
    """The simulator as a run's backend (``master.shell.run.run``): its provider is its model
    agents (``simulate``), in a thread of its own so the caller's event loop runs on; a
    cancelled run (Ctrl-C) stops it at its next look (``SimShell.run``'s ``stop``), and is
    waited for. Its
    settings are a ``sim_settings`` (or the CLI's resolve of a ``sim_scenario``); the summary
    says ``backend: sim`` and the ``simulation`` it ran with."""

    progress: bool = False
    name: str = "sim"
    resuming: bool = False  # a simulated run is run again, not resumed

    async def drive(self, settings: RunSettings, run_dir: Path) -> tuple[SimShell, bool, dict[str, Any]]:
        scenario = settings.scenario
        cancelled = threading.Event()
        started = time.perf_counter()
        work = asyncio.ensure_future(asyncio.to_thread(self._simulate, settings, run_dir, cancelled))
        try:
            shell, ok = await asyncio.shield(work)
        except asyncio.CancelledError:  # the thread ends at its next look, its journal closed,
            cancelled.set()  # before the run lets go of its directory
            await asyncio.wait([work])
            raise
        elapsed = time.perf_counter() - started
        shutil.rmtree(run_dir / "outputs", ignore_errors=True)
        simulation = {
            **scenario.simulation.model_dump(mode="json"),
            "calibration": calibration_used(scenario.simulation.calibration),
            "events": shell.heap.popped,
            "elapsed_s": round(elapsed, 3),
        }
        return shell, ok, {"backend": "sim", "simulation": simulation}

    def _simulate(
        self, settings: RunSettings, run_dir: Path, cancelled: threading.Event
    ) -> tuple[SimShell, bool]:
        def stop() -> str | None:
            return "the run was cancelled" if cancelled.is_set() else None

        shown = SimProgress(settings.scenario.time_scale) if self.progress else contextlib.nullcontext()
        with shown as progress:
            return simulate(settings, run_dir, progress, stop)


def charges_policy_time(scenario: Scenario) -> bool:
    """``simulation.charge_policy_time``, or by default whether the scheduler is firmament."""
    charge = scenario.simulation.charge_policy_time
    return scenario.policy.scheduler == "firmament" if charge is None else charge


def calibration_used(path: str | None) -> dict[str, str] | None:
    """The calibration file a run's model came from: its path and the SHA-256 of its bytes."""
    return None if path is None else {"path": path, "sha256": calibration_digest(path)}


def simulate(
    settings: RunSettings,
    run_dir: Path,
    progress: Callable[[SimShell, float], None] | None = None,
    stop: Callable[[], str | None] | None = None,
) -> tuple[SimShell, bool]:
    """Run the scenario on the simulator into ``run_dir`` (its journal and tables); ``stop``:
    asked now and then, a reason to end the run early (``SimShell.run``)."""
    scenario = settings.scenario
    core = MasterCore(
        settings,
        SIM_RUN_ID,
        # every node starts at once unless the scenario paces them: the model's node_startup is
        # no host's CPU, and a window drawn from this host's cores made the run depend on it
        start_window=scenario.cluster.start_window or None,
    )

    def ideal_memory_mb(job_id: str, stage: int) -> int:
        """The memory at which the job's stage does not spill (what the model's penalty is of)."""
        return core.jobs[job_id].stage_memory_mb[stage]

    def dependency_kinds(job_id: str, stage: int) -> tuple[str, ...]:
        return tuple(dep.kind for dep in core.jobs[job_id].plan.stages[stage].deps)

    model = ExecutionModel(scenario, ideal_memory_mb, dependency_kinds)
    # heartbeats carry the attempts' progress scores, which only speculation reads
    beats = scenario.heartbeat_interval_s if scenario.policy.speculation != "none" else None
    shell = SimShell(
        core,
        run_dir,
        lambda heap, deliver: ModelAgents(heap, model, deliver, heartbeat_s=beats),
        scenario.simulation.round_gap,
        charges_policy_time(scenario),
    )
    try:
        shell.run(scenario.timeout_s, (lambda now: progress(shell, now)) if progress else None, stop)
    except Exception as error:  # a policy or plugin raised: its jobs fail, the run still ends
        shell.crash(error)
    finally:
        ok = shell.finish()
    return shell, ok


class SimProgress:
    """The run's progress in trace time on a terminal (redrawn in place, at most 4 times a
    wall second): ``sim_progress_line``."""

    def __init__(self, time_scale: float) -> None:
        from rich.console import Console  # a run on a terminal only
        from rich.live import Live
        from rich.text import Text

        self.text = Text  # a line as it is (a str would be read as rich's markup)
        self.time_scale = time_scale
        self.started = time.monotonic()
        self.shown = 0.0
        self.live = Live(Text(""), console=Console(stderr=True), transient=True, auto_refresh=False)

    def __enter__(self) -> SimProgress:
        self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.live.__exit__(None, None, None)

    def __call__(self, shell: SimShell, now: float) -> None:
        if time.monotonic() - self.shown < 0.25:
            return
        self.shown = time.monotonic()
        status = shell.status()
        wall = self.shown - self.started
        line = sim_progress_line(status, status["t"] * self.time_scale, shell.heap.popped, wall)
        self.live.update(self.text(line), refresh=True)
