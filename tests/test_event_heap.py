"""The one event heap (master.event_heap) and its views: the core's timers (``TimerHeap``, with
``TraceClock`` in trace seconds) and the chaos plan's ``VirtualClock``. Ties go by (time,
priority, insertion order), a time already past is now, and a run stops at its horizon."""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from master.chaos.rules import VirtualClock
from master.core.timers import SLACK_S, TimerHeap, TraceClock
from master.event_heap import EventHeap

TIMERS = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 2)), max_size=30)
"""(time, priority) pairs, in the order they are scheduled: few values, so ties are common."""


def tie_order(timers: list[tuple[int, int]], now: float = 0.0) -> list[int]:
    """The indices of ``timers`` in the order the rule runs them (a past time is ``now``)."""
    return sorted(range(len(timers)), key=lambda i: (max(timers[i][0], now), timers[i][1], i))


@settings(deadline=None)  # a loaded host's pauses are no failure
@given(TIMERS)
def test_actions_run_in_time_then_priority_then_insertion_order(timers: list[tuple[int, int]]) -> None:
    heap, ran, times = EventHeap(), [], []
    for i, (when, priority) in enumerate(timers):
        heap.at(when, priority, lambda i=i: (ran.append(i), times.append(heap.now)))
    while heap.step():
        pass
    assert ran == tie_order(timers)
    assert times == sorted(when for when, _ in timers)  # the clock moves to each action's time
    assert heap.popped == len(timers) and len(heap) == 0


@settings(deadline=None)
@given(TIMERS, st.integers(0, 4))
def test_a_time_already_past_is_now_then_ties_go_by_priority(timers: list[tuple[int, int]], now: int) -> None:
    heap, ran = EventHeap(now=now), []
    for i, (when, priority) in enumerate(timers):
        heap.at(when, priority, lambda i=i: ran.append((i, heap.now)))
    heap.run(math.inf)
    assert [i for i, _ in ran] == tie_order(timers, now)
    assert all(at == max(timers[i][0], now) for i, at in ran)  # a past action runs at now, not before


@settings(deadline=None)
@given(
    st.floats(allow_nan=False, width=64, min_value=0.0, max_value=1e6),
    st.floats(allow_nan=False, min_value=-1e6, max_value=1e6),
)
def test_an_action_is_due_at_the_later_of_its_time_and_now(now: float, delay: float) -> None:
    """``EventHeap.at`` and ``after`` clamp as ``max(when, now)`` does, bit for bit."""
    heap = EventHeap(now=now)
    heap.at(now + delay, 0, lambda: None)
    heap.after(delay, 0, lambda: None)
    expected = max(now + delay, now)
    assert [entry[0] for entry in heap.queue] == [expected, expected]
    assert all(math.copysign(1.0, entry[0]) == math.copysign(1.0, expected) for entry in heap.queue)


@settings(deadline=None)
@given(TIMERS, st.integers(-1, 5), st.integers(0, 3))
def test_a_run_takes_every_action_due_by_its_horizon_those_it_adds_too(
    timers: list[tuple[int, int]], horizon: int, later: int
) -> None:
    """Each action adds one ``later`` seconds on: those due by the horizon run (the added ones
    too), the others wait, the clock stops at the last one run, and the next run goes on."""
    heap, ran = EventHeap(), []

    def action(i: int, added: bool) -> None:
        ran.append((heap.now, i, added))
        if not added:
            heap.after(later, 0, lambda: action(i, True))

    for i, (when, priority) in enumerate(timers):
        heap.at(when, priority, lambda i=i: action(i, False))
    heap.run(horizon)
    due = {(i, False) for i, (when, _) in enumerate(timers) if when <= horizon}
    due |= {(i, True) for i, _ in due if timers[i][0] + later <= horizon}
    assert {(i, added) for _, i, added in ran} == due and len(ran) == len(due)
    assert all(entry[0] > horizon for entry in heap.queue)
    assert len(heap) == len(timers) - sum(added for _, added in due)  # a run original added one
    assert heap.now == (ran[-1][0] if ran else 0.0)
    heap.run(math.inf)
    assert len(ran) == 2 * len(timers) and [t for t, _, _ in ran] == sorted(t for t, _, _ in ran)


@settings(deadline=None)
@given(TIMERS, st.integers(0, 4))
def test_a_shift_keeps_every_actions_distance_and_order(timers: list[tuple[int, int]], origin: int) -> None:
    heap, shifted = EventHeap(now=1.0), EventHeap(now=1.0)
    for when, priority in timers:
        heap.at(when + origin, priority, lambda: None)
        shifted.at(when + origin, priority, lambda: None)
    shifted.shift(origin)
    assert shifted.now == 1.0 - origin
    assert sorted(e[:3] for e in shifted.queue) == [(t - origin, p, o) for t, p, o, _ in sorted(heap.queue)]


@settings(deadline=None)
@given(TIMERS, st.integers(0, 4))
def test_the_cores_timers_run_what_is_due_by_now_in_the_heaps_order(
    timers: list[tuple[int, int]], now: int
) -> None:
    """The core's timers (its ``now`` injected) are the heap: due by now (a hair's slack), in
    (time, priority, order); the next one is what a ``WakeAt`` asks for; set in the past is now."""
    clock = [0.0]
    core, ran = TimerHeap(lambda: clock[0]), []
    for i, (when, priority) in enumerate(timers):
        core.at(when, priority, lambda i=i: ran.append(i))
    clock[0] = now - SLACK_S / 2
    core.run_due()
    assert ran == [i for i in tie_order(timers) if timers[i][0] <= now]
    waiting = [when for when, _ in timers if when > now]
    assert core.wake_needed() == (min(waiting) if waiting else None) and len(core) == len(waiting)
    core.at(now - 1, 0, lambda: ran.append(-1))
    assert core.wake_needed() == clock[0]  # set in the past: due at once, at the core's now


def test_the_chaos_clocks_are_views_of_the_one_heap() -> None:
    """The plan's clock and the core's, in trace seconds, put the same actions on an
    ``EventHeap`` in the same order, read its time as theirs, and run them alike."""
    virtual, now = VirtualClock(time=2.0), [2.0 / 60]
    timers = TimerHeap(lambda: now[0])
    trace = TraceClock(timers, time_scale=60.0)
    logs: tuple[list[str], list[str]] = ([], [])
    for clock, log in zip((virtual, trace), logs, strict=True):
        assert math.isclose(clock.now(), 2.0)
        for when, priority, name in ((60.0, 1, "b"), (60.0, 0, "a"), (1.0, 2, "past")):
            clock.at(when, priority, lambda log=log, name=name: log.append(name))
    virtual.run(60.0)
    assert virtual.now() == 60.0
    timers.run_due()
    now[0] = 1.0
    timers.run_due()
    assert logs[0] == logs[1] == ["past", "a", "b"]
