"""The recovery-strategy API (``testbed.api``) against the core that implements it: the view
hands out the core's own records, so each must have every member the API's Protocols
declare; every event has its handler and every decision is applied."""

from __future__ import annotations

import typing
from types import MappingProxyType

import pytest

from master.core.jobs import JobRuntime
from master.core.recovery import HANDLERS, CoreView
from testbed import api
from tests.support.driver import Driver
from tests.support.scenarios import make_scenario


def declared(protocol: type) -> set[str]:
    """The members a Protocol declares (its properties and methods)."""
    return {name for name in vars(protocol) if not name.startswith("_")}


@pytest.fixture
def driver() -> Driver:
    """A core with a wordcount job running on one reserved and three transient nodes."""
    driver = Driver(make_scenario())
    driver.boot()
    return driver


def test_the_core_records_have_every_member_the_api_declares(driver: Driver) -> None:
    view = driver.core.recovery.view
    job = view.jobs["j000"]
    node = next(iter(view.nodes.values()))
    task = job.tasks[(0, 0)]
    for record, protocol in ((job, api.LiveJob), (task, api.LiveTask), (node, api.LiveNode)):
        missing = {name for name in declared(protocol) if not hasattr(record, name)}
        assert not missing, f"{type(record).__name__} lacks {protocol.__name__}'s {sorted(missing)}"
    assert declared(api.StrategyView) <= set(dir(view))
    assert task.status in typing.get_args(api.TaskStatus)
    assert job.status in typing.get_args(api.JobStatus)
    assert node.status in typing.get_args(api.NodeStatus)


def test_the_view_is_the_cores_state_read_only_and_not_a_copy(driver: Driver) -> None:
    view = driver.core.recovery.view
    assert isinstance(view, CoreView)
    assert isinstance(view.jobs, MappingProxyType) and isinstance(view.nodes, MappingProxyType)
    assert view.jobs["j000"] is driver.core.jobs["j000"]  # nothing copied: a query costs a lookup
    with pytest.raises(TypeError):
        view.jobs["j001"] = view.jobs["j000"]  # type: ignore[index]
    assert view.now() == driver.core.journal.now()


def test_every_event_has_its_handler_with_a_default() -> None:
    events = set(typing.get_args(api.StrategyEvent))
    assert set(HANDLERS) == events
    for event, handler in HANDLERS.items():
        assert callable(getattr(api.Strategy, handler)), event


def test_every_decision_is_applied_by_the_core(driver: Driver) -> None:
    """A decision type the core does not know raises; each of the API's is known (a stale
    one, for a task that moved on, changes nothing)."""
    recovery = driver.core.recovery
    job: JobRuntime = driver.core.jobs["j000"]
    key, node = (0, 0), next(iter(driver.core.nodes))
    block = api.BlockRef(block="j000.s0.t0.a0", partition=0, locations=("http://x",))
    target = api.PushTarget(node_id=node, url="http://x", partitions=(0,))
    examples = {
        api.Note: api.Note("push_failed", {"job": "j000", "task": job.task_id(key), "error": "x"}),
        api.WriteFile: api.WriteFile("notes.txt", "x\n"),
        api.SetUpReceiver: api.SetUpReceiver("j000", key, node),
        api.FeedReceiver: api.FeedReceiver(
            node, api.TaskInputs(task_id=job.task_id(key), attempt=0, dependency=0, refs=(block,), last=True)
        ),
        api.Flush: api.Flush(
            node,
            api.FlushAggregate(
                block="j000.s0.x0",
                op="wordcount_map",
                members=("j000.s0.t0.a0",),
                partitions=1,
                push=(target,),
            ),
        ),
        api.CommitPush: api.CommitPush("j000", key, 0, ()),
        api.AbandonPush: api.AbandonPush("j000", key, 0),
        api.CountPushed: api.CountPushed("j000", 0),
        api.AddReplica: api.AddReplica("j000", key, "j000.s0.t0.a0", node, "http://x", 0),
        api.Reopen: api.Reopen("j000", key),
        api.Recover: api.Recover("j000"),
        api.Reschedule: api.Reschedule(),
    }
    assert set(examples) == set(typing.get_args(api.StrategyDecision))
    for decision in examples.values():
        driver.act(recovery.apply, decision)
    with pytest.raises(TypeError, match="not a strategy decision"):
        recovery.apply("reschedule")  # type: ignore[arg-type]
