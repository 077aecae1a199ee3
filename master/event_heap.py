"""The one event heap: actions on a clock of seconds, run in (time, priority, insertion order).

That tie rule is SimPy's (one event queue, ties broken by priority then by the order events were
scheduled), so whatever runs on it is a pure function of what was scheduled. Every heap of timed
actions in the tree is this one:

- the simulator's clock (``master.sim``): its model agents, CPUs and pushes schedule on it and
  ``SimShell._run`` pops it (``step`` inlined), the pending ``WakeAt`` times of its core too;
- the master core's timers (``master.core.timers.TimerHeap``, on run seconds, ``now`` injected
  by the core), seen in trace seconds by the chaos rules (``TraceClock``);
- the chaos plan's clock (``master.chaos.rules.VirtualClock``, trace seconds).

It reads no clock: ``now`` is the time of the last action run (``step``, ``run``) or whatever its
owner sets. Beside the packages, not in one, so that the pure core, the chaos rules and the
simulator may all import it.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field

Action = Callable[[], None]


@dataclass
class EventHeap:
    now: float = 0.0
    queue: list[tuple[float, int, int, Action]] = field(default_factory=list)
    """(time, priority, insertion number, action), a heap; ``SimShell._run`` pops it as ``step`` does."""
    _order: itertools.count = field(default_factory=itertools.count)
    popped: int = 0
    """Actions run so far (the benchmark's event count)."""

    def at(self, when: float, priority: int, action: Action) -> None:
        """Run ``action`` at ``when`` (now, if ``when`` is past)."""
        now = self.now
        heapq.heappush(self.queue, (now if now > when else when, priority, next(self._order), action))

    def after(self, delay: float, priority: int, action: Action) -> None:
        """``at(now + delay, ...)``, in one call (a call per remote block read). The clamp is
        ``max(when, now)``'s (``when`` unless ``now`` is greater), without a builtin's call."""
        now = self.now
        when = now + delay
        heapq.heappush(self.queue, (now if now > when else when, priority, next(self._order), action))

    def __len__(self) -> int:
        return len(self.queue)

    def step(self) -> bool:
        """Run the next action (advancing the clock to it); False when none is left."""
        if not self.queue:
            return False
        self.now, _, _, action = heapq.heappop(self.queue)
        self.popped += 1
        action()
        return True

    def run(self, horizon: float) -> None:
        """Every action due up to ``horizon`` (those the actions add too), in order."""
        queue = self.queue
        while queue and queue[0][0] <= horizon:
            self.now, _, _, action = heapq.heappop(queue)
            self.popped += 1
            action()

    def shift(self, origin: float) -> None:
        """The clock's origin moves to ``origin``: every action, and now, keep their distance."""
        self.queue[:] = [(when - origin, p, o, a) for when, p, o, a in self.queue]
        heapq.heapify(self.queue)
        self.now -= origin

    def clear(self) -> None:
        """Drop every action."""
        self.queue.clear()
