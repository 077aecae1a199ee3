"""The execution model: how long a task, a push and a node's start take in the simulator.

A pure function of the task's launch command, the bytes of the blocks it reads, the node it
runs on and the scenario (its ``simulation`` section, its cluster's bandwidths, its task
profiles). docs/simulation.md states the model, where each default was measured, and what a
real run measures that the model cannot know.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from master.policies import load_profiles, role_of
from testbed.protocol import INLINE_NOOP, TaskSpec
from testbed.scenario import Scenario

MB = 2**20
BYTES_PER_RECORD = {"sort": 100, "pagerank": 16}
"""Bytes of one generated input record: a sort record, a packed PageRank edge."""


@dataclass(frozen=True, slots=True)
class TaskCost:
    """What one attempt costs once its inputs are there (seconds, bytes)."""

    bytes_in: int
    fetch_s: float
    compute_s: float
    spill_bytes: int
    spill_s: float
    bytes_out: int

    @property
    def seconds(self) -> float:
        return self.fetch_s + self.compute_s + self.spill_s


def source_bytes(spec: TaskSpec) -> int:
    """Bytes a source task reads, from its plan (no data is generated or read)."""
    params: dict[str, Any] = spec.params
    if "file" in params:
        return int(params["file"]["end"]) - int(params["file"]["start"])
    generate = params.get("generate")
    if generate is None:
        return 0
    if "nbytes" in generate:
        return int(generate["nbytes"])
    if "count" not in generate:  # a workload plugin's generate(): its size is unknown until it runs
        return 0
    workload = spec.op.partition(".")[0]
    return int(generate["count"]) * BYTES_PER_RECORD.get(workload, 1)


class ExecutionModel:
    def __init__(self, scenario: Scenario, ideal_memory_mb: Callable[[str, int], int]) -> None:
        """``ideal_memory_mb(job_id, stage)``: the memory at which the stage's tasks do not spill."""
        self.scenario = scenario
        self.spec = scenario.simulation
        self.ideal_memory_mb = ideal_memory_mb
        self.profiles = load_profiles(scenario) if self.spec.memory_penalty else {}

    # ------------------------------------------------------------------ nodes

    def nic_bytes_s(self, node_class: str) -> float:
        return getattr(self.scenario.cluster, node_class).network_mbps * 1e6 / 8

    def disk_bytes_s(self, node_class: str) -> float | None:
        rate = getattr(self.scenario.cluster, node_class).disk_mb_s
        return None if rate is None else rate * MB

    def detection_s(self) -> float:
        """A killed node's death to the master hearing of it."""
        if self.spec.detection == "will":
            return self.spec.will_delay
        return self.scenario.heartbeat_timeout_s

    # ------------------------------------------------------------------ tasks

    def pinned_s(self, spec: TaskSpec) -> float | None:
        """A task whose duration the scenario fixes (sleep, noop): that duration."""
        if spec.op == INLINE_NOOP:
            return 0.0
        if "duration_s" in spec.params:
            return float(spec.params["duration_s"])
        return None

    def cost(
        self, spec: TaskSpec, local_bytes: int, remote_bytes: int, node_class: str, sharing: int
    ) -> TaskCost:
        """An attempt reading ``local_bytes`` from its own node and ``remote_bytes`` over the
        network (plus its source, if it has one), on a node of ``node_class`` whose NIC it
        shares with ``sharing`` running tasks (itself included)."""
        fraction = min(1.0, spec.memory_mb / max(1, self.ideal_memory_mb(spec.job_id, spec.stage)))
        profile = self.profiles.get((spec.op.partition(".")[0], role_of(spec.stage)))
        pinned = self.pinned_s(spec)
        if pinned is not None:  # a sleep task given less than its ideal memory: its profile's penalty
            penalty = profile.model.penalty.multiplier(fraction) if fraction < 1.0 and profile else 1.0
            return TaskCost(0, 0.0, pinned * penalty, 0, 0.0, 0)
        bytes_in = source_bytes(spec) + local_bytes + remote_bytes
        op = self.spec.op(spec.op)
        compute_s = op.s_per_mb * bytes_in / MB
        spill_bytes, spill_s = 0, 0.0
        if fraction < 1.0 and profile is not None:
            compute_s *= profile.model.penalty.multiplier(fraction)
        elif fraction < 1.0:
            spill_bytes = int(bytes_in * (1.0 - fraction))
            disk = self.disk_bytes_s(node_class)
            spill_s = 2 * spill_bytes / disk if disk else 0.0
        fetch_s = remote_bytes / (self.nic_bytes_s(node_class) / max(1, sharing))
        return TaskCost(bytes_in, fetch_s, compute_s, spill_bytes, spill_s, int(bytes_in * op.output_ratio))

    @staticmethod
    def partitions(total: int, count: int) -> tuple[int, ...]:
        """``total`` bytes cut into ``count`` partitions (the remainder to the first ones)."""
        base, extra = divmod(total, count)
        return tuple(base + (1 if p < extra else 0) for p in range(count))

    def transfer_s(self, nbytes: int, node_class: str, rate_bytes_s: float | None) -> float:
        """A push or checkpoint copy of ``nbytes`` from a node of ``node_class``."""
        nic = self.nic_bytes_s(node_class)
        return nbytes / (min(nic, rate_bytes_s) if rate_bytes_s else nic)
