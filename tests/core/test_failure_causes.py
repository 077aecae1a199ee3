"""Every attempt that ends without success carries its cause in its ``task_finished`` event
(``error``): a data failure its traceback, a task cancelled because its job failed that
failure, a task on a lost node the loss, an output never staged the refused commit
(tests/e2e/test_workload_plugin_run.py was flaky on a cancelled map's end, which had none)."""

from __future__ import annotations

from master.core import commands as cmd
from master.core.events import EvictRequest, FromNode, Round
from testbed.scenario.chaos import EvictSpec
from testbed.wire.protocol import TaskUpdate
from tests.support.driver import Driver, launches, up
from tests.support.scenarios import make_scenario

TRACEBACK = 'Traceback (most recent call last):\n  File "w.py", line 3\nRuntimeError: plugin bug in map'


def failed_ends(driver: Driver) -> dict[str, dict]:
    return {e["task"]: e for e in driver.events("task_finished") if e["status"] != "succeeded"}


def test_a_task_cancelled_because_its_job_failed_carries_the_jobs_failure() -> None:
    """Two maps; the first fails on its data, so the job fails and the second is cancelled
    (the agent's outcome then says only 'cancelled'): its end names the job's failure."""
    driver = Driver(make_scenario(jobs=[{"workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 1}]))
    driver.boot()
    driver.do(Round())
    (first_node, first), (second_node, second) = launches(driver.log)
    out = driver.finish(first_node, first, "failed", failure="data", error=TRACEBACK)
    cancels = [c for c in out if isinstance(c, cmd.Send) and c.message.kind == "cancel"]
    assert [(c.node_id, c.message.task_id) for c in cancels] == [(second_node, second.task_id)]
    driver.finish(second_node, second, "failed", failure="cancelled", error="cancelled by the master")
    ends = failed_ends(driver)
    assert ends[first.task_id]["error"] == TRACEBACK
    assert ends[second.task_id]["failure"] == "cancelled"
    assert ends[second.task_id]["error"] == (
        f"cancelled: the job failed: task {first.task_id} failed: RuntimeError: plugin bug in map"
    )


def test_a_task_on_an_evicted_node_and_an_output_never_staged_carry_their_causes() -> None:
    driver = Driver(make_scenario(jobs=[{"workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 1}]))
    driver.boot()
    driver.do(Round())
    victim, interrupted = next((n, s) for n, s in launches(driver.log) if n.startswith("transient"))
    driver.do(EvictRequest(EvictSpec(count=1), (victim,)))
    driver.do(FromNode(victim, up(victim, "transient", driver.core).model_copy(update={"state": "lost"})))
    ends = failed_ends(driver)
    assert ends[interrupted.task_id]["status"] == "lost"
    assert ends[interrupted.task_id]["error"].startswith(f"its node {victim} was lost (")
    for _ in range(10):  # the maps, then the reducer, whose upload never lands
        driver.do(Round())
        for node_id, spec in list(driver.running().values()):
            if spec.final:
                driver.do(
                    FromNode(
                        node_id,
                        TaskUpdate(
                            node_id=node_id, task_id=spec.task_id, attempt=spec.attempt, state="succeeded"
                        ),
                    )
                )
                ends = failed_ends(driver)
                assert ends[spec.task_id]["error"] == "its output was not staged by the sink: not committed"
                return
            driver.finish(node_id, spec)
    raise AssertionError("the reducer never ran")
