"""The core's estimate of how long a task's output stays needed where it runs and what its loss
costs (``master.core.exposure``), and the task views that carry it (``PendingTask.exposed_s``)."""

from __future__ import annotations

import pytest

from master.core.events import Round
from master.core.exposure import NONE, Exposure, StageDurations, exposure, rounded
from master.core.jobs import JobRuntime
from testbed.api.policy import PendingTask
from testbed.plan import Dependency, JobPlan, StagePlan
from tests.support.driver import Driver
from tests.support.scenarios import make_scenario


def wordcount(maps: int = 4, reduces: int = 2) -> JobRuntime:
    stages = (
        StagePlan("map", maps, partitions=reduces),
        StagePlan("reduce", reduces, deps=(Dependency(0, "shuffle"),), final=True),
    )
    return JobRuntime("j000", "wc", "wordcount", JobPlan("wordcount", stages), 0.0, 100, est_duration_s=2.0)


def test_a_final_stages_output_is_not_exposed() -> None:
    assert exposure(wordcount(), 1, StageDurations(), 0.0) == NONE


def test_before_any_success_the_jobs_estimate_stands_for_each_stage() -> None:
    """Its own run (2 s), then the reduce's (2 s); losing it costs both."""
    assert exposure(wordcount(), 0, StageDurations(), 0.0) == Exposure(4.0, 4.0)


def test_the_stages_rate_so_far_and_the_observed_means_make_the_estimate() -> None:
    job, durations = wordcount(), StageDurations()
    for index in range(2):
        job.launched((0, index), "n0", 100, 0.0)
    job.succeeded((0, 0), 0, "url", "block", (1, 1), now=6.0)
    durations.observed(job, 0, 6.0)
    durations.observed(job, 1, 9.0)
    durations.observed(job, 1, 11.0)  # another job's reduces, of the same workload
    # 1 of 4 outputs in 6 s: 18 s more for the other 3, then a 10 s reduce
    assert exposure(job, 0, durations, 6.0) == Exposure(rounded(18.0 + 10.0), rounded(6.0 + 10.0))
    assert rounded(28.0) == pytest.approx(2**4.75)  # a quarter octave


TRANSIENT = {"scheduler": "firmament", "options": {"firmament": {"cost_model": "transient"}}}
"""The one built-in scheduler that reads the exposure (``Scheduler.needs_exposure``)."""


def test_maps_views_carry_their_exposure_and_reduces_none() -> None:
    jobs = [{"workload": "wordcount", "size_mb": 4, "maps": 40, "reduces": 2}]  # more maps than slots
    driver = Driver(make_scenario(jobs=jobs, policy=TRANSIENT))
    driver.boot()
    (view,) = driver.core.snapshot()[0].jobs
    prior = driver.core.jobs["j000"].stage_prior_s  # the shell's, before any success
    assert len(prior) == 2 and all(0.0 < seconds < 1.0 for seconds in prior)  # 0.1 MB splits
    expected = (rounded(sum(prior)), rounded(sum(prior)))
    assert view.pending and all((t.exposed_s, t.loss_s) == expected for t in view.pending)
    reduces: list[PendingTask] = []
    for _ in range(100):
        driver.advance(driver.now + 0.5)
        for node_id, spec in list(driver.running().values()):
            driver.finish(node_id, spec)
        reduces = [t for v in driver.core.snapshot()[0].jobs for t in v.pending if t.stage == 1]
        if reduces:
            break
        driver.do(Round())
    assert reduces and all((t.exposed_s, t.loss_s) == (0.0, 0.0) for t in reduces)
    assert set(driver.core.durations.totals) == {("wordcount", 0)}


def test_an_exposed_view_is_reused_until_its_estimate_moves() -> None:
    jobs = [{"workload": "wordcount", "size_mb": 4, "maps": 40, "reduces": 2}]
    driver = Driver(make_scenario(jobs=jobs, policy=TRANSIENT))
    driver.boot()
    core = driver.core
    first = {t.task_id: t for view in core.snapshot()[0].jobs for t in view.pending}
    map_s, reduce_s = core.jobs["j000"].stage_prior_s
    nudged = reduce_s * 1.01
    assert rounded(map_s + nudged) == rounded(map_s + reduce_s)  # the same to a quarter octave
    core.durations.observed(core.jobs["j000"], 1, nudged)
    assert all(t is first[t.task_id] for view in core.snapshot()[0].jobs for t in view.pending)
    core.durations.observed(core.jobs["j000"], 1, 60.0)
    moved = [t for view in core.snapshot()[0].jobs for t in view.pending]
    assert moved and all(t is not first[t.task_id] and t.exposed_s > 2.0 for t in moved)


@pytest.mark.parametrize(
    "policy",
    [{"scheduler": "yarn"}, {"scheduler": "firmament"}, {"scheduler": "fifo"}],
    ids=["yarn", "firmament-quincy", "fifo"],
)
def test_a_scheduler_that_reads_no_exposure_is_shown_none(policy: dict[str, object]) -> None:
    jobs = [{"workload": "wordcount", "size_mb": 4, "maps": 40, "reduces": 2}]
    driver = Driver(make_scenario(jobs=jobs, policy=policy))
    driver.boot()
    driver.core.durations.observed(driver.core.jobs["j000"], 1, 30.0)
    tasks = [t for view in driver.core.snapshot()[0].jobs for t in view.pending]
    assert tasks and all((t.exposed_s, t.loss_s) == (0.0, 0.0) for t in tasks)


def test_before_any_success_the_stages_prior_stands_for_each_stage() -> None:
    """The shell's prior (3 s a map, 5 s a reduce) before the job's 2 s estimate."""
    job = wordcount()
    job.stage_prior_s = (3.0, 5.0)
    assert exposure(job, 0, StageDurations(), 0.0) == Exposure(rounded(8.0), rounded(8.0))


def test_an_observed_stage_replaces_its_prior_and_only_its() -> None:
    job, durations = wordcount(), StageDurations()
    job.stage_prior_s = (3.0, 5.0)
    durations.observed(job, 1, 11.0)
    assert (durations.mean(job, 0), durations.mean(job, 1)) == (3.0, 11.0)
    assert exposure(job, 0, durations, 0.0) == Exposure(rounded(14.0), rounded(14.0))
