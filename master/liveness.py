"""Liveness verdicts: pure functions of what the master knows and the time.

The master's shell feeds them its records and the clock and applies what they
return; they never look at a clock or a socket themselves, so each is tested
on hand-built states with a virtual clock (tests/test_liveness.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

STRIKES_TO_VANISH = 2
"""Consecutive heartbeats that must omit a task before the master stops believing it runs."""


@dataclass(frozen=True)
class Launched:
    """A task attempt the master believes runs on a node, and when its launch was last sent."""

    attempt: int
    sent_at: float


@dataclass(frozen=True)
class Reconciled:
    strikes: dict[str, int]
    """Per task: consecutive heartbeats (counted after the grace) that did not list it."""
    vanished: tuple[str, ...]
    """Tasks the master must fail and relaunch: the node does not run them."""
    stray: tuple[tuple[str, int], ...]
    """(task, attempt) the node runs that the master does not expect there: to cancel."""


def reconcile(
    expected: Mapping[str, Launched],
    reported: Mapping[str, int],
    strikes: Mapping[str, int],
    now: float,
    grace_s: float,
) -> Reconciled:
    """Compare a heartbeat's running attempts (``reported``: task -> attempt) with the master's view.

    A launch sent less than ``grace_s`` ago may not have reached the node when it
    sent this heartbeat, so its absence does not count yet; after that, a task
    missing from ``STRIKES_TO_VANISH`` heartbeats in a row has vanished (its
    worker start failed unreported, its launch was lost, its agent forgot it).
    """
    new_strikes: dict[str, int] = {}
    vanished = []
    for task_id, launched in expected.items():
        if reported.get(task_id) == launched.attempt or now - launched.sent_at < grace_s:
            continue
        count = strikes.get(task_id, 0) + 1
        if count >= STRIKES_TO_VANISH:
            vanished.append(task_id)
        else:
            new_strikes[task_id] = count
    stray = tuple(
        (task_id, attempt)
        for task_id, attempt in reported.items()
        if task_id not in expected or expected[task_id].attempt != attempt
    )
    return Reconciled(new_strikes, tuple(vanished), stray)
