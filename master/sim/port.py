"""What the simulator needs of the master: the sans-I/O core's interface
(``MasterCore.start(now)`` and ``handle(event, now)``, with the events and commands of
``master.core.events`` and ``master.core.commands``).
"""

from __future__ import annotations

from typing import Any, Protocol

from master.core.commands import Command
from master.core.events import Event


class Core(Protocol):
    """The master as the simulator drives it: time is always an input."""

    def start(self, now: float) -> list[Command]: ...

    def handle(self, event: Event, now: float) -> list[Command]: ...

    def status(self) -> dict[str, Any]:
        """The run's state for the progress line (``master.api``'s ``/status`` shape)."""
