"""The ports through which the shell's parts reach the master, instead of ``Master`` itself.

The HTTP API, the chaos controller, the command signer and the full-disk handling
at the master are each handed the shell (``master.shell.master``), but see it only
through the Protocol below that names what they use. What they change goes to
the core (``master.core``) as events, handled at the time they happen, with
their commands carried out at once. The core's own parts see
the core through ``master.core.ports``. None of them imports ``master.shell.master``,
so ``master`` has no import cycle (``lint-imports`` checks it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from master.core.commands import Evicted
from master.core.events import EvictRequest
from master.core.nodes import NodeRecord
from master.core.view import CoreView
from master.providers.base import NodeProvider
from master.shell.journal_file import Journal
from testbed.scenario.chaos import EvictSpec
from testbed.scenario.schema import Scenario
from testbed.wire.capabilities import RunKeys
from testbed.wire.protocol import Codec


class ChaosControl(Protocol):
    """What the API may ask of the chaos controller (``master.shell.live_chaos.ChaosShell``)."""

    async def evict_now(self, evict: EvictSpec, named: Sequence[str] | None = None) -> list[str]: ...


class ChaosShellPort(Protocol):
    """What the chaos controller uses: the provider (which nodes are ours) and the core."""

    provider: NodeProvider

    def evict(self, request: EvictRequest) -> Evicted:
        """Hand the request to the core, carry out its commands, and give its answer."""


class DiskFaultsPort(Protocol):
    """What the full-disk handling at the master uses (``master.shell.disk_faults``)."""

    run_dir: Path
    journal: Journal
    view: CoreView

    def fail_job(self, job_id: str, error: str) -> None: ...

    def fail_unfinished(self, reason: str) -> None: ...


class ApiPort(DiskFaultsPort, Protocol):
    """What the HTTP API uses (``master.shell.http_api``): the core only through its read-only view."""

    run_id: str
    scenario: Scenario
    keys: RunKeys
    http_host: str
    advertise: str
    codec: Codec
    chaos: ChaosControl

    def output_staged(self, job_id: str, index: int, attempt: int) -> None: ...


class SignerPort(Protocol):
    """What the command signer uses (``master.shell.signing``)."""

    keys: RunKeys

    @property
    def nodes(self) -> dict[str, NodeRecord]: ...
