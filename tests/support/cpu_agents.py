"""Model agents on one-core nodes for the simulator's CPU tests: the fleet, a map task of a given
size, running the heap to the end, and each task's success time."""

from __future__ import annotations

from typing import Any

from master.event_heap import EventHeap
from master.execution_model import ExecutionModel
from master.sim.agents import ModelAgents
from testbed.scenario.schema import parse_scenario
from testbed.wire.protocol import PushTarget, TaskSpec, TaskUpdate
from tests.support.sim import sleep_task

MB = 2**20


SPEC: dict[str, Any] = {
    "name": "cpu",
    "cluster": {
        "reserved": {"count": 1, "slots": 1, "network_mbps": 8},
        "transient": {"count": 1, "slots": 2, "cpus": 1, "network_mbps": 8},
    },
    "jobs": [{"workload": "sleep", "tasks": 1}],
    "simulation": {
        "launch_overhead": 0.5,
        "node_startup": 2.0,
        "push_overhead": 0.0,
        "copy_send_cpu_s_per_mb": 0.25,
        "copy_receive_cpu_s_per_mb": 0.5,
        "serve_cpu_s_per_mb": 0.0,
        "ops": {"sort.map": {"s_per_mb": 1.0, "output_ratio": 1.0}},
    },
}
"""A transient node of 2 slots on 1 cpu; links of 1,000,000 bytes a second each way; a
sort map computes 1 s per MiB; a copy costs its sender 0.25 s and its receiver 0.5 s per MiB."""


def fleet(spec: dict[str, Any] = SPEC) -> tuple[EventHeap, ModelAgents, list[tuple[float, str, Any]]]:
    heap, heard = EventHeap(), []
    scenario = parse_scenario(spec)
    model = ExecutionModel(scenario, lambda job, stage: 256, lambda job, stage: ("shuffle",))
    agents = ModelAgents(heap, model, lambda node, m: heard.append((heap.now, node, m)))
    agents.start("reserved-0", "reserved")
    agents.start("transient-0", "transient")
    heap.run(2.0)
    heard.clear()
    return heap, agents, heard


def map_task(index: int, mb: float, push: tuple[PushTarget, ...] = ()) -> TaskSpec:
    params = {"generate": {"nbytes": int(mb * MB)}}
    return sleep_task(index, 0.0).model_copy(
        update={"op": "sort.map", "params": params, "final": False, "push": push}
    )


def succeeded(heard: list[tuple[float, str, Any]]) -> dict[str, float]:
    return {m.task_id: t for t, _, m in heard if isinstance(m, TaskUpdate) and m.state == "succeeded"}


def run(heap: EventHeap) -> None:
    while heap.step():
        pass
