"""The core's estimate of how long a task's output stays needed where it runs and what its loss
costs (``master.core.exposure``), and the task views that carry it (``PendingTask.exposed_s``)."""

from __future__ import annotations

import pytest

from master.core.events import Round
from master.core.exposure import Exposure, StageDurations, exposure, reader_tasks, rounded
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


def test_a_final_stages_output_is_not_exposed_but_its_run_is_estimated() -> None:
    assert exposure(wordcount(), 1, StageDurations(), 0.0) == Exposure(0.0, 0.0, 2.0)


def test_before_any_success_the_jobs_estimate_stands_for_each_stage() -> None:
    """Its own run (2 s), then the reduce's (2 s); losing it costs its own run and both
    reduces' (each reads a partition of it)."""
    assert exposure(wordcount(), 0, StageDurations(), 0.0) == Exposure(4.0, rounded(6.0), 2.0)


def test_the_stages_rate_so_far_and_the_observed_means_make_the_estimate() -> None:
    job, durations = wordcount(), StageDurations()
    for index in range(2):
        job.launched((0, index), "n0", 100, 0.0)
    job.succeeded((0, 0), 0, "url", "block", (1, 1), now=6.0)
    durations.observed(job.workload, 0, 6.0)
    durations.observed(job.workload, 1, 9.0)
    durations.observed(job.workload, 1, 11.0)  # another job's reduces, of the same workload
    # 1 of 4 outputs in 6 s: 18 s more for the other 3, then a 10 s reduce
    expected = Exposure(rounded(18.0 + 10.0), rounded(6.0 + 2 * 10.0), rounded(6.0))
    assert exposure(job, 0, durations, 6.0) == expected
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
    expected = (rounded(sum(prior)), rounded(prior[0] + 2 * prior[1]), rounded(prior[0]))
    assert view.pending and all((t.exposed_s, t.loss_s, t.expected_run_s) == expected for t in view.pending)
    reduces: list[PendingTask] = []
    for _ in range(100):
        driver.advance(driver.now + 0.5)
        for node_id, spec in list(driver.running().values()):
            driver.finish(node_id, spec)
        reduces = [t for v in driver.core.snapshot()[0].jobs for t in v.pending if t.stage == 1]
        if reduces:
            break
        driver.do(Round())
    reduce_view = (0.0, 0.0, rounded(prior[1]))  # not exposed, its own run estimated
    assert reduces and all((t.exposed_s, t.loss_s, t.expected_run_s) == reduce_view for t in reduces)
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
    assert rounded(map_s + 2 * nudged) == rounded(map_s + 2 * reduce_s)
    core.durations.observed(core.jobs["j000"].workload, 1, nudged)
    assert all(t is first[t.task_id] for view in core.snapshot()[0].jobs for t in view.pending)
    core.durations.observed(core.jobs["j000"].workload, 1, 60.0)
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
    driver.core.durations.observed(driver.core.jobs["j000"].workload, 1, 30.0)
    tasks = [t for view in driver.core.snapshot()[0].jobs for t in view.pending]
    assert tasks and all((t.exposed_s, t.loss_s, t.expected_run_s) == (0.0, 0.0, 0.0) for t in tasks)


def test_before_any_success_the_stages_prior_stands_for_each_stage() -> None:
    """The shell's prior (3 s a map, 5 s a reduce) before the job's 2 s estimate."""
    job = wordcount()
    job.stage_prior_s = (3.0, 5.0)
    assert exposure(job, 0, StageDurations(), 0.0) == Exposure(rounded(8.0), rounded(13.0), rounded(3.0))
    assert exposure(job, 1, StageDurations(), 0.0) == Exposure(run_s=rounded(5.0))


def test_an_observed_stage_replaces_its_prior_and_only_its() -> None:
    job, durations = wordcount(), StageDurations()
    job.stage_prior_s = (3.0, 5.0)
    durations.observed(job.workload, 1, 11.0)
    assert (durations.mean(job, 0), durations.mean(job, 1)) == (3.0, 11.0)
    assert exposure(job, 0, durations, 0.0) == Exposure(rounded(14.0), rounded(25.0), rounded(3.0))


def test_the_work_lost_counts_every_reduce_that_reads_the_output() -> None:
    """8 reduces of 5 s each read a partition of every map's output: losing one before they
    have read it costs the map (3 s) and all 8 reduces' runs, not one's."""
    job = wordcount(maps=4, reduces=8)
    job.stage_prior_s = (3.0, 5.0)
    assert reader_tasks(job, 0, 1) == 8
    assert exposure(job, 0, StageDurations(), 0.0).loss_s == rounded(3.0 + 8 * 5.0)


def test_a_narrow_reader_counts_once_and_every_reading_stage_counts() -> None:
    """Stage 0's output is read by stage 1's task of its index (narrow) and by every one of
    stage 2's 3 tasks (broadcast): the loss is its run, one of stage 1's and all of stage 2's;
    the exposure lasts until the longer of the two stages has run."""
    stages = (
        StagePlan("map", 4, partitions=4),
        StagePlan("map", 4, deps=(Dependency(0, "narrow"),), partitions=3),
        StagePlan("reduce", 3, deps=(Dependency(1, "shuffle"), Dependency(0, "broadcast")), final=True),
    )
    job = JobRuntime("j000", "dag", "dag", JobPlan("dag", stages), 0.0, 100, stage_prior_s=(2.0, 4.0, 6.0))
    assert [reader_tasks(job, 0, reader) for reader in (1, 2)] == [1, 3]
    assert exposure(job, 0, StageDurations(), 0.0) == Exposure(
        rounded(2.0 + 6.0), rounded(2.0 + 4.0 + 3 * 6.0), 2.0
    )


def test_a_job_with_its_own_estimate_keeps_it_as_its_tasks_run() -> None:
    """A sleep job's estimate is its own; the stage's mean mixes every sleep job of the run."""
    estimated = JobRuntime("j001", "s", "sleep", JobPlan("sleep", (StagePlan("sleep", 2),)), 0.0, 100)
    estimated.est_duration_s, estimated.estimated = 900.0, True
    other = JobRuntime("j002", "s", "sleep", JobPlan("sleep", (StagePlan("sleep", 2),)), 0.0, 100)
    durations = StageDurations()
    durations.observed(other.workload, 0, 60.0)
    assert (durations.run(estimated, 0), durations.run(other, 0)) == (900.0, rounded(60.0))


def test_a_sleep_jobs_view_shows_its_own_estimate_as_its_run() -> None:
    jobs = [{"workload": "sleep", "tasks": 40, "duration": "90s"}]
    driver = Driver(make_scenario(jobs=jobs, policy=TRANSIENT))
    driver.boot()
    job = driver.core.jobs["j000"]
    tasks = [t for view in driver.core.snapshot()[0].jobs for t in view.pending]
    assert job.estimated and tasks
    assert all(t.expected_run_s == t.est_duration_s == job.est_duration_s for t in tasks)


def test_an_attempt_launched_at_time_zero_is_observed_for_its_whole_run() -> None:
    """The first maps launch at 0.0 s: each success at 0.5 s is a 0.5 s attempt (``started or
    now`` took a launch at 0.0 for none, and observed 0 s)."""
    jobs = [{"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 1}]
    driver = Driver(make_scenario(jobs=jobs, policy=TRANSIENT))
    driver.boot()
    assert driver.now == 0.0
    launched = list(driver.running().values())
    assert launched
    driver.advance(0.5)
    for node_id, spec in launched:
        driver.finish(node_id, spec)
    assert driver.core.durations.totals[("wordcount", 0)] == (0.5 * len(launched), len(launched))
