"""A test harness for plugin authors: hand-built snapshots, and real runs from a pytest test.

A policy is a pure function of a snapshot, so most of its tests build one by hand::

    from testbed.testing import job, node, placements, snapshot

    snap = snapshot([node("r0", slots=1), node("t0", "transient")], [job("j000", tasks=2)])
    assert placements(MyScheduler(), snap) == {"j000.s0.t0": "r0", "j000.s0.t1": "t0"}

and a few run a whole scenario on real local agents (a broker, one process per node,
real shuffles), in-process, from an async test::

    result = await run("scenario.yaml", tmp_path / "run")
    assert result.ok

A workload plugin runs whole in this process, every task under a small budget so that
its buffers spill, and is checked against its reference::

    assert check_workload({"workload": "my_module:MyWorkload", "maps": 3}, tmp_path) == []

and ``measure_sim_model`` times its real tasks into the ``SimModel`` the simulator needs.

A recovery strategy runs on the master's real core without agents (``StrategyBench``,
``testbed.testing.strategy``): a test starts, ends and loses things by hand and asks it::

    bench = StrategyBench(MyStrategy(), {"jobs": [{"workload": "wordcount", "maps": 4, "reduces": 2}]})
    bench.round()
    bench.lose("transient-0")
    assert all(ready.classes == {"reserved"} for ready in bench.plan())

This module runs the master in-process, so it is, like the CLI, one of the few parts of
``testbed`` allowed to import ``master`` (``pyproject.toml``'s import contracts).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from testbed.api import SimModel
from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    Decision,
    JobView,
    NodeClass,
    NodeView,
    PendingTask,
    RunningTask,
    Scheduler,
)
from testbed.scenario.schema import load_scenario, parse_scenario
from testbed.testing.strategy import StrategyBench

__all__ = [
    "StrategyBench",
    "check_workload",
    "job",
    "measure_sim_model",
    "node",
    "placements",
    "run",
    "snapshot",
]


def node(
    node_id: str,
    node_class: NodeClass = "reserved",
    slots: int = 2,
    memory_mb: int = 2048,
    running: tuple[RunningTask, ...] = (),
    **view: Any,
) -> NodeView:
    """A node as a policy sees it (``view``: any other ``NodeView`` field)."""
    return NodeView(node_id, node_class, slots, memory_mb, running, **view)


def job(job_id: str, tasks: int = 2, memory_mb: int = 256, submitted: float = 0.0, stage: int = 0) -> JobView:
    """A job with ``tasks`` pending tasks of one stage, ids ``<job>.s<stage>.t<index>``."""
    pending = tuple(
        PendingTask(f"{job_id}.s{stage}.t{index}", job_id, stage, index, memory_mb) for index in range(tasks)
    )
    return JobView(job_id, submitted, pending, total_tasks=tasks)


def snapshot(nodes: list[NodeView], jobs: list[JobView], now: float = 0.0) -> ClusterSnapshot:
    return ClusterSnapshot(now, tuple(nodes), tuple(jobs))


def placements(scheduler: Scheduler, snap: ClusterSnapshot) -> dict[str, str]:
    """Where the scheduler starts each task in this snapshot: ``{task_id: node_id}``."""
    decisions: list[Decision] = scheduler.schedule(snap)
    return {d.task_id: d.node_id for d in decisions if isinstance(d, Assign)}


async def run(scenario: str | Path | dict[str, Any], run_dir: Path, backend: str = "local") -> Any:
    """Run a scenario (a file, or its fields as a dict) to its end; a ``master.shell.run.RunResult``
    (``ok``, ``summary``, ``run_dir``). A file's directory is importable (its plugins).
    ``backend="sim"`` (or a scenario's ``backend: sim``) simulates it (docs/simulation.md)."""
    from master.shell import run as pipeline
    from testbed.settings.resolve import resolve
    from testbed.settings.run_settings import Host

    loaded = parse_scenario(scenario) if isinstance(scenario, dict) else load_scenario(scenario)
    run_dir.mkdir(parents=True, exist_ok=True)
    if backend == "sim" or (backend == "local" and loaded.backend == "sim"):
        from master.sim.run import SimBackend, sim_settings

        return await pipeline.run(sim_settings(loaded), run_dir, SimBackend())
    return await pipeline.run(resolve(loaded, Host.this_machine()), run_dir, pipeline.RealBackend(backend))


def check_workload(
    job: dict[str, Any], work: Path, budget_bytes: int = 256 * 1024, seed: int = 0
) -> list[str]:
    """Run a job (its scenario fields, e.g. ``{"workload": "mod:Name", "maps": 3}``) in this
    process, task after task with ``budget_bytes`` each (real block files, spills, merges),
    and return the problems ``testbed check-output`` finds in its output (none: correct)."""
    from testbed.workloads.catalog import plan_job
    from testbed.workloads.check import check_output
    from testbed.workloads.local import LocalJob

    scenario = parse_scenario(
        {"name": "check-workload", "cluster": {"reserved": 1, "transient": 0}, "jobs": [job]}
    )
    spec = scenario.jobs[0]
    local = LocalJob(plan_job(spec, seed, scenario), work)
    local.run(budget_bytes)
    return check_output(spec, seed, local.outputs)


def measure_sim_model(
    job: dict[str, Any], work: Path, budget_bytes: int = 256 * 2**20, seed: int = 0
) -> SimModel:
    """A workload plugin's ``SimModel`` measured on this machine: its job (scenario fields)
    run in this process with ``budget_bytes`` per task (the default: no spill, the ideal
    the model assumes); seconds and bytes summed over each stage's tasks. Wall time of a
    shared machine: round it, and measure on a quiet one."""
    from testbed.scenario.schema import PluginJob
    from testbed.workloads.catalog import plan_job
    from testbed.workloads.local import LocalJob

    spec = parse_scenario({"name": "measure", "cluster": {"reserved": 1}, "jobs": [job]}).jobs[0]
    if not isinstance(spec, PluginJob):
        raise ValueError(f"{spec.workload} is a built-in workload: its model is simulation.ops' default")
    local = LocalJob(plan_job(spec, seed, None), work).run(budget_bytes)
    last = len(local.plan.stages) - 1
    maps = [run for (stage, _), run in local.tasks.items() if stage == 0]
    steps = [run for (stage, _), run in local.tasks.items() if 0 < stage < last]
    reduces = [run for (stage, _), run in local.tasks.items() if stage == last]
    mb_in = sum(run.metrics.bytes_in for run in maps) / 2**20
    mb_out = sum(sum(run.partition_bytes) for run in maps) / 2**20
    step_in = sum(run.metrics.bytes_in for run in steps) / 2**20
    step_out = sum(sum(run.partition_bytes) for run in steps) / 2**20
    generated = "generate" in maps[0].spec.params
    return SimModel(
        map_s_per_mb=sum(run.seconds for run in maps) / max(mb_in, 1e-9),
        map_output_ratio=mb_out / max(mb_in, 1e-9),
        reduce_s_per_mb=sum(run.seconds for run in reduces)
        / max(sum(r.metrics.bytes_in for r in reduces) / 2**20, 1e-9),
        step_s_per_mb=sum(run.seconds for run in steps) / step_in if steps else 0.0,
        step_output_ratio=step_out / step_in if steps else 1.0,
        generated_split_mb=mb_in / len(maps) if generated else 0.0,
    )
