"""The sleep workload: a plain task waits its wall duration; a CPU-bound one is work, its trace
duration / the time scale in CPU seconds of its thread, so a quota (a slowed node's, divided)
lengthens it as the simulator prices it."""

from __future__ import annotations

import time
from pathlib import Path

from testbed.wire.protocol import TaskSpec
from testbed.workloads import sleep
from testbed.workloads.base import BlockFetcher, TaskContext
from tests.support.scenarios import make_scenario


def _context(tmp_path: Path, params: dict) -> TaskContext:
    spec = TaskSpec(task_id="j000.s0.t0", job_id="j000", stage=0, index=0, attempt=0, op="sleep.run",
                    memory_mb=64, params=params)  # fmt: skip
    (tmp_path / "scratch").mkdir()
    return TaskContext(
        spec, tmp_path / "blocks", tmp_path / "scratch", BlockFetcher(tmp_path / "blocks", "http://here:1")
    )


def test_a_cpu_bound_task_is_its_emulated_duration_in_cpu_seconds_and_a_plain_one_its_wall() -> None:
    scenario = make_scenario(
        time_scale=10,
        fidelity={"mode": "faithful", "dilation": 4},
        jobs=[
            {"workload": "sleep", "tasks": 2, "duration": "2s", "cpu_bound": True},
            {"workload": "sleep", "duration": "2s"},
        ],
    )
    spinning, waiting = (sleep.plan(job, 1, scenario).stages[0] for job in scenario.jobs)
    assert spinning.task_params[0] == {"duration_s": 0.8, "cpu_s": 0.2}  # 2 s / 10, stretched 4x; 0.2 CPU s
    assert waiting.task_params[0] == {"duration_s": 0.8}


def test_a_cpu_bound_task_spins_until_its_thread_used_its_cpu_seconds(tmp_path: Path) -> None:
    ctx = _context(tmp_path, {"duration_s": 0.0, "cpu_s": 0.05, "cpu_bound": True})
    started = time.thread_time()
    sleep.run_task(ctx)
    assert time.thread_time() - started >= 0.05  # work done, not a wall deadline (0 s here) passed
    assert ctx.progress.score >= 0.99
    assert ctx.final_path.read_text() == "j000.s0.t0\t0.000\n"
