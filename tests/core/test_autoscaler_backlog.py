"""A plugin autoscaler sees the whole backlog: every ready task not yet started, whatever window
the scheduler sees (FIFO's: as many tasks as free slots) and whatever its round just started."""

from __future__ import annotations

import pytest

from master.core.events import Round
from testbed.api import Autoscaler, ClusterSnapshot, Launch, ScaleDecision
from testbed.scenario.schema import parse_scenario
from tests.support.driver import Driver


class Counting(Autoscaler):
    """Decides nothing; keeps the backlog each snapshot showed it."""

    def __init__(self) -> None:
        self.waiting: list[int] = []

    def decide(self, snapshot: ClusterSnapshot, provisioning: int) -> list[ScaleDecision]:
        self.waiting.append(sum(len(job.pending) for job in snapshot.jobs))
        return []


class LaunchesOnce(Counting):
    """One launch while tasks wait, with its own facts."""

    def decide(self, snapshot: ClusterSnapshot, provisioning: int) -> list[ScaleDecision]:
        super().decide(snapshot, provisioning)
        return [Launch("transient", reason="backlog")] if self.waiting[-1] and not provisioning else []

    def facts(self, snapshot: ClusterSnapshot) -> dict[str, int]:
        return {"waiting": sum(len(job.pending) for job in snapshot.jobs), "reason": 1}


def ten_tasks_on_two_slots(scheduler: str, autoscaler: Autoscaler, *more: int) -> Driver:
    """One job of ten 60 s tasks, and jobs of ``more`` tasks each, on one node of two slots."""
    jobs = [{"workload": "sleep", "tasks": n, "duration": "60s"} for n in (10, *more)]
    scenario = parse_scenario(
        {
            "name": "backlog",
            "cluster": {"reserved": {"count": 1, "slots": 2}, "transient": 0},
            "policy": {"scheduler": scheduler},
            "jobs": jobs,
        }
    )
    return Driver(scenario, autoscaler=autoscaler)


@pytest.mark.parametrize("scheduler", ["fifo", "yarn"])
def test_ten_ready_tasks_on_two_slots_show_eight_waiting(scheduler: str) -> None:
    """FIFO's round sees a window of 2 (it showed 2 waiting, then none on the full cluster);
    YARN's sees all 10, the 2 it starts among them (it showed 10)."""
    counting = Counting()
    driver = ten_tasks_on_two_slots(scheduler, counting)
    driver.boot()
    driver.do(Round())
    assert len(driver.running()) == 2  # the cluster is full
    driver.do(Round())
    assert counting.waiting and set(counting.waiting) == {8}, counting.waiting


def test_fifo_shows_the_autoscaler_the_jobs_beyond_its_window() -> None:
    """FIFO's window ends inside the first job (its round shows the later jobs with no pending
    task); the autoscaler sees every job's ready tasks: 8 of the first, 3 and 5 of the others."""
    counting = Counting()
    driver = ten_tasks_on_two_slots("fifo", counting, 3, 5)
    driver.boot()
    driver.do(Round())
    driver.do(Round())
    assert len(driver.running()) == 2
    assert counting.waiting and set(counting.waiting) == {16}, counting.waiting


def test_a_plugins_facts_are_journaled_with_its_decision() -> None:
    """Facts the ``autoscale`` event has no field of (the docs' ``waiting``) failed the run:
    JournalSchemaError: journal event 'autoscale' has no field 'waiting'."""
    driver = ten_tasks_on_two_slots("fifo", LaunchesOnce())
    driver.boot()
    driver.do(Round())
    (launch,) = driver.events("autoscale")
    assert launch["action"] == "launch" and launch["reason"] == "backlog"
    assert launch["facts"] == {"waiting": 8, "reason": 1}
