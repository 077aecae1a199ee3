"""The simulator's model agents decide as the real agent does: through its core
(``agents.core.AgentCore``). A bare core, fed the same commands and told of the same worker
ends, is the referee: a model agent that decided a launch, a cancel or a repeated outcome by
itself would part from it."""

from __future__ import annotations

from typing import get_args

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.core import Action, AgentCore, Kill, PublishUpdate, WorkerFinished
from master.sim.agents import _ACTIONS
from master.sim.nodes import incarnation_of
from testbed.wire.protocol import INLINE_NOOP, CancelTask, LaunchTask, Message, TaskUpdate
from tests.support.model_agents import agents, run_all
from tests.support.sim import sleep_task

NODE = "reserved-0"


def launch(index: int, attempt: int, seconds: float = 2.0) -> LaunchTask:
    return LaunchTask(task=sleep_task(index, seconds).model_copy(update={"attempt": attempt}))


def ends(messages: list[Message]) -> list[tuple[str, int, str, str | None]]:
    return [(m.task_id, m.attempt, m.state, m.failure) for m in messages if isinstance(m, TaskUpdate)]


def test_the_model_carries_out_every_action_of_the_core() -> None:
    """A new action of the core the model agents forgot fails here, not in a run."""
    assert set(get_args(Action)) == set(_ACTIONS)


def test_a_stale_attempts_launch_starts_nothing_once_a_later_attempt_runs_here() -> None:
    """The real agent's rule (``AgentCore._launch``): attempt 0 of a task arriving after its
    attempt 1 started on the node runs nothing, so the node runs one attempt of it."""
    heap, fleet, heard = agents()
    heard.clear()
    fleet.command(NODE, launch(0, 1))
    fleet.command(NODE, launch(0, 0))
    assert list(fleet.nodes[NODE].running) == [("j000.s0.t0", 1)]
    run_all(heap)
    task = "j000.s0.t0"
    assert ends([m for _, _, m in heard]) == [(task, 1, "running", None), (task, 1, "succeeded", None)]


def test_a_cancel_of_an_earlier_attempt_still_running_kills_it_and_spares_the_current() -> None:
    """A cancel names an attempt: once the task's next attempt started on the node, a cancel
    of the earlier one still kills that worker (left running, it would hold a slot the master
    has given away); it is reported cancelled, and the current attempt runs on to its end."""
    heap, fleet, heard = agents()
    fleet.command(NODE, launch(0, 0, 1.0))
    fleet.command(NODE, launch(0, 1))
    heard.clear()
    fleet.command(NODE, CancelTask(task_id="j000.s0.t0", attempt=0))
    assert set(fleet.nodes[NODE].running) == {("j000.s0.t0", 1)}
    run_all(heap)
    task = "j000.s0.t0"
    assert ends([m for _, _, m in heard]) == [(task, 0, "failed", "cancelled"), (task, 1, "succeeded", None)]


def test_an_empty_task_succeeds_at_once_without_a_worker() -> None:
    """The real agent completes a ``noop`` task itself (``INLINE_NOOP``: no worker, no launch
    overhead), and so does the model node, through its core."""
    heap, fleet, heard = agents()
    heard.clear()
    spec = sleep_task(0, 0.0).model_copy(update={"op": INLINE_NOOP, "params": {}})
    fleet.command(NODE, LaunchTask(task=spec))
    assert [(t, m.state) for t, _, m in heard if isinstance(m, TaskUpdate)] == [(heap.now, "succeeded")]
    assert not fleet.nodes[NODE].running


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(data=st.data())
def test_any_commands_take_the_decisions_a_bare_agent_core_takes(data: st.DataObject) -> None:
    """Launches (re-sent, stale or not), cancels and the clock in any order: the model node
    reports what a bare ``AgentCore`` fed the same commands publishes, and runs a worker for
    exactly the attempts whose worker that core has not seen end."""
    heap, fleet, heard = agents()
    referee = AgentCore(NODE, incarnation_of(NODE))
    for _ in range(data.draw(st.integers(1, 25), label="steps")):
        heard.clear()
        kind = data.draw(st.sampled_from(["launch", "cancel", "wait"]), label="kind")
        if kind == "wait":
            run_all(heap, until=heap.now + data.draw(st.sampled_from([0.3, 1.0, 3.0])))
            expected = []
            for task_id, attempt, state, failure in ends([m for _, _, m in heard]):
                outcome = {"state": state, "failure": failure}
                expected += referee.handle(WorkerFinished(task_id, attempt, outcome))
        else:
            index, attempt = data.draw(st.integers(0, 1)), data.draw(st.integers(0, 2))
            seconds = data.draw(st.sampled_from([0.5, 2.0]))
            command = launch(index, attempt, seconds) if kind == "launch" else CancelTask(
                task_id=f"j000.s0.t{index}", attempt=attempt
            )
            fleet.command(NODE, command)
            expected = referee.handle(command)
            for kill in [a for a in expected if isinstance(a, Kill)]:  # the model's kill: at once
                expected += referee.handle(WorkerFinished(kill.task_id, kill.attempt, {}))
        published = [a.update for a in expected if isinstance(a, PublishUpdate)]
        assert ends([m for _, _, m in heard]) == ends(published)
        assert set(fleet.nodes[NODE].running) == set(referee.live)
