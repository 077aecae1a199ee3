"""The snapshot's pending tasks reuse the last snapshot's views only where nothing they show
changed (``SchedulingRound._pending_task``)."""

from __future__ import annotations

from tests.support.driver import Driver
from tests.support.scenarios import make_scenario


def test_a_view_is_reused_until_what_it_shows_changes() -> None:
    jobs = [{"workload": "wordcount", "size_mb": 4, "maps": 40, "reduces": 2}]  # more maps than slots
    driver = Driver(make_scenario(jobs=jobs, policy={"scheduler": "yarn"}))  # it sees every ready task
    driver.boot()
    core = driver.core
    job = core.jobs["j000"]
    first = {t.task_id: t for view in core.snapshot()[0].jobs for t in view.pending}
    assert first and all(
        t is first[t.task_id] for view in core.snapshot()[0].jobs for t in view.pending
    )  # nothing changed: the very same views
    job.est_duration_s += 1.0
    second = {t.task_id: t for view in core.snapshot()[0].jobs for t in view.pending}
    assert all(second[t] is not first[t] for t in first)  # the job's estimate is in every view
    assert all(second[t].est_duration_s == first[t].est_duration_s + 1.0 for t in first)


def test_a_job_view_is_reused_until_its_tasks_or_counts_change() -> None:
    jobs = [{"workload": "wordcount", "size_mb": 4, "maps": 40, "reduces": 2}]
    driver = Driver(make_scenario(jobs=jobs, policy={"scheduler": "yarn"}))
    driver.boot()
    core = driver.core
    (first,) = core.snapshot()[0].jobs
    (again,) = core.snapshot()[0].jobs
    assert again is first  # nothing changed
    core.jobs["j000"].est_duration_s += 1.0  # every pending task's view changes
    (changed,) = core.snapshot()[0].jobs
    assert changed is not first and changed.pending != first.pending


def test_the_free_node_index_is_built_only_for_a_scheduler_that_reads_it() -> None:
    jobs = [{"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 2}]
    for scheduler, indexed in (("fifo", True), ("eagle", False)):
        driver = Driver(make_scenario(jobs=jobs, policy={"scheduler": scheduler}))
        driver.boot()
        snapshot, _ = driver.core.round.snapshot(free=True)
        assert (snapshot.free is not None) == indexed, scheduler
