"""The agent's decisions without its I/O (``agents.core``): hand-built inputs, the actions they
make. What the shell does with them (a worker, a pipe, a publication) is tested with the
agent itself (tests/test_agent_attempts.py, tests/test_incremental_receivers.py and the e2e
runs)."""

from __future__ import annotations

from typing import get_args

from hypothesis import given, settings
from hypothesis import strategies as st

from agents.agent import _ACTIONS
from agents.core import (
    _HANDLERS,
    Action,
    AgentCore,
    Aggregate,
    AggregateDone,
    BlockArrived,
    DeleteCached,
    FeedInputs,
    HeartbeatDue,
    Input,
    InputsFed,
    Kill,
    PublishReport,
    PublishUpdate,
    Push,
    PushDone,
    ReplicasStored,
    SendHeartbeat,
    StartWorker,
    StoreReplicas,
    WorkerFinished,
    WorkerStarted,
)
from testbed.node.lru import LruCache
from testbed.wire.protocol import (
    BlockRef,
    CancelTask,
    EvictionNotice,
    FlushAggregate,
    Heartbeat,
    InputSplit,
    LaunchTask,
    Message,
    PushedPart,
    PushTarget,
    Resync,
    StoreInputs,
    TaskInputs,
    TaskSpec,
    TaskUpdate,
)

SUCCEEDED = {"state": "succeeded"}
TARGET = PushTarget(node_id="reserved-0", url="http://127.0.0.1:9", partitions=(0,))


def spec(task: str = "j.s0.t0", attempt: int = 0, **fields: object) -> TaskSpec:
    return TaskSpec(
        task_id=task, job_id="j", stage=0, index=0, attempt=attempt, op="sleep.run", memory_mb=64, **fields
    )


def launch(task: str = "j.s0.t0", attempt: int = 0, **fields: object) -> LaunchTask:
    return LaunchTask(task=spec(task, attempt, **fields))


def updates(actions: list[Action]) -> list[tuple[str, int, str, str | None]]:
    return [
        (a.update.task_id, a.update.attempt, a.update.state, a.update.failure)
        for a in actions
        if isinstance(a, PublishUpdate)
    ]


def heartbeat(core: AgentCore) -> Heartbeat:
    (send,) = core.handle(HeartbeatDue({}))
    assert isinstance(send, SendHeartbeat)
    return send.beat


def test_a_resent_launch_starts_nothing_and_a_finished_attempts_repeats_its_outcome() -> None:
    core = AgentCore("transient-0", "inc")
    first = core.handle(launch())
    assert updates(first) == [("j.s0.t0", 0, "running", None)] and first[1] == StartWorker(spec())
    assert core.handle(launch()) == []  # QoS 1 delivered it twice: it runs once
    (done,) = core.handle(WorkerFinished("j.s0.t0", 0, SUCCEEDED))
    assert isinstance(done, PublishUpdate) and done.update.state == "succeeded"
    assert core.handle(launch()) == [done]  # the recorded outcome, again, and nothing run


def test_a_resent_launch_of_an_attempt_still_running_but_no_longer_current_starts_nothing() -> None:
    """Its worker outlives a cancel while the task's next attempt ran and finished here: a
    launch of it re-sent now would have started a second worker of one (task, attempt)."""
    core = AgentCore("transient-0", "inc")
    core.handle(launch(attempt=0))
    core.handle(CancelTask(task_id="j.s0.t0", attempt=0))
    core.handle(launch(attempt=1))
    core.handle(WorkerFinished("j.s0.t0", 1, SUCCEEDED))
    assert core.handle(launch(attempt=0)) == []
    assert updates(core.handle(WorkerFinished("j.s0.t0", 0, {}))) == [("j.s0.t0", 0, "failed", "cancelled")]


def test_a_stale_attempts_finish_is_its_own_and_leaves_the_current_attempt_running() -> None:
    core = AgentCore("transient-0", "inc")
    core.handle(launch(attempt=0))
    assert core.handle(CancelTask(task_id="j.s0.t0", attempt=0)) == [Kill("j.s0.t0", 0)]
    assert StartWorker(spec(attempt=1)) in core.handle(launch(attempt=1))
    killed = {"state": "failed", "failure": "killed", "error": "SIGKILL"}
    assert updates(core.handle(WorkerFinished("j.s0.t0", 0, killed))) == [
        ("j.s0.t0", 0, "failed", "cancelled")
    ]
    assert heartbeat(core).attempts == {"j.s0.t0": 1}
    assert core.handle(launch(attempt=1)) == []  # the master's re-sent launch: still running once
    assert updates(core.handle(WorkerFinished("j.s0.t0", 1, SUCCEEDED))) == [
        ("j.s0.t0", 1, "succeeded", None)
    ]
    assert heartbeat(core).running == ()


def test_a_cancelled_attempt_that_ends_late_is_reported_cancelled_and_pushes_nothing() -> None:
    core = AgentCore("transient-0", "inc")
    core.handle(launch(push=(TARGET,)))
    assert core.handle(CancelTask(task_id="j.s0.t0", attempt=1)) == []  # another attempt's cancel
    assert core.handle(CancelTask(task_id="j.s0.t0", attempt=0)) == [Kill("j.s0.t0", 0)]
    assert core.handle(WorkerStarted("j.s0.t0", 0)) == [Kill("j.s0.t0", 0)]  # cancelled while starting
    ended = core.handle(WorkerFinished("j.s0.t0", 0, SUCCEEDED))  # it finished before the kill landed
    assert updates(ended) == [("j.s0.t0", 0, "failed", "cancelled")]
    assert not any(isinstance(a, Push) for a in ended)


def test_a_cancel_of_a_superseded_attempt_still_running_kills_its_worker() -> None:
    """Attempt 0 still runs here when attempt 1 of its task starts here: the master's cancel
    of attempt 0 kills that worker (it would go on holding a slot the master gave away), and
    attempt 1 stays the task's current one."""
    core = AgentCore("transient-0", "inc")
    core.handle(launch(attempt=0))
    core.handle(launch(attempt=1))
    assert core.handle(CancelTask(task_id="j.s0.t0", attempt=0)) == [Kill("j.s0.t0", 0)]
    assert updates(core.handle(WorkerFinished("j.s0.t0", 0, {}))) == [("j.s0.t0", 0, "failed", "cancelled")]
    beat = heartbeat(core)
    assert beat.running == ("j.s0.t0",) and beat.attempts == {"j.s0.t0": 1}


def test_a_succeeded_attempt_pushes_after_its_update_and_the_push_is_reported() -> None:
    core = AgentCore("transient-0", "inc")
    core.handle(launch(push=(TARGET,)))
    ended = core.handle(WorkerFinished("j.s0.t0", 0, SUCCEEDED))
    assert [type(a) for a in ended] == [PublishUpdate, Push]
    push = ended[1]
    assert isinstance(push, Push) and (push.block, push.targets, push.attempt) == (
        spec().block_id,
        (TARGET,),
        0,
    )
    parts = (PushedPart(partition=0, nbytes=10, crc32=1),)
    (report,) = core.handle(PushDone(push.block, "j.s0.t0", 0, {"reserved-0": parts}, (), ""))
    assert isinstance(report, PublishReport) and report.report.delivered == {"reserved-0": parts}


def test_a_resync_repeats_the_latest_report_of_each_block_in_the_order_first_made() -> None:
    core = AgentCore("reserved-0", "inc")
    part = PushedPart(partition=0, nbytes=10, crc32=1)
    core.handle(BlockArrived("b1", (part,)))
    core.handle(PushDone("b2", "j.s0.t2", 0, {}, ("reserved-1",), "refused"))
    core.handle(BlockArrived("b1", (part, part.model_copy(update={"partition": 1}))))
    resent = core.handle(Resync())
    reports = [a.report for a in resent if isinstance(a, PublishReport)]
    assert [(r.kind, r.block) for r in reports] == [("received", "b1"), ("pushed", "b2")]
    assert len(reports[0].parts) == 2  # type: ignore[union-attr]


def test_the_heartbeat_lists_the_current_attempts_in_launch_order_and_the_cache() -> None:
    core = AgentCore("transient-0", "inc")
    core.handle(launch("j.s0.t1"))
    core.handle(launch("j.s0.t0", input_cache_mb=1))
    core.handle(CancelTask(task_id="j.s0.t1", attempt=0))
    core.handle(launch("j.s0.t1", attempt=2))
    cache = {"key": "k", "nbytes": 100}
    core.handle(launch("j.s0.t3"))
    core.handle(WorkerFinished("j.s0.t3", 0, {**SUCCEEDED, "cache": cache}))
    beats = [heartbeat(core), heartbeat(core)]
    assert [b.seq for b in beats] == [1, 2]
    assert beats[0].running == ("j.s0.t1", "j.s0.t0") and beats[0].attempts == {"j.s0.t1": 2, "j.s0.t0": 0}
    assert [(c.key, c.nbytes) for c in beats[0].cached_inputs or ()] == [("k", 100)]


def test_the_input_cache_evicts_least_recent_first_and_updates_list_what_it_keeps() -> None:
    core = AgentCore("transient-0", "inc")
    core.input_cache = LruCache(250)
    made: list[Action] = []
    for index, (key, nbytes) in enumerate([("a", 100), ("b", 100), ("a", 100), ("c", 100), ("big", 300)]):
        core.handle(launch(f"j.s0.t{index}"))
        made += core.handle(
            WorkerFinished(f"j.s0.t{index}", 0, {**SUCCEEDED, "cache": {"key": key, "nbytes": nbytes}})
        )
    assert [a for a in made if isinstance(a, DeleteCached)] == [DeleteCached(("b",)), DeleteCached(("big",))]
    last = [a.update for a in made if isinstance(a, PublishUpdate)][-1]
    assert [c.key for c in last.cached_inputs or ()] == ["a", "c"]
    (running, _) = core.handle(launch("j.s0.t9"))
    assert isinstance(running, PublishUpdate) and [c.key for c in running.update.cached_inputs or ()] == [
        "a",
        "c",
    ]


def test_a_receivers_inputs_are_fed_one_write_at_a_time_the_latest_and_nothing_after_the_last() -> None:
    core = AgentCore("reserved-0", "inc")
    core.handle(launch(streamed=(0, 1)))
    refs = tuple(BlockRef(block=f"b{i}", partition=0, locations=("http://x",)) for i in range(3))

    def inputs(dependency: int, count: int, last: bool = False, attempt: int = 0) -> TaskInputs:
        refs_so_far = refs[:count]
        return TaskInputs(
            task_id="j.s0.t0", attempt=attempt, dependency=dependency, refs=refs_so_far, last=last
        )

    first, second, last, other, other_attempt = (
        inputs(0, 1),
        inputs(0, 2),
        inputs(0, 3, True),
        inputs(1, 1),
        inputs(0, 1, attempt=1),
    )
    assert core.handle(first) == []  # its worker does not run yet: kept
    assert core.handle(second) == []  # the latest replaces it
    assert core.handle(WorkerStarted("j.s0.t0", 0)) == [FeedInputs("j.s0.t0", 0, second)]
    assert core.handle(last) == []  # one write at a time
    assert core.handle(other) == []
    assert core.handle(other_attempt) == []  # another attempt's: dropped
    fed = core.handle(InputsFed("j.s0.t0", 0, second, sent=True))
    assert fed == [FeedInputs("j.s0.t0", 0, other)]  # the most recently arrived first
    assert core.handle(InputsFed("j.s0.t0", 0, other, sent=True)) == [FeedInputs("j.s0.t0", 0, last)]
    assert core.handle(InputsFed("j.s0.t0", 0, last, sent=True)) == []
    assert core.handle(inputs(0, 3, last=True)) == []  # after the last: dropped
    more = inputs(1, 2)
    assert core.handle(more) == [FeedInputs("j.s0.t0", 0, more)]
    assert core.handle(InputsFed("j.s0.t0", 0, more, sent=False)) == []  # the worker is gone
    assert core.handle(inputs(1, 3)) == []  # nothing more is written


def test_a_flush_aggregates_once_then_pushes_or_reports_every_target_failed() -> None:
    core = AgentCore("transient-0", "inc")
    flush = FlushAggregate(
        op="wordcount.combine", members=("m1", "m2"), block="agg1", partitions=1, push=(TARGET,)
    )
    assert core.handle(flush) == [Aggregate(flush)]
    assert core.handle(flush) == []  # redelivered
    assert core.handle(AggregateDone(flush, SUCCEEDED)) == [Push("agg1", (TARGET,), None, "agg1", 0)]
    (failed,) = core.handle(AggregateDone(flush, {"state": "failed", "error": "no combiner"}))
    assert isinstance(failed, PublishReport)
    assert (failed.report.failed, failed.report.error) == (("reserved-0",), "aggregation: no combiner")  # type: ignore[union-attr]


def test_input_splits_being_stored_are_not_stored_again_until_done() -> None:
    core = AgentCore("transient-0", "inc")
    split = InputSplit(block="in.j.0", path="/d/a", start=0, end=10)
    message = StoreInputs(job_id="j", splits=(split,))
    assert core.handle(message) == [StoreReplicas("j", (split,))]
    assert core.handle(message) == [StoreReplicas("j", ())]
    assert core.handle(ReplicasStored(("in.j.0",))) == []
    assert core.handle(message) == [StoreReplicas("j", (split,))]


def test_the_shell_carries_out_every_action_and_the_core_handles_every_input_it_declares() -> None:
    """A new action the shell's table forgot, or an input with no handler, fails here, not in a run."""
    assert set(get_args(Action)) - {SendHeartbeat} == set(_ACTIONS)  # a heartbeat: its timer's loop
    inputs = {t for t in get_args(Input) if t is not Message}
    commands = {LaunchTask, CancelTask, FlushAggregate, TaskInputs, StoreInputs, Resync, EvictionNotice}
    assert set(_HANDLERS) == inputs | commands


# ------------------------------------------------------------------ any interleaving

TASKS = ("j.s0.t0", "j.s0.t1")


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(data=st.data())
def test_any_interleaving_keeps_one_current_attempt_per_task_and_a_cancelled_finish_its_own(
    data: st.DataObject,
) -> None:
    """Launches (re-sent or not), cancels, worker starts and ends in any order, the shell
    answering only for the workers the core started: no (task, attempt) is started twice;
    the heartbeat lists each task's latest started attempt until its worker ends; every end
    is reported once, as its own attempt's, never a cancelled attempt's as a success."""
    core = AgentCore("transient-0", "inc")
    started: list[tuple[str, int]] = []
    ended: set[tuple[str, int]] = set()
    cancelled: set[tuple[str, int]] = set()
    outcomes: dict[tuple[str, int], TaskUpdate] = {}
    for _ in range(data.draw(st.integers(1, 30), label="steps")):
        workers = [key for key in started if key not in ended]
        kinds = ["launch", "cancel"] + ["start", "finish"] * bool(workers)
        kind = data.draw(st.sampled_from(kinds), label="kind")
        if kind in ("launch", "cancel"):
            task, attempt = data.draw(st.sampled_from(TASKS)), data.draw(st.integers(0, 2))
            event = launch(task, attempt) if kind == "launch" else CancelTask(task_id=task, attempt=attempt)
        else:
            task, attempt = data.draw(st.sampled_from(workers))
            outcome = data.draw(st.sampled_from([SUCCEEDED, {"state": "failed", "failure": "killed"}]))
            event = (
                WorkerStarted(task, attempt) if kind == "start" else WorkerFinished(task, attempt, outcome)
            )
        actions = core.handle(event)
        for action in actions:
            if isinstance(action, StartWorker):
                key = (action.spec.task_id, action.spec.attempt)
                assert key not in started, f"{key} started twice"
                started.append(key)
            elif isinstance(action, Kill):
                cancelled.add((action.task_id, action.attempt))
            elif isinstance(action, PublishUpdate) and action.update.state != "running":
                update, key = action.update, (action.update.task_id, action.update.attempt)
                assert outcomes.setdefault(key, update) == update, f"{key} reported two ends"
                assert key not in cancelled or update.failure == "cancelled"
        if isinstance(event, WorkerFinished):
            ended.add((task, attempt))
            assert [(u[0], u[1]) for u in updates(actions)] == [(task, attempt)]
        latest = {key[0]: key for key in started}
        assert heartbeat(core).attempts == {t: a for t, (_, a) in latest.items() if (t, a) not in ended}
