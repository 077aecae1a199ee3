"""Liveness verdicts: pure functions of what the master knows and the time.

The master's shell feeds them its records and the clock and applies what they
return; they never look at a clock or a socket themselves, so each is tested
on hand-built states with a virtual clock (tests/test_liveness.py).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

STRIKES_TO_VANISH = 2
"""Consecutive heartbeats that must omit a task before the master stops believing it runs."""
MAX_VANISH_RESENDS = 3
"""A launch unaccounted for (never acknowledged, or vanished) is sent again this many times
before the attempt is failed and relaunched."""


@dataclass(frozen=True)
class Launched:
    """A task attempt the master believes runs on a node: when its launch was last sent, and
    whether the node has acknowledged it (its ``running`` update)."""

    attempt: int
    sent_at: float
    acked: bool = False


@dataclass(frozen=True)
class Reconciled:
    strikes: dict[str, int]
    """Per task: consecutive heartbeats that did not list it although the node had acknowledged it."""
    vanished: tuple[str, ...]
    """Tasks the master must fail and relaunch: the node acknowledged them and runs them no more."""
    resend: tuple[str, ...]
    """Launches not acknowledged for ``resend_s``: sent again (a launch is idempotent)."""
    stray: tuple[tuple[str, int], ...]
    """(task, attempt) the node runs that the master does not expect there: to cancel."""


def reconcile(
    expected: Mapping[str, Launched],
    reported: Mapping[str, int],
    strikes: Mapping[str, int],
    now: float,
    resend_s: float,
) -> Reconciled:
    """Compare a heartbeat's running attempts (``reported``: task -> attempt) with the master's view.

    Only an attempt the node acknowledged can have vanished: a heartbeat that
    arrives after the acknowledgement was built after the launch (one
    connection, in order), so a task missing from ``STRIKES_TO_VANISH`` of them
    in a row is gone (its worker start failed unreported, its agent forgot it).
    A launch not yet acknowledged may be in flight on a loaded machine, or lost
    with a broker: after ``resend_s`` it is sent again, never failed.
    """
    new_strikes: dict[str, int] = {}
    vanished, resend = [], []
    for task_id, launched in expected.items():
        if reported.get(task_id) == launched.attempt:
            continue
        if not launched.acked:
            if now - launched.sent_at > resend_s:
                resend.append(task_id)
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
    return Reconciled(new_strikes, tuple(vanished), tuple(resend), stray)


# ------------------------------------------------------------------ silent nodes

ProbeOutcome = Literal["answered", "refused", "silent"]
"""What asking an agent directly (``GET /health``) gave: an answer from the same incarnation;
a refusal (nothing listens, another process answers: it is dead); or no answer in time (frozen,
or too busy to answer)."""
Verdict = Literal["alive", "lost", "wait"]
QUIET_BEATS = 2
"""A node that missed this many heartbeat intervals is quiet (not yet silent)."""


def is_silent(heard_at: float, now: float, timeout_s: float) -> bool:
    """Silent: not heard from (by heartbeat, or by a probe it answered) for ``timeout_s``."""
    return now - heard_at > timeout_s


def silent_unasked(
    last_seen: Mapping[str, float],
    answered: Mapping[str, float],
    probing: Container[str],
    now: float,
    timeout_s: float,
) -> list[str]:
    """The live nodes (``last_seen``: node -> last heartbeat) to ask directly now: silent for
    ``timeout_s`` since their last heartbeat or their last answer to a probe, and not being
    asked already (``probing``). In the order of ``last_seen``."""
    return [
        node_id
        for node_id, seen in last_seen.items()
        if node_id not in probing and is_silent(max(seen, answered.get(node_id, seen)), now, timeout_s)
    ]


def everyone_quiet(last_seen: Iterable[float], now: float, interval_s: float) -> bool:
    """Every live node (two or more) has missed heartbeats: judged over a window of
    ``QUIET_BEATS`` intervals, not at the one instant the first of them passes its timeout
    (heartbeats are not synchronised, so a stalled broker silences nodes one by one)."""
    seen = list(last_seen)
    return len(seen) > 1 and all(now - t > QUIET_BEATS * interval_s for t in seen)


def patience_s(timeout_s: float) -> float:
    """How long a whole quiet cluster may stay silent before its unanswering nodes are lost."""
    return max(30.0, 10 * timeout_s)


def after_probe(
    outcome: ProbeOutcome, silent_for: float, lenient: bool, patience: float, timeout_s: float
) -> Verdict:
    """A silent node was asked directly. Dead (refused) is lost at once. A node heard again
    since (silent for less than ``timeout_s`` now) is alive whatever its probe says: a probe
    sent to a frozen agent can time out just after the agent thaws and heartbeats. A node
    silent alone that does not answer is frozen or overloaded: lost. ``lenient`` when the
    whole cluster is quiet (the control plane, a stalled broker, or the whole host, a pause,
    is more likely at fault) or while the cluster is still starting (the machine is busy
    starting agents): then wait and ask again, up to ``patience`` seconds of silence. A node
    that answers but stays silent on MQTT longer than that cannot be commanded either: lost."""
    if outcome == "refused" or silent_for > patience:
        return "lost"
    if outcome == "answered" or silent_for < timeout_s:
        return "alive"
    return "wait" if lenient else "lost"


# ------------------------------------------------------------------ start-up

START_TIMEOUT_S = 60.0
"""A node launched this long ago that has not come up (started its agent and warmed its task
forkserver) is given up on."""


STARTS_PER_CORE = 32


def start_window(cpus: int, configured: int | None) -> int | None:
    """How many nodes may be starting at once (None: no limit). Starting an agent costs about
    1.5 s of CPU (imports, then its forkserver preloading numpy), and the agents already up
    are never judged by a start they are not part of (they announce themselves once started,
    and silence is forgiven until the run starts), so the window only bounds the burst: on a
    shared machine the starting agents' share of the CPU grows with their number, and a small
    window made start-up slower (docs/benchmarks.md: 50 nodes in 118 s four at a time, 47 s
    sixteen at a time, 37 s all at once)."""
    if configured is not None:
        return configured or None
    return max(2, STARTS_PER_CORE * cpus)


START_CPU_S = 1.5
"""About the CPU seconds one node's start takes (its agent's imports, its forkserver's preload)."""


def start_deadline_s(starting: int, cpus: int, quota: float | None = None) -> float:
    """How long a node may take to come up: ``START_TIMEOUT_S``, plus the CPU the ``starting``
    nodes need shared by the cores (all launched at once, each waits for all the others), plus,
    for a node held to ``quota`` cores (a faithful node's CPU limit), its own start at that
    quota: a node of 0.02 cores needs 75 s for the 1.5 CPU seconds, however idle the host."""
    own = START_CPU_S / quota if quota else 0.0
    return START_TIMEOUT_S + START_CPU_S * starting / max(1, cpus) + own


def launches_now(starting: int, remaining: int, window: int | None) -> int:
    """How many of the ``remaining`` nodes to launch now, ``starting`` being under way."""
    room = remaining if window is None else window - starting
    return max(0, min(remaining, room))
