"""The snapshot's pending tasks reuse the last snapshot's views only where nothing they show
changed (``SchedulingRound._pending_task``)."""

from __future__ import annotations

from tests.conftest import make_scenario
from tests.core.driver import Driver


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
