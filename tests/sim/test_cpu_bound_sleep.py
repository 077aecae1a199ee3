"""A CPU-bound sleep in the simulator is work on its node's cores, as the real one spins
(``testbed.workloads.sleep``): two of them on a one-core node of two slots share the core and
take twice their duration, and a node slowed 3x takes 3x that; plain sleeps take their time
off the cores, beside each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.sim import rows, simulate


def _durations(tmp: Path, name: str, cpu_bound: bool, factor: float = 1.0) -> list[float]:
    simulate(
        tmp,
        name,
        cluster={"reserved": {"count": 1, "slots": 2, "cpus": 1}, "transient": 0},
        jobs=[{"workload": "sleep", "tasks": 2, "duration": "4s", "cpu_bound": cpu_bound}],
        chaos={"slowdown": {"nodes": {"reserved-0": factor}}},
    )
    tasks = rows(tmp / name, "tasks")
    return sorted(float(t["end_s"]) - float(t["start_s"]) for t in tasks if t["status"] == "succeeded")


def test_cpu_bound_sleeps_share_their_nodes_core_and_plain_ones_do_not(tmp_path: Path) -> None:
    waiting = _durations(tmp_path, "wait", cpu_bound=False)  # 4 s each, beside each other
    overhead = waiting[0] - 4.0  # the launch's, the same for every task here
    assert 0 <= overhead < 0.5 and waiting[1] == pytest.approx(waiting[0], abs=1e-9)
    spinning = _durations(tmp_path, "spin", cpu_bound=True)
    assert spinning == pytest.approx([8.0 + overhead] * 2, abs=1e-6)  # half a core each
    slowed = _durations(tmp_path, "slow", cpu_bound=True, factor=3)
    assert slowed == pytest.approx([24.0 + overhead] * 2, abs=1e-6)
