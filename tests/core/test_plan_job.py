"""Planning a job is the shell's I/O: the core asks (``PlanJob``) and goes on with the answer
(``JobPlanned``, ``JobPlanFailed``); the timers due meanwhile wait for it."""

from __future__ import annotations

from typing import Any

from master.core import commands as cmd
from master.core.events import Begin, JobPlanFailed, JobPlanned, Wake
from master.core.machine import MasterCore
from master.shell import answers
from tests.support.driver import Driver
from tests.support.masters import core_act
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

TWO_AT_ONCE = [{"workload": "sleep", "tasks": 2, "duration": 1, "repeat": 2}]


def journaled(commands: list[cmd.Command], kind: str) -> list[dict[str, Any]]:
    return Driver.events_of(commands, kind)


def asked(scenario_jobs: list[dict[str, Any]]) -> tuple[MasterCore, cmd.PlanJob]:
    """A core whose first job has arrived: the one plan it asks for."""
    core = MasterCore(settings_of(make_scenario(jobs=scenario_jobs)), "plan-test")
    core.start(0.0)
    _, out = core_act(core, 1.0, core.submit_job, core.settings.jobs[0], 0)
    (plan,) = [c for c in out if isinstance(c, cmd.PlanJob)]
    assert journaled(out, "job_submitted") == [] and core.jobs == {}
    return core, plan


def test_the_core_asks_for_the_plan_and_submits_the_job_on_its_answer() -> None:
    core, plan = asked([{"workload": "sleep", "tasks": 3, "duration": 2}])
    assert (plan.ordinal, plan.seed, plan.spec) == (0, 7000, core.settings.jobs[0])
    answer = answers.plan(plan, core.settings)
    assert isinstance(answer, JobPlanned) and answer.plan.total_tasks == 3
    out = core.handle(JobPlanned(0, answer.plan, (96,), estimate_s=2.0, long=True), 1.5)
    (submitted,) = journaled(out, "job_submitted")
    assert (submitted["job"], submitted["tasks"], submitted["long"], submitted["est_s"]) == (
        "j000",
        3,
        True,
        2.0,
    )
    assert [c.job_id for c in out if isinstance(c, cmd.PrepareJob)] == ["j000"]
    job = core.jobs["j000"]
    assert (job.submitted, job.memory_mb, job.stage_memory_mb) == (1.0, 96, (96,))


def test_a_job_that_cannot_be_planned_fails_with_the_shells_message_and_the_run_goes_on() -> None:
    core, _ = asked(
        [{"workload": "sleep", "tasks": 1, "duration": 1}, {"workload": "sleep", "tasks": 1, "duration": 1}]
    )
    out = core.handle(JobPlanFailed(0, "input gone: data/x.txt"), 2.0)
    (finished,) = journaled(out, "job_finished")
    assert (finished["job"], finished["status"]) == ("j000", "failed")
    assert finished["error"] == "cannot plan the job: input gone: data/x.txt"
    assert cmd.Log("warning", "job j000 cannot be planned: input gone: data/x.txt") in out
    assert core.jobs == {} and not any(isinstance(c, cmd.RunOver) for c in out)  # j001 is still to come


def test_timers_due_with_a_plan_asked_wait_for_its_answer() -> None:
    core = MasterCore(settings_of(make_scenario(jobs=TWO_AT_ONCE)), "plan-test")
    core.start(0.0)
    core.handle(Begin(0.0), 0.0)
    out = core.handle(Wake(), 0.0)
    assert [c.ordinal for c in out if isinstance(c, cmd.PlanJob)] == [0]  # j001's arrival waits
    assert not any(isinstance(c, cmd.WakeAt) for c in out)  # the held timers are not asked for again
    first = answers.plan(next(c for c in out if isinstance(c, cmd.PlanJob)), core.settings)
    out = core.handle(first, 0.0)
    assert [e["job"] for e in journaled(out, "job_submitted")] == ["j000"]
    assert [c.ordinal for c in out if isinstance(c, cmd.PlanJob)] == [1]  # then j001's, in its order


def test_a_shell_answers_within_the_turn_in_arrival_order() -> None:
    driver = Driver(make_scenario(jobs=TWO_AT_ONCE))
    driver.boot()
    kinds = [
        f"plan {c.ordinal}" if isinstance(c, cmd.PlanJob) else f"submit {c.fields['job']}"
        for c in driver.log
        if isinstance(c, cmd.PlanJob) or (isinstance(c, cmd.Journal) and c.kind == "job_submitted")
    ]
    assert kinds == ["plan 0", "submit j000", "plan 1", "submit j001"]
