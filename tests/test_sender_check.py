"""The master's check of who reports what: each agent for its own node, tasks and pushes."""

from __future__ import annotations

import pytest

from master.core.commands import Journal, Log
from master.core.outbox import CoreJournal, Outbox
from master.core.senders import SenderCheck
from testbed.wire.protocol import CancelTask, FlushAggregate, Heartbeat, PushDelivered, PushTarget, TaskUpdate


@pytest.fixture
def outbox() -> Outbox:
    return Outbox()


@pytest.fixture
def check(outbox: Outbox) -> SenderCheck:
    senders = SenderCheck(CoreJournal(outbox))
    senders.launched("j000.s0.t0", 0, "transient-0")
    senders.launched("j000.s0.t0", 1, "transient-1")
    target = PushTarget(node_id="reserved-0", url="http://r", partitions=(0,))
    flush = FlushAggregate(
        block="agg-1", op="wordcount", members=("j000.s0.t3.a0",), partitions=1, push=(target,)
    )
    senders.sent("transient-2", flush)
    return senders


def update(node: str, attempt: int) -> TaskUpdate:
    return TaskUpdate(node_id=node, task_id="j000.s0.t0", attempt=attempt, state="succeeded")


def pushed(node: str, task: str, attempt: int, block: str) -> PushDelivered:
    return PushDelivered(node_id=node, task_id=task, attempt=attempt, block=block)


def test_each_node_reports_its_own_attempts(check: SenderCheck) -> None:
    assert check.allows("transient-0", update("transient-0", 0), latest_attempt=1)
    assert check.allows("transient-1", update("transient-1", 1), latest_attempt=1)
    assert check.forged == 0


@pytest.mark.parametrize(
    ("sender", "message"),
    [
        ("transient-1", update("transient-1", 0)),  # attempt 0 ran on transient-0
        ("transient-0", update("transient-0", 1)),  # attempt 1 runs on transient-1
        ("transient-0", update("transient-0", 2)),  # never launched
        ("transient-0", update("transient-1", 1)),  # names another node
        ("transient-0", Heartbeat(node_id="transient-1", incarnation="i", seq=1)),
        ("transient-0", pushed("transient-0", "j000.s0.t0", 1, "j000.s0.t0.a1")),  # transient-1's push
        ("transient-0", pushed("transient-0", "agg-1", 0, "agg-1")),  # transient-2 makes agg-1
    ],
)
def test_reports_of_what_another_node_runs_are_forged(
    check: SenderCheck, outbox: Outbox, sender: str, message: TaskUpdate
) -> None:
    assert not check.allows(sender, message, latest_attempt=1 if isinstance(message, TaskUpdate) else None)
    assert check.forged == 1
    said = outbox.take()
    journaled = [(c.kind, c.fields["node"]) for c in said if isinstance(c, Journal)]
    assert journaled == [("forged_message", sender)]
    assert [c.level for c in said if isinstance(c, Log)] == ["warning"]


def test_pushes_of_own_attempts_and_aggregates_are_allowed(check: SenderCheck) -> None:
    assert check.allows("transient-1", pushed("transient-1", "j000.s0.t0", 1, "j000.s0.t0.a1"))
    assert check.allows("transient-2", pushed("transient-2", "agg-1", 0, "agg-1"))
    assert check.forged == 0


def test_a_late_update_of_an_attempt_the_master_cancelled_is_no_forgery(
    check: SenderCheck, outbox: Outbox
) -> None:
    check.sent("transient-1", CancelTask(task_id="j000.s0.t0", attempt=1))  # the copy lost
    assert not check.allows("transient-1", update("transient-1", 1), latest_attempt=0)
    assert (check.late, check.forged) == (1, 0)
    assert [type(c) for c in outbox.take()] == [Log]  # a debug line, no journal event
    assert not check.allows("transient-0", update("transient-0", 1), latest_attempt=0)  # not its node
    assert not check.allows("transient-1", update("transient-1", 2), latest_attempt=0)  # never launched
    assert (check.late, check.forged) == (1, 2)
