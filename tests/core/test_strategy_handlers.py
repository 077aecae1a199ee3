"""Recovery strategies as the core's event handlers (``testbed.api``'s strategy interface): a strategy
reads the view and returns decisions; only the core, applying them, changes its state."""

from __future__ import annotations

from typing import Any

import pytest

from master.core import commands as cmd
from master.core.events import EvictRequest, FromNode, Round
from master.core.jobs import JobRuntime
from master.core.machine import MasterCore
from master.core.recovery import HANDLERS
from master.policy_setup import make_strategy
from testbed.api import (
    CommitPush,
    JobSubmitted,
    Note,
    Reopen,
    Strategy,
    StrategyDecision,
    StrategyView,
    TaskSucceeded,
    WriteFile,
)
from testbed.scenario.chaos import EvictSpec
from testbed.scenario.schema import Scenario
from tests.support.driver import Driver, up
from tests.support.scenarios import make_scenario


def fingerprint(core: MasterCore) -> Any:
    """Everything of the core's state a strategy could change by mistake."""
    tasks = {
        (job.job_id, key): (r.status, r.attempt, r.node, r.location, r.replicas, r.available, r.block)
        for job in core.jobs.values()
        for key, r in job.tasks.items()
    }
    jobs = {j.job_id: (j.status, j.bytes_pushed, j.bytes_checkpointed) for j in core.jobs.values()}
    nodes = {n.node_id: (n.status, tuple(n.running), tuple(n.queued)) for n in core.nodes.values()}
    return tasks, jobs, nodes, len(core.outbox._commands)  # nothing sent, journaled or asked for


class Watched:
    """Wraps a strategy: every query and handler must leave the core as it found it."""

    def __init__(self, inner: Strategy, core: list[MasterCore]) -> None:
        self.inner, self.core, self.calls = inner, core, 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if not (name.startswith("on_") or name in ("plan", "launch")):
            return attribute

        def watched(*args: Any) -> Any:
            before = fingerprint(self.core[0])
            result = attribute(*args)
            result = list(result) if name == "plan" else result
            assert fingerprint(self.core[0]) == before, f"{name} changed the core's state"
            self.calls += 1
            return result

        return watched


def watched_driver(scenario: Scenario) -> tuple[Driver, Watched]:
    cores: list[MasterCore] = []
    watched = Watched(make_strategy(scenario), cores)
    driver = Driver(scenario, strategy=watched)
    cores.append(driver.core)
    return driver, watched


@pytest.mark.parametrize("strategy", ["spark", "spark-checkpoint", "pado"])
def test_no_query_or_handler_changes_the_cores_state(strategy: str) -> None:
    options = {"pado": {"aggregate_max_tasks": 2}} if strategy == "pado" else {}
    driver, watched = watched_driver(
        make_scenario(
            policy={"strategy": strategy, "options": options},
            jobs=[{"workload": "wordcount", "size_mb": 4, "maps": 6, "reduces": 2}],
        )
    )
    driver.boot()
    driver.do(Round())
    node_id = next(n for n, s in driver.running().values() if n.startswith("transient"))
    for spec in [s for n, s in driver.running().values() if n == node_id][:1]:
        driver.finish(node_id, spec)
        if spec.push:
            driver.push(node_id, spec)
    lost = up(node_id, "transient", driver.core).model_copy(update={"state": "lost"})
    driver.do(EvictRequest(EvictSpec(count=1), (node_id,)))
    driver.do(FromNode(node_id, lost))
    driver.run_to_end()
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]
    assert watched.calls > 20


class Scripted(Strategy):
    """A strategy that answers each event with what a test scripted for it."""

    def __init__(self, scenario: Scenario) -> None:
        self.script: dict[type, list[StrategyDecision]] = {}
        self.seen: list[object] = []

    def on_job_submitted(self, view: StrategyView, event: JobSubmitted) -> list[StrategyDecision]:
        self.seen.append(event)
        return self.script.get(JobSubmitted, [])

    def on_task_succeeded(self, view: StrategyView, event: TaskSucceeded) -> list[StrategyDecision]:
        self.seen.append(event)
        job = view.jobs[event.job_id]
        note = Note("push_failed", {"job": job.job_id, "task": job.task_id(event.key), "error": "scripted"})
        return [note, *self.script.get(TaskSucceeded, [])]


def scripted_driver() -> tuple[Driver, Scripted]:
    scenario = make_scenario()
    scripted = Scripted(scenario)
    driver = Driver(scenario, strategy=scripted)
    scripted.script[JobSubmitted] = [WriteFile("dags/x.json", "{}\n")]
    return driver, scripted


def test_decisions_are_applied_in_the_order_returned() -> None:
    driver, strategy = scripted_driver()
    driver.boot()
    assert cmd.RunFile("dags/x.json", "{}\n") in driver.log
    assert [type(e) for e in strategy.seen] == [JobSubmitted]
    node_id, spec = next(iter(driver.running().values()))
    then = [Note("push_failed", {"job": "j000", "task": spec.task_id, "error": e}) for e in ("2nd", "3rd")]
    strategy.script[TaskSucceeded] = then
    out = driver.finish(node_id, spec)
    assert [e["error"] for e in Driver.events_of(out, "push_failed")] == ["scripted", "2nd", "3rd"]
    (event,) = [e for e in strategy.seen if isinstance(e, TaskSucceeded)]
    assert (event.key, event.attempt, event.node_id, event.pushing) == ((0, spec.index), 0, node_id, False)
    kinds = [c.kind for c in out if isinstance(c, cmd.Journal)]
    assert kinds.index("push_failed") < kinds.index("task_finished")  # applied at the handler's turn


def test_a_decision_that_no_longer_holds_changes_nothing() -> None:
    driver, strategy = scripted_driver()
    driver.boot()
    node_id, spec = next(iter(driver.running().values()))
    job: JobRuntime = driver.core.jobs[spec.job_id]
    key = (spec.stage, spec.index)
    strategy.script[TaskSucceeded] = [
        CommitPush(job.job_id, key, spec.attempt, ("http://x",)),
        Reopen(job.job_id, key),
    ]
    driver.finish(node_id, spec)  # not pushing: the commit is stale; done: reopened
    assert job.tasks[key].replicas == () and job.tasks[key].status == "pending"


def test_every_event_has_a_handler_with_a_no_op_default() -> None:
    base = Strategy()
    for event, handler in HANDLERS.items():
        assert callable(getattr(base, handler)), event
    with pytest.raises(TypeError, match="not a strategy decision"):
        driver, _ = scripted_driver()
        driver.core.recovery.apply("commit everything")  # type: ignore[arg-type]
