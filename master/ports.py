"""The ports through which the shell's parts reach the master, instead of ``Master`` itself.

The recovery strategies, the HTTP API, the autoscaling shell, the liveness
shell and the chaos controller are each handed the master, but see it only through the Protocol
below that names what they use; ``master.master.Master`` implements them all.
None of them imports ``master.master``, so ``master`` has no import cycle
(``lint-imports`` checks it), and tests hand them stand-ins of their own.
These ports shrink as the sans-I/O core takes over (docs/architecture.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Protocol

from master.jobs import JobRuntime, TaskKey
from master.journal import Journal
from master.nodes import NodeRecord
from master.policies.base import ClusterSnapshot, RunningTask
from master.providers.base import NodeProvider
from master.senders import SenderCheck
from testbed.capabilities import RunKeys
from testbed.mqtt import MqttLink
from testbed.protocol import Codec, Message
from testbed.scenario import Scenario
from testbed.scenario_chaos import EvictSpec


class ChaosControl(Protocol):
    """What the API and the autoscaling shell may ask of the chaos controller."""

    doomed: set[str]
    """Nodes under an eviction notice or being evicted."""

    def node_launched(self, node: NodeRecord) -> None: ...

    def stop_replacing(self, node_class: str) -> None: ...

    def launch_wait(self, node_class: str, waited: float) -> float | None:
        """Wall seconds a launch that has waited ``waited`` wall seconds for capacity must still
        wait for the class's capacity (0: go ahead), or None: refused (docs/chaos.md, "Capacity")."""

    def unavailable(self) -> frozenset[str]:
        """The classes whose capacity is out now."""

    async def evict_now(self, evict: EvictSpec, named: list[str] | None = None) -> list[str]: ...


class ClusterPort(Protocol):
    """The node registry, the jobs, the journal, and the commands every part may give."""

    scenario: Scenario
    journal: Journal
    nodes: dict[str, NodeRecord]
    jobs: dict[str, JobRuntime]

    def send(self, node_id: str, message: Message) -> None: ...

    def kick(self) -> None:
        """Ask for a scheduling round."""

    def drain(self, node: NodeRecord, reason: str) -> None: ...


class StrategyPort(ClusterPort, Protocol):
    """What a recovery strategy uses (``master.strategies``)."""

    run_dir: Path


class ChaosPort(ClusterPort, Protocol):
    """What the chaos controller uses (``master.chaos.controller``)."""

    run_id: str
    provider: NodeProvider
    resumed_from: float
    """The run time (wall seconds) this master's segment of the run starts at: 0, or the crash
    a resumed run continues from."""

    async def launch_node(self, node_class: str) -> NodeRecord: ...

    def running_views(self, node: NodeRecord) -> tuple[RunningTask, ...]: ...

    def stored_bytes(self) -> dict[str, int]: ...

    def record_eviction(
        self, node: NodeRecord, reason: str, lifetime_s: float | None, tasks_running: int, bytes_lost: int
    ) -> None: ...


class ScalingPort(ClusterPort, Protocol):
    """What the autoscaling shell uses (``master.autoscaling``)."""

    provider: NodeProvider
    chaos: ChaosControl

    async def launch_node(self, node_class: str) -> NodeRecord: ...

    def snapshot(self) -> tuple[ClusterSnapshot, dict[str, tuple[JobRuntime, TaskKey]]]: ...

    def undrain(self, node: NodeRecord, reason: str) -> None: ...

    def release_node(self, node: NodeRecord, reason: str) -> None: ...


class LivenessPort(ClusterPort, Protocol):
    """What the liveness shell uses (``master.liveness_shell``)."""

    provider: NodeProvider
    link: MqttLink

    def node_lost(self, node: NodeRecord, reason: str) -> None: ...

    def fail_unaccounted(self, node: NodeRecord, task_id: str, now: float, why: str) -> None:
        """Fail and relaunch an attempt the node no longer accounts for (``why``)."""


class ApiPort(ClusterPort, Protocol):
    """What the HTTP API uses (``master.api``)."""

    run_id: str
    run_dir: Path
    keys: RunKeys
    http_host: str
    advertise: str
    clock_started: bool
    expected_jobs: int
    evictions: int
    evicted: list[dict[str, object]]
    codec: Codec
    senders: SenderCheck
    chaos: ChaosControl


class SignerPort(Protocol):
    """What the command signer uses (``master.signing``)."""

    keys: RunKeys
    nodes: dict[str, NodeRecord]


class JobEnding(Protocol):
    """How a job, or the whole run, is ended (``master.run_records.RunRecords``)."""

    def finish_job(self, job: JobRuntime) -> None: ...

    def fail_unfinished(self, reason: str) -> None:
        """Fail every job not finished yet (and those not submitted yet): the run ends."""


class RecordsPort(ClusterPort, Protocol):
    """What the run's records use (``master.run_records``)."""

    expected_jobs: int


class NodeRows(Protocol):
    """Where a node's row of ``nodes.csv`` is written (``master.run_records.RunRecords``)."""

    def node_row(self, node: NodeRecord, now: float, reason: str) -> None: ...


class NodeStartPort(ClusterPort, Protocol):
    """What the node start-up uses (``master.node_start``)."""

    provider: NodeProvider
    attach: bool
    keys: RunKeys
    agent_env: dict[str, str]
    node_env: Callable[[str], Awaitable[dict[str, str]]] | None
    agent_command: Callable[[str, str], list[str]]
    records: NodeRows


class DiskFaultsPort(ClusterPort, Protocol):
    """What the disk-fault handling uses (``master.disk_faults``)."""

    run_dir: Path
    records: JobEnding

    def undrain(self, node: NodeRecord, reason: str) -> None: ...
