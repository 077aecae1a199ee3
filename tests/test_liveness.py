"""Liveness verdicts on hand-built states and a virtual clock (master/core/liveness.py), and the
master applying them to the heartbeats it receives."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from master.core.liveness import (
    MAX_VANISH_RESENDS,
    START_CPU_S,
    START_TIMEOUT_S,
    STARTS_PER_CORE,
    STRIKES_TO_VANISH,
    Launched,
    after_probe,
    everyone_quiet,
    is_silent,
    launches_now,
    patience_s,
    reconcile,
    silent_unasked,
    start_deadline_s,
    start_window,
)
from master.shell.master import Master, NodeRecord
from master.summary.cluster import shortfall
from testbed.wire.protocol import CancelTask, Codec, Heartbeat, LaunchTask, TaskUpdate
from tests.support.masters import Clock, master_with_a_node, shell_act

RESEND = 3.0


def test_a_task_listed_by_the_node_is_fine() -> None:
    verdict = reconcile({"t": Launched(1, 0.0, acked=True)}, {"t": 1}, {}, now=10.0, resend_s=RESEND)
    assert (verdict.vanished, verdict.resend, verdict.stray, verdict.strikes) == ((), (), (), {})


def test_an_unacknowledged_launch_is_sent_again_never_failed() -> None:
    """On a loaded machine a launch may be in flight for seconds; or a broker lost it."""
    expected = {"t": Launched(0, 10.0)}
    for beat in range(10):  # heartbeats built before the launch arrived
        verdict = reconcile(expected, {}, {}, now=10.0 + beat * RESEND / 10, resend_s=RESEND)
        assert verdict.vanished == verdict.resend == () and verdict.strikes == {}
    assert reconcile(expected, {}, {}, now=10.0 + RESEND + 0.1, resend_s=RESEND).resend == ("t",)


def test_an_acknowledged_task_missing_from_consecutive_heartbeats_vanishes() -> None:
    expected = {"t": Launched(0, 0.0, acked=True)}
    strikes: dict[str, int] = {}
    for beat in range(STRIKES_TO_VANISH):
        verdict = reconcile(expected, {}, strikes, now=0.5 + beat * 0.5, resend_s=RESEND)
        strikes = verdict.strikes
    assert verdict.vanished == ("t",) and verdict.resend == ()


def test_a_heartbeat_that_lists_the_task_again_clears_its_strikes() -> None:
    expected = {"t": Launched(0, 0.0, acked=True)}
    first = reconcile(expected, {}, {}, now=1.0, resend_s=RESEND)
    assert first.strikes == {"t": 1}
    again = reconcile(expected, {"t": 0}, first.strikes, now=1.5, resend_s=RESEND)
    later = reconcile(expected, {}, again.strikes, now=2.0, resend_s=RESEND)
    assert again.strikes == {} and later.vanished == ()


def test_an_older_attempt_counts_as_missing_and_is_stray() -> None:
    expected = {"t": Launched(2, 0.0, acked=True)}
    verdict = reconcile(expected, {"t": 1, "u": 0}, {"t": 1}, now=5.0, resend_s=RESEND)
    assert verdict.vanished == ("t",)
    assert verdict.stray == (("t", 1), ("u", 0))


async def test_the_master_relaunches_a_task_its_node_stopped_listing(tmp_path: Path) -> None:
    clock = Clock()
    master, node = master_with_a_node(tmp_path, clock)
    node.incarnation = "i1"
    shell_act(master, master.core.submit_job, master.scenario.jobs[0], 0)
    master.schedule_once()
    task_id, (job, key) = next(iter(node.running.items()))
    attempt = job.tasks[key].attempt
    codec = Codec()

    def beat(seq: int, attempts: dict[str, int]) -> None:
        message = Heartbeat(node_id=node.node_id, incarnation="i1", seq=seq, attempts=attempts)
        master._on_message(master.topics.heartbeat(node.node_id), codec.encode(message))

    listed = {t: j.tasks[k].attempt for t, (j, k) in node.running.items()}
    for _ in range(4):  # heartbeats built before the launches arrived: nothing is failed
        beat(1, {})
        clock.now += 1.0
    assert set(node.running) == set(listed)  # the launches were sent again instead

    def ack(task: str) -> None:
        update = TaskUpdate(node_id=node.node_id, task_id=task, attempt=listed[task], state="running")
        master._on_message(master.topics.task_updates(node.node_id), codec.encode(update))

    for t in listed:
        ack(t)
    beat(2, listed)
    unlisted = {t: a for t, a in listed.items() if t != task_id}
    beat(3, {**unlisted, "j000.s0.t99": 0})  # and an attempt it should not run at all
    assert sent(master, CancelTask, "j000.s0.t99") == [0]
    for _ in range(4 * MAX_VANISH_RESENDS):  # it acknowledges each launch and forgets it again
        beat(4, unlisted)
        if task_id not in node.running:
            break
        ack(task_id)
    assert task_id not in node.running and job.tasks[key].status == "pending"
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    unaccounted = [
        (e["event"], e["action"])
        for e in map(json.loads, lines)
        if e["event"] in ("task_vanished", "launch_unacknowledged") and e["task"] == task_id
    ]
    assert unaccounted == [
        ("launch_unacknowledged", "resent"),
        *[("task_vanished", "resent")] * (MAX_VANISH_RESENDS - 1),
        ("task_vanished", "failed"),
    ]
    assert sent(master, LaunchTask, task_id) == [attempt] * (MAX_VANISH_RESENDS + 1)
    master.schedule_once()  # relaunched: a new attempt
    assert job.tasks[key].status == "running" and job.tasks[key].attempt == attempt + 1
    master.journal.close()


def sent(master: Master, kind: type, task_id: str) -> list[int]:
    """The attempts of the commands of this kind queued for this task."""
    codec = Codec()
    queued = [codec.decode(payload) for _, payload, _ in list(master.link._outbox._queue)]  # type: ignore[attr-defined]
    if kind is LaunchTask:
        return [m.task.attempt for m in queued if isinstance(m, LaunchTask) and m.task.task_id == task_id]
    return [m.attempt for m in queued if isinstance(m, kind) and m.task_id == task_id]


# ------------------------------------------------------------------ silent nodes

INTERVAL, TIMEOUT = 0.5, 3.0


def test_quiet_is_judged_over_a_window_not_at_one_instant() -> None:
    """A stalled broker silences nodes one by one (heartbeats are not synchronised): when
    the first passes its timeout, the others have missed beats too, though not the timeout."""
    now = 10.0
    staggered = [now - TIMEOUT - 0.1, now - TIMEOUT + 0.4, now - 1.2]
    assert everyone_quiet(staggered, now, INTERVAL)
    assert not everyone_quiet([*staggered, now - 0.2], now, INTERVAL)  # one is still heard
    assert not everyone_quiet([now - TIMEOUT - 1], now, INTERVAL)  # one node is not a cluster


def test_probe_verdicts() -> None:
    patience = patience_s(TIMEOUT)
    timing = {"patience": patience, "timeout_s": TIMEOUT}
    assert after_probe("refused", 3.5, lenient=True, **timing) == "lost"
    assert after_probe("silent", 3.5, lenient=False, **timing) == "lost"
    assert after_probe("silent", 3.5, lenient=True, **timing) == "wait"
    assert after_probe("answered", 3.5, lenient=False, **timing) == "alive"
    assert after_probe("answered", patience + 1, lenient=True, **timing) == "lost"
    assert after_probe("silent", patience + 1, lenient=True, **timing) == "lost"


def test_a_node_heard_again_since_it_was_asked_is_alive_whatever_its_probe_says() -> None:
    """A probe sent into a 10 s freeze times out just after the agents thaw; by then the node
    has heartbeated again and the cluster is no longer quiet: it is not lost (it was, in
    about one run in four of tests/reliability/test_freezes.py)."""
    timing = {"patience": patience_s(TIMEOUT), "timeout_s": TIMEOUT}
    assert after_probe("silent", 0.04, lenient=False, **timing) == "alive"
    assert after_probe("refused", 0.04, lenient=False, **timing) == "lost"  # nothing listens: dead


def test_a_ten_second_freeze_of_everyone_is_within_the_patience() -> None:
    """The scenario of issue 23.6 on a virtual clock: every agent frozen for 10 s, each probed
    every timeout; none is lost, whatever the phase of its heartbeats."""
    for timeout in (2.0, 3.0):
        last_seen = [0.0, 0.2, 0.4]
        for now in [t / 10 for t in range(0, 101)]:
            for heard in last_seen:
                if is_silent(heard, now, timeout):
                    quiet = everyone_quiet(last_seen, now, INTERVAL)
                    verdict = after_probe("silent", now - heard, quiet, patience_s(timeout), timeout)
                    assert verdict == "wait"


# ------------------------------------------------------------------ start-up


def test_the_start_window_bounds_the_nodes_starting_at_once() -> None:
    assert start_window(2, None) == 2 * STARTS_PER_CORE
    assert start_window(2, 3) == 3 and start_window(2, 0) is None  # 0: all at once
    assert launches_now(starting=0, remaining=200, window=4) == 4
    assert launches_now(starting=3, remaining=200, window=4) == 1
    assert launches_now(starting=4, remaining=200, window=4) == 0
    assert launches_now(starting=1, remaining=2, window=4) == 2
    assert launches_now(starting=7, remaining=200, window=None) == 200


def test_the_start_deadline_grows_with_the_nodes_starting_alongside() -> None:
    """200 nodes launched at once on 2 cores each wait for all the others' CPU."""
    assert start_deadline_s(1, 2) < START_TIMEOUT_S + 1
    assert start_deadline_s(200, 2) >= START_TIMEOUT_S + 150


def test_a_node_held_to_a_small_quota_gets_the_time_its_own_start_needs_at_that_quota() -> None:
    """A faithful node of 0.02 cores spends 1.5 CPU seconds starting: 75 s at its quota, on an idle
    host too (it was given up after 61 s: tests/e2e/test_progress_run.py on every busy host)."""
    assert start_deadline_s(1, 2, quota=0.02) >= START_TIMEOUT_S + START_CPU_S / 0.02
    assert start_deadline_s(1, 2, quota=None) == start_deadline_s(1, 2)
    assert start_deadline_s(1, 2, quota=4) < start_deadline_s(1, 2, quota=0.5)


def test_the_nodes_to_probe_are_the_silent_ones_not_asked_already() -> None:
    """Silent since the last heartbeat or the last answer to a probe; a node being probed is
    not asked twice; the order is the registry's."""
    heard = {"a": 0.0, "b": 9.0, "c": 0.0, "d": 0.0, "e": 1.0}
    answered = {"c": 8.0, "e": 0.5}
    probing = {"d"}
    assert silent_unasked(heard, answered, probing, now=10.0, timeout_s=2.0) == ["a", "e"]
    assert silent_unasked(heard, answered, set(), now=10.0, timeout_s=2.0) == ["a", "d", "e"]
    assert silent_unasked(heard, answered, probing, now=10.5, timeout_s=2.0) == ["a", "c", "e"]
    assert silent_unasked(heard, {}, probing, now=2.0, timeout_s=2.0) == []  # exactly the timeout


def test_a_cluster_shortfall_is_one_sentence() -> None:
    full = {"asked": {"reserved": 1, "transient": 50}, "started": {"reserved": 1, "transient": 50}}
    assert shortfall({**full, "start_failures": 0, "unplanned_losses": {}}) is None
    short = {**full, "started": {"reserved": 0, "transient": 38}, "start_failures": 13}
    lost = {"heartbeat_timeout": 11, "crashed": 1}
    assert shortfall({**short, "unplanned_losses": lost}) == (
        "started with 0 reserved + 38 transient nodes of 1 + 50 asked (13 did not come up); "
        "lost 11 node(s) to heartbeat timeout, 1 node(s) to crashed that no eviction caused"
    )


async def test_while_the_cluster_starts_a_frozen_node_is_waited_for(tmp_path: Path) -> None:
    """Starting agents keep the machine busy: an up node that misses heartbeats and does not
    answer then is not killed; once the run has started, it is."""
    clock = Clock()
    with socket.socket() as frozen:
        frozen.bind(("127.0.0.1", 0))
        frozen.listen()
        master, node = master_with_a_node(tmp_path, clock, started=False)
        node.url = f"http://127.0.0.1:{frozen.getsockname()[1]}"
        clock.now += 2.1  # make_scenario's heartbeat_timeout is 2 s
        shell_act(master, master.core.watch.check_heartbeats)
        await master._settle()
        assert node.status == "up"
        master.begin()  # the run starts
        shell_act(master, master.core.watch.check_heartbeats)
        await master._settle()
        assert node.status == "lost"
    master.journal.close()


async def test_a_node_that_does_not_come_up_in_time_is_given_up_on(tmp_path: Path) -> None:
    clock = Clock()
    master, node = master_with_a_node(tmp_path, clock, started=False)  # transient-0 is up
    deadline = start_deadline_s(1, os.cpu_count() or 2)
    late = NodeRecord("transient-1", "transient", 1, -deadline - 1, 2, 1024, 0.3)
    master.nodes[late.node_id] = late
    await master.starts.until_cluster_up(master.journal.now, master._handle)
    assert (node.status, late.status) == ("up", "lost")
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    assert [e["node"] for e in map(json.loads, lines) if e["event"] == "node_start_failed"] == ["transient-1"]
    assert "start_failed" in (tmp_path / "nodes.csv").read_text()
    master.journal.close()
