"""Chained jobs in the core (``jobs[].after``): held until the parent ends, located through the
shell (``LocateOutput`` -> ``OutputLocated``), failed with the parent; no file read by the core
but the located input's own planning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from master.core import commands as cmd
from master.core.events import JobFailed, OutputLocated, Round
from master.shell.resume_run import recover
from testbed.scenario.schema import Scenario, ScenarioError
from tests.support.driver import Driver
from tests.support.scenarios import make_scenario

PARENT = {"name": "counts", "workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 2}
CHILD = {"name": "again", "workload": "wordcount", "after": "counts", "maps": 1, "reduces": 1}
GRANDCHILD = {"name": "thrice", "workload": "wordcount", "after": "again", "maps": 1, "reduces": 1}


def chained(*jobs: dict[str, object]) -> Scenario:
    return make_scenario(jobs=list(jobs))


def test_the_child_waits_for_its_parent_and_is_planned_from_the_located_output(tmp_path: Path) -> None:
    driver = Driver(chained(PARENT, CHILD))
    driver.boot()
    assert [c.job_id for c in driver.log if isinstance(c, cmd.PrepareJob)] == ["j000"]  # the child is held
    driver.run_to_end()
    (locate,) = [c for c in driver.log if isinstance(c, cmd.LocateOutput)]
    assert (locate.job_id, locate.ordinal) == ("j000", 1)
    assert [c for c in driver.log if isinstance(c, cmd.RunOver)] == []  # the child is still to run
    part = tmp_path / "part-00000"
    part.write_text("alpha\t3\nbeta\t1\n", encoding="utf-8")
    out = driver.do(OutputLocated(locate.ordinal, str(tmp_path / "part-*")))
    (submitted,) = Driver.events_of(out, "job_submitted")
    assert submitted["job"] == "j001"
    assert driver.core.jobs["j001"].submitted >= driver.core.jobs["j000"].finished  # type: ignore[operator]
    driver.run_to_end()
    assert [e["status"] for e in driver.events("job_finished")] == ["succeeded", "succeeded"]
    assert [c.ok for c in driver.log if isinstance(c, cmd.RunOver)] == [True]


def test_a_failed_parent_fails_its_chain_with_the_reason() -> None:
    driver = Driver(chained(PARENT, CHILD, GRANDCHILD))
    driver.boot()
    driver.do(JobFailed("j000", "a bad record"))
    finished = {e["job"]: e for e in driver.events("job_finished")}
    assert finished["j000"]["status"] == "failed"
    assert finished["j001"]["status"] == finished["j002"]["status"] == "failed"
    assert "its parent job 'counts' (j000) failed" in finished["j001"]["error"]
    assert "its parent job 'again' (j001) failed" in finished["j002"]["error"]
    assert [c for c in driver.log if isinstance(c, cmd.LocateOutput)] == []
    assert [c.ok for c in driver.log if isinstance(c, cmd.RunOver)] == [False]


def test_a_child_whose_located_input_cannot_be_planned_fails_its_own_children(tmp_path: Path) -> None:
    driver = Driver(chained(PARENT, CHILD, GRANDCHILD))
    driver.boot()
    driver.run_to_end()
    (locate,) = [c for c in driver.log if isinstance(c, cmd.LocateOutput)]
    driver.do(OutputLocated(locate.ordinal, str(tmp_path / "part-*")))  # no part file there
    finished = {e["job"]: e for e in driver.events("job_finished")}
    assert finished["j001"]["status"] == finished["j002"]["status"] == "failed"
    assert "cannot plan the job" in finished["j001"]["error"]
    assert [c.ok for c in driver.log if isinstance(c, cmd.RunOver)] == [False]


@pytest.mark.parametrize(
    ("jobs", "message"),
    [
        (
            [PARENT, {**CHILD, "after": "nobody"}],
            r"jobs\.1\.after: no job named 'nobody'; named jobs: again, counts",
        ),
        (
            [{**PARENT, "after": "again"}, CHILD],
            r"jobs\.0\.after: a cycle of chained jobs \(counts -> again -> counts\)",
        ),
        ([{**PARENT, "repeat": 2}, CHILD], r"jobs\.1\.after: job 'counts' is submitted 2 times \(repeat\)"),
        (
            [{"name": "counts", "workload": "sleep", "duration": 1}, CHILD],
            r"jobs\.1\.after: job 'counts' is a sleep job, which writes no output",
        ),
        (
            [PARENT, {**CHILD, "workload": "sort"}],
            r"jobs\.1\.after: a sort job cannot read another job's output",
        ),
        (
            [PARENT, {**CHILD, "input": __file__}],
            r"jobs\.1\.after: a chained job reads its parent's output; remove",
        ),
        ([PARENT, {**CHILD, "submit_at": 5}], r"jobs\.1\.after: a chained job is submitted once"),
    ],
)
def test_a_malformed_chain_is_refused_at_load_naming_the_field(
    jobs: list[dict[str, object]], message: str
) -> None:
    with pytest.raises(ScenarioError, match=message):
        chained(*jobs)


def test_the_simulator_refuses_a_chain() -> None:
    with pytest.raises(ScenarioError, match=r"jobs\.1\.after: --backend sim produces no job outputs"):
        make_scenario(jobs=[PARENT, CHILD], backend="sim")


def _crash(driver: Driver, run_dir: Path) -> float:
    """The master dies now: its journal written where ``recover`` reads it; the crash's time."""
    journal = [{"t": c.t, "event": c.kind, **c.fields} for c in driver.log if isinstance(c, cmd.Journal)]
    (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in journal))
    return max(e["t"] for e in journal)


def test_a_resumed_run_locates_the_child_of_a_parent_that_succeeded_before_the_crash(tmp_path: Path) -> None:
    scenario = chained(PARENT, CHILD)
    first = Driver(scenario)
    first.boot()
    first.run_to_end()  # the parent succeeded; the master dies before the shell's answer
    crashed_at = _crash(first, tmp_path)
    resumed = Driver(scenario, resume=recover(tmp_path))
    resumed.now = crashed_at
    resumed.boot()
    (locate,) = [c for c in resumed.log if isinstance(c, cmd.LocateOutput)]
    assert (locate.job_id, locate.ordinal) == ("j000", 1)
    (tmp_path / "part-00000").write_text("alpha\t3\n", encoding="utf-8")
    resumed.do(OutputLocated(1, str(tmp_path / "part-*")))
    resumed.run_to_end()
    assert [(e["job"], e["status"]) for e in resumed.events("job_finished")] == [("j001", "succeeded")]
    assert [c.ok for c in resumed.log if isinstance(c, cmd.RunOver)] == [True]


def test_a_resumed_run_holds_the_child_of_a_parent_still_running(tmp_path: Path) -> None:
    scenario = chained(PARENT, CHILD)
    first = Driver(scenario)
    first.boot()
    first.do(Round())  # the parent's maps run; the master dies
    crashed_at = _crash(first, tmp_path)
    resumed = Driver(scenario, resume=recover(tmp_path))
    resumed.now = crashed_at
    resumed.boot()
    assert [c for c in resumed.log if isinstance(c, cmd.LocateOutput)] == []
    resumed.run_to_end()
    (locate,) = [c for c in resumed.log if isinstance(c, cmd.LocateOutput)]
    assert (locate.job_id, locate.ordinal) == ("j000", 1)
