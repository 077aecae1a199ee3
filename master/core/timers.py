"""The core's timers: the one event heap (``master.event_heap``) on run seconds, ``now`` injected.

It implements ``master.chaos.rules.Clock`` in run seconds; ``TraceClock`` is the
same heap seen in trace seconds (run seconds x time_scale), for the chaos rules.
The core asks its shell for a ``Wake`` at the head's time (``WakeAt``) whenever
the head moves earlier, and runs every due action when it comes. The core reads no
clock: ``now`` is its own (the time of the event it handles), which the heap's clamp
(a time already past is now) reads when a timer is set.
"""

from __future__ import annotations

from collections.abc import Callable

from master.event_heap import Action, EventHeap

SLACK_S = 1e-9
"""A timer this close to now is due: a shell's clock that reaches ``t`` through float sums may
land a hair before it, and a ``Wake`` that runs nothing must not ask for the same time again."""


class TimerHeap:
    def __init__(self, now: Callable[[], float]) -> None:
        self._now = now
        self.heap = EventHeap()
        """The timers, in (time, priority, order); its ``now`` is the core's when one is set."""
        self.asked: float | None = None
        """The earliest time a ``WakeAt`` asked for and not yet come."""
        self.held = False
        """Due actions wait (an answer the core asked for is to come first: ``hold``)."""
        self._interrupted = False

    def now(self) -> float:
        return self._now()

    def at(self, when: float, priority: int, action: Action) -> None:
        """Run ``action`` at run time ``when`` (now, if it is past: then ties go by priority)."""
        heap = self.heap
        heap.now = self._now()
        heap.at(when, priority, action)

    def after(self, delay: float, priority: int, action: Action) -> None:
        heap = self.heap
        heap.now = self._now()
        heap.after(delay, priority, action)

    def wake_needed(self) -> float | None:
        """The head's time if no ``WakeAt`` asked for it (or for an earlier time) yet (asked
        after every event the core handles: the heap's queue read here, not through a call)."""
        queue = self.heap.queue
        if not queue or self._interrupted:
            return None
        head = queue[0][0]
        if self.asked is not None and self.asked <= head:
            return None
        self.asked = head
        return head

    def run_due(self) -> None:
        """Run every action due by now, in (time, priority, order); actions may add timers."""
        now = self._now() + SLACK_S
        self.asked = None
        queue, step = self.heap.queue, self.heap.step
        while queue and queue[0][0] <= now:
            if self.held:
                self._interrupted = True
                return
            step()

    def hold(self) -> None:
        """The actions still due wait until ``release``: one of them asked the shell for
        something the next ones must see (``PlanJob``), as if its answer had come at once."""
        self.held = True

    def release(self) -> None:
        """Go on with the actions a ``hold`` stopped, in their order, as one ``run_due`` would."""
        self.held = False
        if self._interrupted:
            self._interrupted = False
            self.run_due()

    def shift(self, origin: float) -> None:
        """The clock's origin moved to ``origin``: every timer keeps its distance from now."""
        self.heap.shift(origin)
        self.asked = None

    def clear(self) -> None:
        """Drop every timer (the run stops)."""
        self.heap.clear()
        self.asked = None
        self._interrupted = False

    def __len__(self) -> int:
        return len(self.heap)


class TraceClock:
    """The heap in trace seconds (``master.chaos.rules.Clock``): the chaos rules' clock."""

    def __init__(self, timers: TimerHeap, time_scale: float) -> None:
        self.timers = timers
        self.time_scale = time_scale

    def now(self) -> float:
        return self.timers.now() * self.time_scale

    def at(self, when: float, priority: int, action: Action) -> None:
        """As ``VirtualClock.at``: a time already past is now (then ties go by priority)."""
        self.timers.at(when / self.time_scale, priority, action)
