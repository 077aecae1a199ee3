"""A scheduler's ``Preempt`` and ``Migrate`` in the core, driven by events alone: the attempt is
killed and its task re-queued (or moved), its work counted as wasted, a late success of the
killed attempt ignored, and a final task's output committed exactly once."""

from __future__ import annotations

from master.core import commands as cmd
from master.core.events import Round
from master.schedulers.fifo import FifoScheduler
from testbed.api.policy import ClusterSnapshot, Decision, Migrate, Preempt, Scheduler
from testbed.wire.protocol import CancelTask, TaskSpec
from tests.support.driver import Driver, launches, sends
from tests.support.scenarios import make_scenario

BACKLOG = [{"workload": "wordcount", "size_mb": 4, "maps": 12, "reduces": 1}]
"""More maps than the cluster's slots: every round has pending tasks, so the scheduler is asked."""


class Scripted(Scheduler):
    """FIFO, plus the decisions a test puts in ``then`` (given once, before FIFO's, at the next
    round that asks)."""

    needs_all_pending = True

    def __init__(self) -> None:
        self.fifo = FifoScheduler()
        self.then: list[Decision] = []

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        extra, self.then = self.then, []
        return [*extra, *self.fifo.schedule(snapshot)]


def started(jobs: list[dict] | None = None) -> tuple[Driver, Scripted]:  # type: ignore[type-arg]
    scheduler = Scripted()
    driver = Driver(make_scenario(jobs=jobs or BACKLOG), scheduler=scheduler)
    driver.boot()
    driver.do(Round())
    return driver, scheduler


def attempts_of(driver: Driver, task_id: str) -> list[tuple[str, TaskSpec]]:
    return [(n, s) for n, s in launches(driver.log) if s.task_id == task_id]


def finished(driver: Driver, task_id: str) -> list[tuple[int, str, str | None]]:
    return [
        (e["attempt"], e["status"], e["failure"])
        for e in driver.events("task_finished")
        if e["task"] == task_id
    ]


def record_of(driver: Driver, task_id: str):  # type: ignore[no-untyped-def]
    job = driver.core.jobs["j000"]
    return job.tasks[job.key_of(task_id)]  # type: ignore[index]


def test_a_preempted_attempt_is_killed_requeued_and_its_late_success_ignored() -> None:
    driver, scheduler = started()
    ((node, first),) = attempts_of(driver, "j000.s0.t0")
    scheduler.then = [Preempt("j000.s0.t0", "test")]
    before = len(driver.log)
    driver.do(Round(), at=1.5)
    assert [(n, m.task_id, m.attempt) for n, m in sends(driver.log[before:], CancelTask)] == [
        (node, "j000.s0.t0", first.attempt)
    ]
    (killed,) = [e for e in driver.events("task_finished") if e["task"] == "j000.s0.t0"]
    assert (killed["status"], killed["failure"], killed["error"]) == (
        "killed",
        "preempted",
        "preempted by the scheduler: test",
    )
    record = record_of(driver, "j000.s0.t0")
    assert record.failures == 0  # not a failure of the task
    driver.do(Round())
    assert (record.status, record.attempt) == ("running", first.attempt + 1)  # re-queued and placed again
    late = driver.finish(node, first)  # the killed attempt's success, had it raced the cancel
    assert Driver.events_of(late, "task_finished") == []
    assert driver.events("forged_message") == []  # late, from the node that ran it: no forgery
    assert (record.status, record.attempt) == ("running", first.attempt + 1)
    driver.run_to_end()
    (job,) = driver.events("job_finished")
    assert job["status"] == "succeeded"
    assert job["preempted_attempts"] == 1
    assert 0 < job["wasted_slot_s"] <= 1.5  # the killed attempt's run: started at 0, killed by 1.5
    (second,) = [s for _, s in attempts_of(driver, "j000.s0.t0")[1:]]
    assert second.attempt == first.attempt + 1
    assert [status for _, status, _ in finished(driver, "j000.s0.t0")] == ["killed", "succeeded"]


def test_a_migrated_task_starts_again_on_its_target_at_once() -> None:
    driver, scheduler = started()
    ((origin, first),) = attempts_of(driver, "j000.s0.t0")
    job = driver.core.jobs["j000"]
    driver.finish(*next((n, s) for n, s in driver.running().values() if n != origin))  # a slot frees
    target = next(n for n, rec in driver.core.nodes.items() if n != origin and len(rec.running) < rec.slots)
    scheduler.then = [Migrate("j000.s0.t0", target)]
    driver.do(Round(), at=2.0)
    (_, (moved_to, second)) = attempts_of(driver, "j000.s0.t0")
    assert (moved_to, second.attempt) == (target, first.attempt + 1)
    record = record_of(driver, "j000.s0.t0")
    assert (record.status, record.node, record.attempt) == ("running", target, second.attempt)
    (killed,) = [e for e in driver.events("task_finished") if e["task"] == "j000.s0.t0"]
    assert (killed["node"], killed["failure"], killed["error"]) == (
        origin,
        "preempted",
        f"migrated to {target}",
    )
    assert driver.core.copies.preempted[job.job_id] == 1


def test_decisions_that_do_not_hold_change_nothing() -> None:
    driver, scheduler = started()
    ((origin, _),) = attempts_of(driver, "j000.s0.t0")
    full = next(n for n, rec in driver.core.nodes.items() if n != origin and len(rec.running) == rec.slots)
    before = len(driver.log)
    scheduler.then = [
        Preempt("j000.s0.t11"),  # pending, not running
        Preempt("j999.s0.t0"),  # no such job
        Migrate("j000.s0.t0", origin),  # its own node
        Migrate("j000.s0.t0", full),  # no free slot there
        Migrate("j000.s0.t0", "nowhere"),
    ]
    driver.do(Round(), at=1.0)
    assert sends(driver.log[before:], CancelTask) == []
    assert driver.events("task_finished") == []
    assert record_of(driver, "j000.s0.t0").node == origin
    assert driver.core.copies.preempted == {}


def test_a_preempted_final_task_commits_its_output_exactly_once() -> None:
    short = {"workload": "wordcount", "size_mb": 4, "maps": 2, "reduces": 1}
    backlog = {"workload": "wordcount", "size_mb": 4, "maps": 40, "reduces": 1}  # keeps rounds asking
    driver, scheduler = started([short, backlog])
    while not any(s.final and s.job_id == "j000" for _, s in driver.running().values()):
        driver.finish(*next((n, s) for n, s in driver.running().values() if s.job_id == "j000"))
        driver.do(Round())
    (node, first) = next((n, s) for n, s in driver.running().values() if s.final and s.job_id == "j000")
    scheduler.then = [Preempt(first.task_id)]
    driver.do(Round())
    late = driver.finish(node, first)  # the killed attempt's output, staged and reported late
    assert not any(isinstance(c, cmd.CommitOutput) for c in late)
    driver.run_to_end()
    commits = [(c.job_id, c.index, c.attempt) for c in driver.log if isinstance(c, cmd.CommitOutput)]
    (_, second) = attempts_of(driver, first.task_id)[-1]
    assert second.attempt > first.attempt
    assert [c for c in commits if c[0] == "j000"] == [("j000", 0, second.attempt)]
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded", "succeeded"]
