"""One simulated run (``testbed run --backend sim``): the same run directory as a real run
(events.jsonl, the CSV tables, summary.json), marked ``backend: sim``, with no outputs."""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

from master.policies import policy_plugins
from master.run import RunResult, summarize
from master.rundir import owning
from master.sim.agents import ModelAgents
from master.sim.legacy import LegacyCore
from master.sim.model import ExecutionModel
from master.sim.shell import SimShell
from testbed.rundir import secure_run_dir
from testbed.scenario import Scenario, to_yaml

SIM_RUN_ID = "sim"
"""Every simulated run has the same run id: nothing outside it sees it, and its journal is then
the same byte for byte for the same scenario and seed."""


def sim_scenario(scenario: Scenario) -> Scenario:
    """The scenario as the simulator runs it: no dilation (there is no host to fit)."""
    fidelity = scenario.fidelity.model_copy(update={"dilation": 1.0})
    return scenario.model_copy(update={"backend": "sim", "fidelity": fidelity})


def run_sim(scenario: Scenario, run_dir: Path, progress: bool = False) -> RunResult:
    secure_run_dir(run_dir)
    with owning(run_dir):
        scenario = sim_scenario(scenario)
        (run_dir / "scenario.yaml").write_text(to_yaml(scenario), encoding="utf-8")
        plugins = policy_plugins(scenario)
        started = time.perf_counter()
        shell, ok = simulate(scenario, run_dir, _progress_printer() if progress else None)
        elapsed = time.perf_counter() - started
        shutil.rmtree(run_dir / "outputs", ignore_errors=True)
        summary = {
            **summarize(run_dir, scenario, plugins),
            "backend": "sim",
            "simulation": {
                **scenario.simulation.model_dump(mode="json"),
                "events": shell.heap.popped,
                "elapsed_s": round(elapsed, 3),
            },
        }
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return RunResult(run_dir, ok, summary)


def simulate(
    scenario: Scenario, run_dir: Path, progress: Callable[[SimShell, float], None] | None = None
) -> tuple[SimShell, bool]:
    """Run the scenario on the simulator into ``run_dir`` (its journal and tables)."""
    core = LegacyCore(scenario, SIM_RUN_ID, run_dir)
    model = ExecutionModel(scenario, core.ideal_memory_mb)
    shell = SimShell(core, lambda heap, deliver: ModelAgents(heap, model, deliver))
    try:
        shell.run(scenario.timeout_s, (lambda now: progress(shell, now)) if progress else None)
    finally:
        ok = core.finish(shell.heap.now)
    return shell, ok


def _progress_printer() -> Callable[[SimShell, float], None]:
    last = [0.0]

    def show(shell: SimShell, now: float) -> None:
        if time.monotonic() - last[0] < 0.5:
            return
        last[0] = time.monotonic()
        status = shell.core.status()
        jobs = status["jobs"]
        done = sum(1 for j in jobs if j["status"] in ("succeeded", "failed"))
        print(
            f"\r[sim {status['t']:9.1f}s] jobs {done}/{status['expected_jobs']} "
            f"| nodes {shell.agents.live_nodes()} | evictions {status['evictions']} "
            f"| {shell.heap.popped} events",
            end="",
            file=sys.stderr,
            flush=True,
        )

    return show
