"""What the simulator exchanges with the master: the events and commands of the sans-I/O
master core's interface (``MasterCore.start(now)`` and ``handle(event, now)``).

The events and commands are the core's own (``master.core.events``, ``master.core.commands``),
re-exported here under the names the simulator uses.
"""

from __future__ import annotations

from typing import Any, Protocol

from master.core.commands import (
    ClusterUp,
    Command,
    CommitOutput,
    KillNode,
    ReleaseNode,
    RunOver,
    Send,
    StartNode,
    WakeAt,
    WantRound,
)
from master.core.events import Begin, Event, FromNode, OutputStaged, Round, Wake

__all__ = [
    "Begin",
    "ClusterUp",
    "Command",
    "CommitOutput",
    "Core",
    "Event",
    "FromNode",
    "KillNode",
    "OutputStaged",
    "ReleaseNode",
    "Round",
    "RunOver",
    "Send",
    "StartNode",
    "Wake",
    "WakeAt",
    "WantRound",
]


class Core(Protocol):
    """The master as the simulator drives it: time is always an input."""

    def start(self, now: float) -> list[Command]: ...

    def handle(self, event: Event, now: float) -> list[Command]: ...

    def status(self) -> dict[str, Any]:
        """The run's state for the progress line (``master.api``'s ``/status`` shape)."""
