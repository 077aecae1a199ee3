"""The simulator's clock: a heap of actions on virtual run seconds.

Simultaneous actions run in (time, priority, insertion order), the tie rule of SimPy and of
``master.chaos.rules.VirtualClock``, so a run is a pure function of its scenario and seed.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

DELIVER, WAKE, ROUND = range(3)
"""Priorities at one instant: messages and modelled outcomes first, then the master's own
timers, then its scheduling round (after everything else of the same instant)."""


@dataclass
class EventHeap:
    now: float = 0.0
    queue: list[tuple[float, int, int, Callable[[], None]]] = field(default_factory=list)
    """(time, priority, insertion number, action), a heap; ``SimShell._run`` pops it as ``step`` does."""
    _order: itertools.count = field(default_factory=itertools.count)
    popped: int = 0
    """Actions run so far (the benchmark's event count)."""

    def at(self, when: float, priority: int, action: Callable[[], None]) -> None:
        """Run ``action`` at ``when`` (now, if ``when`` is past)."""
        now = self.now
        heapq.heappush(self.queue, (now if now > when else when, priority, next(self._order), action))

    def after(self, delay: float, priority: int, action: Callable[[], None]) -> None:
        """``at(now + delay, ...)``, in one call (a call per remote block read). The clamp is
        ``max(when, now)``'s (``when`` unless ``now`` is greater), without a builtin's call."""
        now = self.now
        when = now + delay
        heapq.heappush(self.queue, (now if now > when else when, priority, next(self._order), action))

    def __len__(self) -> int:
        return len(self.queue)

    def next_time(self) -> float | None:
        return self.queue[0][0] if self.queue else None

    def step(self) -> bool:
        """Run the next action (advancing the clock to it); False when none is left."""
        if not self.queue:
            return False
        self.now, _, _, action = heapq.heappop(self.queue)
        self.popped += 1
        action()
        return True
