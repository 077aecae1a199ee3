"""The ports through which the shell's parts reach the master, instead of ``Master`` itself.

The HTTP API, the autoscaling shell, the chaos controller, the command signer and
the full-disk handling at the master are each handed the shell (``master.master``),
but see it only through the Protocol below that names what they use. What they
change goes to the core (``master.core``) as its operations, applied at the time
they happen, with their commands carried out at once. The core's own parts see
the core through ``master.core.ports``. None of them imports ``master.master``,
so ``master`` has no import cycle (``lint-imports`` checks it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from master.core.jobs import JobRuntime, TaskKey
from master.core.machine import MasterCore
from master.core.nodes import NodeRecord
from master.journal import Journal
from master.policies.base import ClusterSnapshot, RunningTask
from master.providers.base import NodeProvider
from testbed.capabilities import RunKeys
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
    """The node registry, the jobs, the journal file, and the operations every part may ask for."""

    scenario: Scenario
    journal: Journal

    @property
    def nodes(self) -> dict[str, NodeRecord]: ...

    @property
    def jobs(self) -> dict[str, JobRuntime]: ...

    def send(self, node_id: str, message: Message) -> None: ...

    def kick(self) -> None:
        """Ask for a scheduling round."""

    def drain(self, node: NodeRecord, reason: str) -> None: ...


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


class DiskFaultsPort(Protocol):
    """What the full-disk handling at the master uses (``master.disk_faults``)."""

    run_dir: Path
    journal: Journal

    @property
    def jobs(self) -> dict[str, JobRuntime]: ...

    def fail_job(self, job_id: str, error: str) -> None: ...

    def fail_unfinished(self, reason: str) -> None: ...


class ApiPort(ClusterPort, DiskFaultsPort, Protocol):
    """What the HTTP API uses (``master.api``)."""

    run_id: str
    keys: RunKeys
    http_host: str
    advertise: str
    codec: Codec
    chaos: ChaosControl
    core: MasterCore
    """Read for the status: its counters (evictions, the sender check's, the expected jobs)."""

    def output_staged(self, job_id: str, index: int, attempt: int) -> None: ...


class SignerPort(Protocol):
    """What the command signer uses (``master.signing``)."""

    keys: RunKeys

    @property
    def nodes(self) -> dict[str, NodeRecord]: ...
