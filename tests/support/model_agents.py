"""Model agents on a small cluster for the simulator's agent tests (and one of 8 Mbit/s links):
the fleet, a reduce task over given blocks, running the heap, the blocks the maps wrote."""

from __future__ import annotations

from typing import Any

from master.event_heap import EventHeap
from master.execution_model import ExecutionModel
from master.sim.agents import ModelAgents
from master.sim.nodes import url_of
from testbed.scenario.schema import parse_scenario
from testbed.wire.protocol import (
    BlockRef,
    LaunchTask,
    Message,
    TaskSpec,
)
from tests.support.sim import sleep_task

SPEC: dict[str, Any] = {
    "name": "agents",
    "cluster": {"reserved": 1, "transient": 1},
    "jobs": [{"workload": "sleep", "tasks": 1}],
    "simulation": {"launch_overhead": 0.5, "node_startup": 2.0, "will_delay": 0.1},
}


NIC_SPEC: dict[str, Any] = {
    **SPEC,
    "cluster": {"reserved": {"count": 2, "network_mbps": 8}, "transient": {"count": 1, "network_mbps": 8}},
    "simulation": {
        **SPEC["simulation"],
        "push_overhead": 0.25,
        "copy_send_cpu_s_per_mb": 0,
        "copy_receive_cpu_s_per_mb": 0,
        "serve_cpu_s_per_mb": 0,
    },
}
"""Links of 1,000,000 bytes a second each way (the agents' CPU for transfers: none)."""


def agents(
    heartbeat_s: float | None = None, spec: dict[str, Any] = SPEC
) -> tuple[EventHeap, ModelAgents, list[tuple[float, str, Message]]]:
    heap, heard = EventHeap(), []
    model = ExecutionModel(parse_scenario(spec), lambda job, stage: 256, lambda job, stage: ("shuffle",))
    deliver = lambda node, message: heard.append((heap.now, node, message))  # noqa: E731
    fleet = ModelAgents(heap, model, deliver, heartbeat_s=heartbeat_s)
    cluster = parse_scenario(spec).cluster
    for node_class in ("reserved", "transient"):
        for index in range(getattr(cluster, node_class).count):
            fleet.start(f"{node_class}-{index}", node_class)
    run_all(heap, until=2.0)  # all up (heartbeats, when on, go on for ever)
    return heap, fleet, heard


def run_all(heap: EventHeap, until: float = 1e9) -> None:
    heap.run(until)


def written_blocks(heap: EventHeap, fleet: ModelAgents) -> list[BlockRef]:
    """reserved-0 and reserved-1 each write 1 MiB (a map's output, tasks 0 and 1); their refs."""
    holders = ("reserved-0", "reserved-1")
    for index, holder in enumerate(holders):
        writer = sleep_task(index, 0.0).model_copy(
            update={"final": False, "params": {"generate": {"nbytes": 2**20}}, "op": "sort.map"}
        )
        fleet.command(holder, LaunchTask(task=writer))
    run_all(heap)
    return [
        BlockRef(block=f"j000.s0.t{index}.a0", partition=0, locations=(url_of(holder),))
        for index, holder in enumerate(holders)
    ]


def reduce_task(index: int, refs: tuple[BlockRef, ...]) -> TaskSpec:
    """Reduce ``index`` of stage 1, reading ``refs`` one after another."""
    task_id = f"j000.s1.t{index}"
    update = {"params": {}, "op": "sort.reduce", "stage": 1, "task_id": task_id, "inputs": (refs,)}
    return sleep_task(index, 0.0).model_copy(update=update)
