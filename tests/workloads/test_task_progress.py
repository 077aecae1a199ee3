"""Progress scores of real worker tasks (Hadoop's definition, testbed.workloads.progress), phase
by phase, on small hand-built jobs run as an agent's worker runs them (testbed.workloads.local)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from testbed.scenario.schema import parse_scenario
from testbed.workloads.catalog import plan_job
from testbed.workloads.local import LocalJob
from testbed.workloads.progress import Progress, split_bytes
from testbed.workloads.sort import PIECE_RECORDS, RECORD


class Scores:
    """The receiving end of a worker's score, as the agent's shared double, keeping every store."""

    def __init__(self) -> None:
        self.seen: list[float] = []

    @property
    def value(self) -> float:
        return self.seen[-1] if self.seen else 0.0

    @value.setter
    def value(self, score: float) -> None:
        self.seen.append(score)


def local_job(tmp_path: Path, workload: str, size_mb: float, maps: int, reduces: int) -> LocalJob:
    job = {"workload": workload, "size_mb": size_mb, "maps": maps, "reduces": reduces}
    scenario = parse_scenario({"name": "t", "jobs": [job]})
    return LocalJob(plan_job(scenario.jobs[0], 3, scenario), tmp_path)


def test_a_sort_map_scores_the_fraction_of_its_split_read(tmp_path: Path) -> None:
    job = local_job(tmp_path, "sort", 8.0, 2, 2)
    scores = Scores()
    job.run_task(0, 0, 4 << 20, score=scores)
    split = split_bytes(job.plan.stages[0].params(0), RECORD)
    chunk = PIECE_RECORDS * RECORD  # a generated split comes in pieces of 10,000 records
    assert split > 3 * chunk
    expected = [min(split, k * chunk) / split for k in range(1, -(-split // chunk) + 1)]
    assert scores.seen == pytest.approx(expected)
    assert scores.seen[-1] == 1.0


def test_a_sort_reduce_runs_through_copy_sort_and_reduce_a_third_each(tmp_path: Path) -> None:
    maps = 6
    job = local_job(tmp_path, "sort", 2.0, maps, 1)
    for index in range(maps):
        job.run_task(0, index, 8 << 20)
    scores = Scores()
    run = job.run_task(1, 0, 96 << 10, score=scores)  # a small budget: many spills, merge passes
    assert run.metrics.merge_passes > 1 and run.metrics.spills > 10
    copy = [s for s in scores.seen if s <= 1 / 3]
    assert copy == pytest.approx([k / (3 * maps) for k in range(1, maps + 1)])  # blocks fetched / blocks
    sort = [s for s in scores.seen if 1 / 3 < s <= 2 / 3]
    assert len(sort) == run.metrics.merge_passes - 1  # one per intermediate pass, the last at 2/3
    assert sort[-1] == pytest.approx(2 / 3)
    reduce = [s for s in scores.seen if s > 2 / 3]
    assert len(reduce) > 10 and reduce[-1] == 1.0  # records reduced / records, chunk by chunk
    assert scores.seen == sorted(scores.seen)


def test_a_reduce_without_spills_ends_its_sort_phase_when_the_merge_starts(tmp_path: Path) -> None:
    job = local_job(tmp_path, "wordcount", 0.3, 3, 1)
    for index in range(3):
        job.run_task(0, index, 16 << 20)
    scores = Scores()
    run = job.run_task(1, 0, 16 << 20, score=scores)
    assert run.metrics.spills == 0
    assert scores.seen == pytest.approx([1 / 9, 2 / 9, 3 / 9, 2 / 3])


def test_a_wordcount_map_scores_bytes_read_and_the_shared_double_holds_the_last(tmp_path: Path) -> None:
    job = local_job(tmp_path, "wordcount", 0.5, 1, 2)
    cell = multiprocessing.get_context("forkserver").RawValue("d", 0.0)
    job.run_task(0, 0, 16 << 20, score=cell)
    assert cell.value == 1.0


def test_scores_only_grow_and_an_empty_phase_is_done() -> None:
    progress = Progress(Scores())
    progress.phase(0, 0, 0)
    assert progress.score == pytest.approx(1 / 3)
    progress.read(1, 10)
    assert progress.score == pytest.approx(1 / 3) and progress.cell.seen == [pytest.approx(1 / 3)]


def test_a_sleep_task_scores_the_fraction_of_its_time_done(tmp_path: Path) -> None:
    scenario = parse_scenario({"name": "t", "jobs": [{"workload": "sleep", "tasks": 1, "duration": "1s"}]})
    job = LocalJob(plan_job(scenario.jobs[0], 3, scenario), tmp_path)
    scores = Scores()
    job.run_task(0, 0, 1 << 20, score=scores)
    assert len(scores.seen) >= 2 and 0 < scores.seen[0] < 1  # woken every 0.1 s, not only at the end
    assert scores.seen == sorted(scores.seen) and scores.seen[-1] == 1.0
