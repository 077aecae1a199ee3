"""The simulator's clock: the one event heap (``master.event_heap``) on virtual run seconds, and
the priorities of the simulator's actions on it.

Simultaneous actions run in (time, priority, insertion order), the tie rule of SimPy, of the
master core's timers and of the chaos rules' ``VirtualClock`` (the same heap), so a run is a pure
function of its scenario and seed.
"""

from __future__ import annotations

DELIVER, WAKE, ROUND = range(3)
"""Priorities at one instant: messages and modelled outcomes first, then the master's own
timers, then its scheduling round (after everything else of the same instant)."""
