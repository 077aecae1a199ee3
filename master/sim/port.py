"""What the simulator exchanges with the master: the events and commands of the sans-I/O
master core's interface (``MasterCore.start(now)`` and ``handle(event, now)``).

These are the names and fields the core's interface agrees on, for the simulator's side;
once ``master.core`` declares them itself, this module re-exports them from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from testbed.protocol import Message

# ------------------------------------------------------------------ events (into the core)


@dataclass(frozen=True, slots=True)
class FromNode:
    node_id: str
    message: Message


@dataclass(frozen=True, slots=True)
class Wake:
    pass


@dataclass(frozen=True, slots=True)
class Round:
    pass


@dataclass(frozen=True, slots=True)
class Begin:
    pass


@dataclass(frozen=True, slots=True)
class OutputStaged:
    job_id: str
    index: int
    attempt: int


Event = FromNode | Wake | Round | Begin | OutputStaged

# ------------------------------------------------------------------ commands (out of the core)


@dataclass(frozen=True, slots=True)
class Send:
    node_id: str
    message: Message


@dataclass(frozen=True, slots=True)
class StartNode:
    node_id: str
    node_class: str
    ordinal: int


@dataclass(frozen=True, slots=True)
class KillNode:
    node_id: str


@dataclass(frozen=True, slots=True)
class ReleaseNode:
    node_id: str


@dataclass(frozen=True, slots=True)
class CommitOutput:
    job_id: str
    index: int
    attempt: int


@dataclass(frozen=True, slots=True)
class WakeAt:
    t: float


@dataclass(frozen=True, slots=True)
class WantRound:
    pass


@dataclass(frozen=True, slots=True)
class ClusterUp:
    pass


@dataclass(frozen=True, slots=True)
class RunOver:
    ok: bool


Command = Send | StartNode | KillNode | ReleaseNode | CommitOutput | WakeAt | WantRound | ClusterUp | RunOver


class Core(Protocol):
    """The master as the simulator drives it: time is always an input."""

    def start(self, now: float) -> list[Command]: ...

    def handle(self, event: Event, now: float) -> list[Command]: ...

    def status(self) -> dict[str, Any]:
        """The run's state for the progress line (``master.api``'s ``/status`` shape)."""
