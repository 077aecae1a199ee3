"""Speculative copies in the core, driven by events alone: which attempt wins, what is killed,
and that a lost node on either side leaves the task running once and its output committed once."""

from __future__ import annotations

from master.core import commands as cmd
from master.core.events import EvictRequest, FromNode, Round
from testbed.api.speculation import Speculate, SpeculationSnapshot
from testbed.scenario.chaos import EvictSpec
from testbed.wire.protocol import CancelTask, Heartbeat, NodeState, TaskSpec
from tests.support.driver import Driver, launches, sends, up
from tests.support.scenarios import make_scenario

ONE_REDUCE = [{"workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 1}]


class CopyOf:
    """A scripted speculator: one copy, of the first running attempt of ``stage``, on the first
    node with a free slot that is not its own (the rules are tested on their own)."""

    name = "copy-of"

    def __init__(self, stage: int) -> None:
        self.stage = stage
        self.copied = False
        self.task = ""
        self.snapshots: list[SpeculationSnapshot] = []

    def speculate(self, snapshot: SpeculationSnapshot) -> list[Speculate]:
        self.snapshots.append(snapshot)
        for attempt in snapshot.attempts if not self.copied else ():
            if attempt.stage == self.stage:
                for node in snapshot.nodes:
                    if node.free_slots and node.node_id != attempt.node_id and not node.draining:
                        self.copied, self.task = True, attempt.task_id
                        return [Speculate(attempt.task_id, node.node_id, "scripted")]
        return []


def started(stage: int, jobs=None) -> tuple[Driver, CopyOf]:  # type: ignore[no-untyped-def]
    speculator = CopyOf(stage)
    driver = Driver(make_scenario(jobs=jobs or ONE_REDUCE), speculator=speculator)
    driver.boot()
    driver.do(Round())
    return driver, speculator


def attempts_of(driver: Driver, task_id: str) -> list[tuple[str, TaskSpec]]:
    return [(n, s) for n, s in launches(driver.log) if s.task_id == task_id]


def roles(driver: Driver, task_id: str) -> list[tuple[int, str, str]]:
    return [
        (e["attempt"], e["status"], e["role"]) for e in driver.events("task_finished") if e["task"] == task_id
    ]


def task_record(driver: Driver, task_id: str):  # type: ignore[no-untyped-def]
    job = driver.core.jobs["j000"]
    return job.tasks[job.key_of(task_id)]  # type: ignore[index]


def lost(driver: Driver, node_id: str) -> NodeState:
    return up(node_id, driver.core.nodes[node_id].node_class, driver.core).model_copy(
        update={"state": "lost"}
    )


def test_a_copy_that_succeeds_first_wins_and_the_original_is_killed() -> None:
    driver, speculator = started(stage=0)
    (original, first), (elsewhere, copy) = attempts_of(driver, speculator.task)
    assert elsewhere != original and copy.attempt == first.attempt + 1
    out = driver.finish(elsewhere, copy)
    assert [(n, m.attempt) for n, m in sends(out, CancelTask)] == [(original, first.attempt)]
    assert roles(driver, speculator.task) == [(0, "killed", "original"), (1, "succeeded", "copy")]
    late = driver.finish(original, first)  # the killed attempt's result, had it raced the cancel
    assert Driver.events_of(late, "task_finished") == []
    driver.run_to_end()
    (job,) = driver.events("job_finished")
    assert job["status"] == "succeeded"
    assert (job["speculative_attempts"], job["speculative_wins"]) == (1, 1)
    assert job["wasted_slot_s"] >= 0.0


def test_a_killed_copys_late_update_is_dropped_quietly_not_taken_for_a_forgery() -> None:
    driver, speculator = started(stage=0)
    (original, first), (elsewhere, copy) = attempts_of(driver, speculator.task)
    driver.finish(original, first)  # the copy is cancelled: its node's updates may be on the way
    for state in ("running", "succeeded"):
        (said,) = driver.finish(elsewhere, copy, state=state)  # a debug line on the console, nothing else
        assert isinstance(said, cmd.Log) and said.level == "debug" and "master cancelled it" in said.message
    assert driver.events("forged_message") == []
    assert (driver.core.senders.late, driver.core.senders.forged) == (2, 0)
    third = next(n for n in driver.core.nodes if n not in (original, elsewhere))
    driver.finish(third, copy)  # another node reports the cancelled copy: a forgery still
    assert [e["node"] for e in driver.events("forged_message")] == [third]
    assert (driver.core.senders.late, driver.core.senders.forged) == (2, 1)


def test_an_original_that_succeeds_first_kills_its_copy() -> None:
    driver, speculator = started(stage=0)
    (original, first), (elsewhere, copy) = attempts_of(driver, speculator.task)
    out = driver.finish(original, first)
    assert [(n, m.attempt) for n, m in sends(out, CancelTask)] == [(elsewhere, copy.attempt)]
    assert roles(driver, speculator.task) == [(1, "killed", "copy"), (0, "succeeded", "original")]
    driver.run_to_end()
    (job,) = driver.events("job_finished")
    assert (job["status"], job["speculative_attempts"], job["speculative_wins"]) == ("succeeded", 1, 0)


def test_a_final_tasks_copy_commits_its_own_output_exactly_once() -> None:
    driver, speculator = started(stage=1)
    for node_id, spec in [(n, s) for n, s in driver.running().values() if s.stage == 0]:
        driver.finish(node_id, spec)
    driver.do(Round())  # the reduce starts
    driver.do(Round())  # and gets its copy
    (original, first), (elsewhere, copy) = attempts_of(driver, speculator.task)
    assert copy.output_url.endswith(f"/{copy.attempt}") and first.output_url.endswith(f"/{first.attempt}")
    driver.finish(elsewhere, copy)
    driver.finish(original, first)
    commits = [(c.index, c.attempt) for c in driver.log if isinstance(c, cmd.CommitOutput)]
    assert commits == [(0, copy.attempt)]
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]


def test_an_original_lost_with_its_node_hands_the_task_to_its_copy() -> None:
    driver, speculator = started(stage=0)
    (original, _), (elsewhere, copy) = attempts_of(driver, speculator.task)
    driver.do(EvictRequest(EvictSpec(count=1), (original,)))
    driver.do(FromNode(original, lost(driver, original)))
    record = task_record(driver, speculator.task)
    assert (record.status, record.node, record.attempt) == ("running", elsewhere, copy.attempt)
    driver.do(Round())
    assert len(attempts_of(driver, speculator.task)) == 2  # not relaunched: its copy runs
    driver.finish(elsewhere, copy)
    driver.run_to_end()
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]
    assert roles(driver, speculator.task)[:2] == [(0, "lost", "original"), (1, "succeeded", "copy")]
    commits = [c.index for c in driver.log if isinstance(c, cmd.CommitOutput)]
    assert commits == [0]


def test_a_copy_lost_with_its_node_leaves_the_original_running() -> None:
    driver, speculator = started(stage=0)
    (original, first), (elsewhere, _) = attempts_of(driver, speculator.task)
    driver.do(EvictRequest(EvictSpec(count=1), (elsewhere,)))
    driver.do(FromNode(elsewhere, lost(driver, elsewhere)))
    record = task_record(driver, speculator.task)
    assert (record.status, record.node, record.attempt) == ("running", original, first.attempt)
    assert not driver.core.jobs["j000"].copies
    assert roles(driver, speculator.task) == [(1, "lost", "copy")]
    driver.run_to_end()
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]


def test_a_failed_copy_leaves_the_original_and_a_failed_original_its_copy() -> None:
    driver, speculator = started(stage=0)
    (original, first), (elsewhere, copy) = attempts_of(driver, speculator.task)
    driver.finish(original, first, state="failed", failure="error", error="boom")
    record = task_record(driver, speculator.task)
    assert (record.status, record.node, record.attempt) == ("running", elsewhere, copy.attempt)
    driver.finish(elsewhere, copy)
    driver.run_to_end()
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded"]


def test_the_snapshot_shows_reported_scores_and_their_rates() -> None:
    driver, speculator = started(stage=0)
    (original, first), *_ = attempts_of(driver, speculator.task)
    beat = Heartbeat(node_id=original, incarnation=f"i-{original}", seq=1, running=(first.task_id,),
                     attempts={first.task_id: first.attempt}, progress={first.task_id: 0.5})  # fmt: skip
    driver.do(FromNode(original, beat), at=2.0)
    driver.do(Round())
    shown = [
        a for a in speculator.snapshots[-1].attempts if (a.task_id, a.node_id) == (first.task_id, original)
    ]
    assert [(a.score, a.rate) for a in shown] == [(0.5, 0.5 / 2.0)]
    views = [t for n in driver.core.round.nodes.views() for t in n.running if t.task_id == first.task_id]
    assert any(v.progress == 0.5 for v in views)


def test_the_snapshot_keeps_each_nodes_finished_attempts_and_their_rate() -> None:
    driver, speculator = started(stage=0)
    (original, first), (elsewhere, _) = attempts_of(driver, speculator.task)
    driver.advance(4.0)
    driver.finish(original, first)  # the original wins after 4 s: rate 1 / 4; its copy is killed
    nodes = {n.node_id: n for n in driver.core.copies.snapshot().nodes}
    assert (nodes[original].finished_tasks, nodes[original].finished_rate) == (1, 0.25)
    assert (nodes[elsewhere].finished_tasks, nodes[elsewhere].finished_rate) == (0, 0.0)  # killed: no work


def test_without_speculation_no_row_has_a_role_and_no_job_a_count() -> None:
    driver = Driver(make_scenario(jobs=ONE_REDUCE))
    driver.boot()
    driver.run_to_end()
    assert all("role" not in e for e in driver.events("task_finished"))
    assert all("speculative_attempts" not in e for e in driver.events("job_finished"))
