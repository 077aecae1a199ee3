"""The node, task and job lifecycles: their tables, and the records that obey them."""

from __future__ import annotations

from typing import get_args

import pytest

from master.core.jobs import JobRuntime
from master.core.lifecycle import (
    JOB,
    NODE,
    TASK,
    IllegalTransition,
    JobEvent,
    JobStatus,
    Lifecycle,
    NodeEvent,
    NodeStatus,
    TaskEvent,
    TaskStatus,
)
from master.core.nodes import NodeRecord
from testbed.plan import Dependency, JobPlan, StagePlan

TABLES = [(TASK, TaskStatus, TaskEvent), (NODE, NodeStatus, NodeEvent), (JOB, JobStatus, JobEvent)]


@pytest.mark.parametrize(("lifecycle", "states", "events"), TABLES, ids=lambda t: getattr(t, "name", ""))
def test_every_state_and_event_is_in_its_table(lifecycle: Lifecycle, states, events) -> None:
    assert set(lifecycle.table) == set(get_args(states))
    used = {event for accepted in lifecycle.table.values() for event in accepted}
    assert used == set(get_args(events))


@pytest.mark.parametrize(("lifecycle", "states", "events"), TABLES, ids=lambda t: getattr(t, "name", ""))
def test_an_event_a_state_does_not_accept_raises(lifecycle: Lifecycle, states, events) -> None:
    for state in get_args(states):
        for event in get_args(events):
            if event in lifecycle.table[state]:
                assert lifecycle.next(state, event) == lifecycle.table[state][event]
            else:
                with pytest.raises(IllegalTransition, match=f"no '{event}' in state '{state}'"):
                    lifecycle.next(state, event)


def test_the_task_table() -> None:
    assert TASK.next("pending", "launch") == "running"
    assert TASK.next("running", "succeed_pushing") == "pushing"
    assert TASK.next("pushing", "commit") == "done"
    assert TASK.next("done", "input_lost") == "pending"
    assert TASK.terminal == frozenset()  # a done output may always be lost and recomputed
    with pytest.raises(IllegalTransition):
        TASK.next("pending", "commit")  # only a pushed output is committed
    with pytest.raises(IllegalTransition):
        TASK.check("pending", "pushing")


def test_the_node_table() -> None:
    assert NODE.terminal == {"lost", "gone"}
    assert NODE.next("draining", "undrain") == "up"
    with pytest.raises(IllegalTransition):
        NODE.next("launching", "drain")  # a node that never joined has nothing to drain
    with pytest.raises(IllegalTransition):
        NODE.check("lost", "up")  # a lost node comes back as a new node, never the same record


def test_the_job_table() -> None:
    assert JOB.terminal == {"succeeded", "failed"}
    with pytest.raises(IllegalTransition):
        JOB.check("succeeded", "failed")


def test_a_table_into_an_undeclared_state_is_refused() -> None:
    with pytest.raises(ValueError, match="undeclared states"):
        Lifecycle("broken", {"a": {"go": "b"}})


def two_stage_job() -> JobRuntime:
    plan = JobPlan(
        "test", (StagePlan("map", 2), StagePlan("reduce", 1, deps=(Dependency(0, "shuffle"),), final=True))
    )
    return JobRuntime("j000", "t", "test", plan, 0.0, 64)


def test_a_task_record_refuses_an_illegal_assignment() -> None:
    job = two_stage_job()
    record = job.tasks[(0, 0)]
    with pytest.raises(IllegalTransition, match="from 'pending' to 'pushing'"):
        record.status = "pushing"
    assert record.status == "pending" and job.progress.counts["pushing"] == 0
    record.status = "pending"  # no change: allowed


def test_the_job_methods_follow_the_task_table() -> None:
    job = two_stage_job()
    job.launched((0, 0), "n0", 64, 0.0)
    job.succeeded((0, 0), 0, "http://n0", "b", (1,), pushing=True)
    assert job.tasks[(0, 0)].status == "pushing" and job.status == "running"
    assert job.committed((0, 0), 0, ("http://r0",))
    assert job.tasks[(0, 0)].status == "done"
    job.node_lost("n0", "http://n0")
    assert job.tasks[(0, 0)].status == "done"  # the committed copy on r0 survives
    job.node_lost("r0", "http://r0")
    assert job.tasks[(0, 0)].status == "pending"  # input_lost: the pending reduce needs it


def test_a_finished_job_keeps_its_verdict() -> None:
    job = two_stage_job()
    job.status = "succeeded"
    with pytest.raises(IllegalTransition):
        job.status = "running"


def test_a_node_record_refuses_an_illegal_assignment() -> None:
    node = NodeRecord("transient-0", "transient", 0, 0.0, 1, 256, 0.3)
    with pytest.raises(IllegalTransition, match="from 'launching' to 'draining'"):
        node.status = "draining"
    node.status = "up"
    node.status = "lost"
    with pytest.raises(IllegalTransition):
        node.status = "up"
