"""Pado's runtime (EuroSys'17, section 3.2) as it runs: the ``pado`` strategy driven through the
core by events alone, asserting on the commands it returns.

The ordering rules: receivers are set up (and, incremental, launched) before any transient
task; a transient task pushes only to receivers that have a node; a commit waits for every
receiver's report and is applied once; a transient eviction relaunches only the node's
uncommitted tasks; partial aggregates are flushed at the task cap, the time cap, or when no
further task may end on the node; a reserved failure sets its receivers up elsewhere and
reopens exactly what had been committed to them. Section numbers are the paper's.
"""

from __future__ import annotations

from typing import Any

from master.core import commands as cmd
from master.core.events import EvictRequest, FromNode, Round
from master.core.jobs import JobRuntime
from testbed.scenario.chaos import EvictSpec
from testbed.wire.protocol import (
    BlockReceived,
    FlushAggregate,
    LaunchTask,
    PushDelivered,
    PushedPart,
    TaskInputs,
    TaskSpec,
    TaskUpdate,
)
from tests.support.driver import Driver, launches, lose, sends, up
from tests.support.scenarios import make_scenario


def pado(reserved: int = 2, maps: int = 8, dilation: float = 1.0, **options: Any) -> Driver:
    """A booted core running one wordcount job (3 receivers) under ``pado`` with ``options``
    (a faithful run slowed ``dilation`` times, if not 1)."""
    scenario = make_scenario(
        policy={"strategy": "pado", "options": {"pado": {"aggregate_max_tasks": 1, **options}}},
        cluster={"reserved": reserved, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
        jobs=[{"workload": "wordcount", "size_mb": 4, "maps": maps, "reduces": 3}],
        **({"fidelity": {"mode": "faithful", "dilation": dilation}} if dilation != 1.0 else {}),
    )
    driver = Driver(scenario)
    driver.boot()
    return driver


def job(driver: Driver) -> JobRuntime:
    return driver.core.jobs["j000"]


def running_maps(driver: Driver) -> list[tuple[str, TaskSpec]]:
    return sorted(((n, s) for n, s in driver.running().values() if s.stage == 0), key=lambda ns: ns[1].index)


def kinds(commands: list[cmd.Command]) -> list[str]:
    """The journal events and launches, in order (``launch <task>``)."""
    out = []
    for c in commands:
        if isinstance(c, cmd.Journal):
            out.append(f"{c.kind} {c.fields.get('task', '')}".strip())
        elif isinstance(c, cmd.Send) and isinstance(c.message, LaunchTask):
            out.append(f"launch {c.message.task.task_id}")
    return out


def verdicts(commands: list[cmd.Command]) -> list[tuple[str, str]]:
    return [(e["task"], e["verdict"]) for e in Driver.events_of(commands, "push_commit")]


def received(driver: Driver, node_id: str, spec: TaskSpec) -> list[cmd.Command]:
    """Every receiver's report of the attempt's block, without the pusher's commit request."""
    out: list[cmd.Command] = []
    for target in spec.push:
        parts = tuple(PushedPart(partition=p, nbytes=1, crc32=p) for p in target.partitions)
        message = BlockReceived(node_id=target.node_id, block=f"{spec.task_id}.a{spec.attempt}", parts=parts)
        out += driver.do(FromNode(target.node_id, message))
    return out


def commit_request(driver: Driver, node_id: str, spec: TaskSpec) -> list[cmd.Command]:
    delivered = {
        t.node_id: tuple(PushedPart(partition=p, nbytes=1, crc32=p) for p in t.partitions) for t in spec.push
    }
    request = PushDelivered(
        node_id=node_id,
        task_id=spec.task_id,
        attempt=spec.attempt,
        block=f"{spec.task_id}.a{spec.attempt}",
        delivered=delivered,
    )
    return driver.do(FromNode(node_id, request))


# ---------------------------------------------------------------- 3.2.3: reserved tasks first


def test_receivers_are_set_up_and_launched_before_any_transient_task() -> None:
    """ "the task scheduler first schedules and sets up the tasks placed on reserved executors
    [...]. Once they are set up, the tasks placed on transient executors are scheduled." """
    driver = pado()
    order = kinds(driver.log)  # the job arrived at time 0: its first round ran
    first_map = order.index("launch j000.s0.t0")
    set_up = [i for i, kind in enumerate(order) if kind.startswith("receiver_set_up")]
    receivers = [i for i, kind in enumerate(order) if kind.startswith("launch j000.s1")]
    assert len(set_up) == len(receivers) == 3
    assert max(set_up) < min(receivers) < max(receivers) < first_map
    maps = running_maps(driver)
    assert {t.node_id for _, s in maps for t in s.push} == {"reserved-0", "reserved-1"}
    assert all(sorted(p for t in s.push for p in t.partitions) == [0, 1, 2] for _, s in maps)


def test_without_incremental_receivers_they_launch_once_every_push_is_committed() -> None:
    driver = pado(maps=3, incremental_receivers=False)
    order = kinds(driver.log)
    assert sum(k.startswith("receiver_set_up") for k in order) == 3
    assert not [k for k in order if k.startswith("launch j000.s1")]
    for node_id, spec in running_maps(driver)[:2]:
        driver.finish(node_id, spec)
        driver.push(node_id, spec)
        assert not [k for k in kinds(driver.do(Round())) if k.startswith("launch j000.s1")]
    node_id, spec = running_maps(driver)[0]
    driver.finish(node_id, spec)
    driver.push(node_id, spec)
    receivers = [s for _, s in launches(driver.do(Round())) if s.stage == 1]
    assert len(receivers) == 3 and all(s.streamed == () and len(s.inputs[0]) == 3 for s in receivers)


def test_no_transient_task_launches_while_a_receiver_has_no_reserved_node() -> None:
    driver = pado(reserved=1, maps=3)
    driver.do(Round())
    node_id, spec = running_maps(driver)[0]
    driver.finish(node_id, spec)
    driver.push(node_id, spec)
    lose(driver, "reserved-0")
    assert job(driver).tasks[(0, spec.index)].status == "pending"  # reopened: its receiver is gone
    stalled = driver.do(Round(), at=driver.now + 1.0)
    assert not launches(stalled) and not Driver.events_of(stalled, "receiver_set_up")
    # the core replaced the lost reserved node: its replacement comes up
    node_id = [c.node_id for c in driver.log if isinstance(c, cmd.StartNode)][-1]
    driver.do(FromNode(node_id, up(node_id, "reserved", driver.core)))
    order = kinds(driver.do(Round()))
    assert order.index(f"receiver_set_up {spec.task_id.replace('s0', 's1')}") < order.index(
        f"launch {spec.task_id}"
    )


# ---------------------------------------------------------------- 3.2.5: commits, exactly once


def test_a_commit_waits_for_every_receivers_report_and_is_applied_once() -> None:
    driver = pado()
    driver.do(Round())
    node_id, spec = running_maps(driver)[0]
    driver.finish(node_id, spec)
    assert job(driver).tasks[(0, spec.index)].status == "pushing"
    assert verdicts(commit_request(driver, node_id, spec)) == []  # no receiver reported yet
    out = received(driver, node_id, spec)
    assert verdicts(out) == [(spec.task_id, "accepted")]
    assert kinds(out)[-1] == f"push_commit {spec.task_id}"  # on the last report, not before
    assert job(driver).tasks[(0, spec.index)].status == "done"
    assert verdicts(commit_request(driver, node_id, spec)) == []  # repeated: nothing to commit
    assert job(driver).tasks[(0, spec.index)].status == "done"


def test_a_commit_that_overtakes_its_tasks_success_is_applied_after_it() -> None:
    driver = pado()
    driver.do(Round())
    node_id, spec = running_maps(driver)[0]
    received(driver, node_id, spec)
    assert verdicts(commit_request(driver, node_id, spec)) == []  # the task still runs
    assert verdicts(driver.finish(node_id, spec)) == [(spec.task_id, "accepted")]


def test_a_transient_eviction_relaunches_only_the_nodes_uncommitted_tasks() -> None:
    """ "reschedules only the tasks that were scheduled in the evicted executors, whose outputs
    were not transferred and committed to their destinations": committed outputs, other
    nodes' tasks and the receivers are untouched, and the evicted attempt's late commit is
    refused."""
    driver = pado()
    driver.do(Round())
    node_id = running_maps(driver)[0][0]
    committed, pushing = [s for n, s in running_maps(driver) if n == node_id]
    driver.finish(node_id, committed)
    driver.push(node_id, committed)
    driver.finish(node_id, pushing)
    received(driver, node_id, pushing)  # all there, but the node dies before its commit request
    driver.do(Round())
    running = [s for n, s in running_maps(driver) if n == node_id]
    elsewhere = {s.task_id for n, s in driver.running().values() if n != node_id}
    driver.do(EvictRequest(EvictSpec(count=1), (node_id,)))
    lose(driver, node_id)
    statuses = {job(driver).task_id(k): r.status for k, r in job(driver).tasks.items()}
    assert {t for t, s in statuses.items() if s == "pending"} == {
        pushing.task_id,
        *(s.task_id for s in running),
        *(t for t, s in statuses.items() if t.startswith("j000.s0") and s == "pending"),
    }
    assert statuses[committed.task_id] == "done" and statuses[pushing.task_id] == "pending"
    assert all(statuses[t] == "running" for t in elsewhere)
    assert verdicts(commit_request(driver, node_id, pushing)) == []  # from a node declared lost
    assert statuses == {job(driver).task_id(k): r.status for k, r in job(driver).tasks.items()}
    driver.run_to_end()
    commits = [e for e in driver.events("push_commit") if e["verdict"] == "accepted"]
    assert sorted(e["task"] for e in commits) == sorted(f"j000.s0.t{i}" for i in range(8))
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]


def test_incremental_receivers_are_told_each_commit_and_the_last() -> None:
    driver = pado(maps=3)
    driver.do(Round())
    refs: list[tuple[int, bool]] = []
    for _ in range(3):
        node_id, spec = running_maps(driver)[0]
        driver.finish(node_id, spec)
        out = driver.push(node_id, spec)
        fed = [m for _, m in sends(out, TaskInputs)]
        assert sorted(m.task_id for m in fed) == ["j000.s1.t0", "j000.s1.t1", "j000.s1.t2"]
        assert len({(len(m.refs), m.last) for m in fed}) == 1
        refs.append((len(fed[0].refs), fed[0].last))
        driver.do(Round())
    assert refs == [(1, False), (2, False), (3, True)]


# ---------------------------------------------------------------- 3.2.7: partial aggregation


def held_and_flushed(out: list[cmd.Command]) -> tuple[list[bool], list[FlushAggregate]]:
    held = [e["held"] for e in Driver.events_of(out, "task_pushing")]
    return held, [m for _, m in sends(out, FlushAggregate)]


def test_held_outputs_are_flushed_at_the_task_cap() -> None:
    driver = pado(maps=12, aggregate_max_tasks=2, aggregate_max_delay_s=60.0)
    driver.do(Round())
    node_id = running_maps(driver)[0][0]
    first, second = [s for n, s in running_maps(driver) if n == node_id]
    assert first.push == ()  # held on its node: the flush pushes it
    assert held_and_flushed(driver.finish(node_id, first)) == ([True], [])
    held, (flush,) = held_and_flushed(driver.finish(node_id, second))
    assert held == [True]
    assert flush.members == (f"{first.task_id}.a0", f"{second.task_id}.a0")
    assert sorted(p for t in flush.push for p in t.partitions) == [0, 1, 2]


def test_a_held_output_is_flushed_at_the_time_cap() -> None:
    driver = pado(maps=12, aggregate_max_tasks=4, aggregate_max_delay_s=5.0)
    driver.do(Round())
    node_id, spec = running_maps(driver)[0]
    driver.finish(node_id, spec)
    start = len(driver.log)
    driver.advance(driver.now + 4.9)  # rounds every heartbeat interval (0.2 s)
    assert not held_and_flushed(driver.log[start:])[1]
    driver.advance(driver.now + 0.2)
    _, (flush,) = held_and_flushed(driver.log[start:])
    assert flush.members == (f"{spec.task_id}.a0",)


def test_the_time_cap_and_the_push_rate_are_emulated_under_dilation() -> None:
    """The options are emulated seconds and bandwidths; the core's clock is the shell's
    (wall seconds, 3 times the emulated ones here): a 5 s cap holds an output 15 s, and a
    push of 80 Mb/s gets a third of it, as the nodes' own bandwidths do."""
    driver = pado(
        maps=12, dilation=3.0, aggregate_max_tasks=4, aggregate_max_delay_s=5.0, push_bandwidth_mbps=80
    )
    driver.do(Round())
    node_id, spec = running_maps(driver)[0]
    assert spec.push_rate_bytes_s == 80e6 / 8 / 3
    driver.finish(node_id, spec)
    start = len(driver.log)
    driver.advance(driver.now + 14.9)
    assert not held_and_flushed(driver.log[start:])[1]  # undilated: flushed at 5 s
    driver.advance(driver.now + 1.0)  # the next round (heartbeats are dilated too)
    _, (flush,) = held_and_flushed(driver.log[start:])
    assert flush.members == (f"{spec.task_id}.a0",)


def test_a_held_output_is_flushed_when_no_further_task_may_end_on_its_node() -> None:
    driver = pado(maps=6, aggregate_max_tasks=4, aggregate_max_delay_s=60.0)
    driver.do(Round())  # 6 maps on 3 nodes: nothing else will come to any node
    node_id = running_maps(driver)[0][0]
    first, second = [s for n, s in running_maps(driver) if n == node_id]
    assert held_and_flushed(driver.finish(node_id, first)) == ([True], [])  # its neighbour still runs
    _, (flush,) = held_and_flushed(driver.finish(node_id, second))
    assert flush.members == (f"{first.task_id}.a0", f"{second.task_id}.a0")


def test_an_aggregate_commits_all_its_tasks_at_once() -> None:
    driver = pado(maps=12, aggregate_max_tasks=2, aggregate_max_delay_s=60.0)
    driver.do(Round())
    node_id = running_maps(driver)[0][0]
    first, second = [s for n, s in running_maps(driver) if n == node_id]
    driver.finish(node_id, first)
    _, (flush,) = held_and_flushed(driver.finish(node_id, second))
    out = driver.push_block(node_id, flush.block, flush.block, 0, flush.push)
    assert verdicts(out) == [(first.task_id, "accepted"), (second.task_id, "accepted")]
    assert {e["push"] for e in Driver.events_of(out, "push_commit")} == {flush.block}


# ---------------------------------------------------------------- 3.2.6: a reserved node fails


def test_a_reserved_failure_moves_its_receivers_and_reruns_only_what_they_had() -> None:
    """ "pausing the currently executing stage [...] to relaunch the corresponding tasks": the
    receivers on the lost node are set up on another, the maps committed to them run again and
    push only to them; the receiver on the surviving node keeps what it had."""
    driver = pado(maps=3)
    driver.do(Round())
    committed = []
    for _ in range(2):
        node_id, spec = running_maps(driver)[0]
        driver.finish(node_id, spec)
        driver.push(node_id, spec)
        committed.append(spec.task_id)
        driver.do(Round())
    moved = sorted(e["task"] for e in driver.events("receiver_set_up") if e["node"] == "reserved-0")
    assert moved == ["j000.s1.t0", "j000.s1.t2"]
    out = lose(driver, "reserved-0")
    statuses = {job(driver).task_id(k): r.status for k, r in job(driver).tasks.items()}
    assert all(statuses[t] == "pending" for t in committed)  # reopened: they push again
    assert statuses["j000.s1.t1"] == "running"  # on reserved-1, untouched
    again = kinds(out + driver.do(Round()))
    assert sorted(k.split()[1] for k in again if k.startswith("receiver_set_up")) == moved
    relaunched = [s for _, s in launches(driver.log) if s.task_id in committed and s.attempt == 1]
    assert len(relaunched) == 2
    assert all([(t.node_id, t.partitions) for t in s.push] == [("reserved-1", (0, 2))] for s in relaunched)
    driver.run_to_end()
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]


def test_a_reserved_failure_recomputes_lost_parents_before_their_children() -> None:
    """PageRank under Pado: every stage after the edges is reserved. Losing a reserved node in
    the iterations recomputes the lost outputs parents first (the links before the ranks),
    and each recomputed task launches only once its inputs are back."""
    pagerank = {"workload": "pagerank", "nodes": 50, "edges": 200, "iterations": 3, "maps": 2, "reduces": 2}
    scenario = make_scenario(
        policy={"strategy": "pado", "options": {"pado": {"aggregate_max_tasks": 1}}},
        cluster={"reserved": 2, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
        jobs=[pagerank],
    )
    driver = Driver(scenario)
    driver.boot()
    for _ in range(4):  # into the iterations
        driver.do(Round())
        for node_id, spec in list(driver.running().values()):
            if driver.ready(spec):
                driver.finish(node_id, spec)
                if spec.push:
                    driver.push(node_id, spec)
    done_before = {k for k, r in job(driver).tasks.items() if r.status == "done"}
    start = len(driver.log)
    lose(driver, "reserved-0")
    driver.run_to_end()
    relaunched = [
        (s.stage, s.index) for _, s in launches(driver.log[start:]) if (s.stage, s.index) in done_before
    ]
    # partition 0's reserved chain lived on reserved-0: its links receiver is set up again first,
    # the edges that had pushed to it run again, then the chain in stage order; partition 1's
    # outputs (on reserved-1) are kept
    assert relaunched == [(1, 0), (0, 0), (0, 1), (2, 0), (3, 0)]
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]


def test_a_stale_task_update_after_a_reserved_failure_changes_nothing() -> None:
    driver = pado(maps=3)
    driver.do(Round())
    node_id, spec = running_maps(driver)[0]
    driver.finish(node_id, spec)
    driver.push(node_id, spec)
    lose(driver, "reserved-0")
    update = TaskUpdate(node_id=node_id, task_id=spec.task_id, attempt=spec.attempt, state="succeeded")
    assert verdicts(driver.do(FromNode(node_id, update))) == []
    assert job(driver).tasks[(0, spec.index)].status == "pending"
