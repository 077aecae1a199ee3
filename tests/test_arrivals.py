"""Trace parsing and the bursty generator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from testbed.arrivals.generate import (
    ArrivingJob,
    BurstyMix,
    bursty_jobs,
    format_trace,
    is_long,
    load_trace,
    parse_trace,
)

# ----------------------------------------------------------------------- traces


def test_parses_whitespace_commas_comments_and_blank_lines() -> None:
    text = (
        "# submit num_tasks est durations...\n"
        "0 2 1.5 1 2\n"
        "\n"
        "  3.5,\t1, 120, 130   # a long job\n"
        "3.5 3 0.2 0.1 0.2 0.3\n"
    )
    jobs = parse_trace(text, cutoff_s=100.0)
    assert jobs == [
        ArrivingJob(0.0, (1.0, 2.0), long=False, estimate_s=1.5),
        ArrivingJob(3.5, (130.0,), long=True, estimate_s=120.0),
        ArrivingJob(3.5, (0.1, 0.2, 0.3), long=False, estimate_s=0.2),
    ]


def test_the_class_follows_the_estimate_not_the_actual_durations() -> None:
    (job,) = parse_trace("0 2 50 200 200", cutoff_s=100.0)
    assert not job.long
    assert job.est_duration_s == 50.0


def test_the_cutoff_itself_is_long() -> None:
    assert is_long(100.0, 100.0)
    assert not is_long(99.9, 100.0)


def test_the_estimate_defaults_to_the_mean_duration() -> None:
    assert ArrivingJob(0.0, (1.0, 2.0, 6.0), long=False).est_duration_s == 3.0


def test_load_trace_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "jobs.tr"
    path.write_text("1 1 5 5\n2 1 500 480\n", encoding="utf-8")
    assert [j.long for j in load_trace(path, cutoff_s=100.0)] == [False, True]


def test_a_missing_file_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"trace .*: cannot read the file"):
        load_trace(tmp_path / "nope.tr", cutoff_s=1.0)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("0 2 1.5", r"found 3 field\(s\)"),
        ("x 1 1 1", "submit time must be a number, found 'x'"),
        ("0 2.0 1 1 1", "number of tasks must be a whole number, found '2.0'"),
        ("0 0 1 1", "number of tasks must be >= 1"),
        ("0 1 -3 1", "estimated task duration must be finite and >= 0"),
        ("0 2 1 1 nan", "duration of task 2 must be finite and >= 0"),
        ("0 2 1 1 1 1", r"says 2 task\(s\) but lists 3 duration\(s\)"),
        ("0 3 1 1 1", r"says 3 task\(s\) but lists 2 duration\(s\)"),
        ("-1 1 1 1", "submit time must be finite and >= 0"),
    ],
)
def test_bad_lines_are_reported_with_their_line_number(line: str, message: str) -> None:
    text = f"# header\n0 1 1 1\n{line}\n"
    with pytest.raises(ValueError, match=f"^jobs.tr:3: .*{message}"):
        parse_trace(text, cutoff_s=10.0, source="jobs.tr")


def test_unsorted_submit_times_are_refused() -> None:
    with pytest.raises(ValueError, match="trace:2: submit time 4 is before the previous job's 5"):
        parse_trace("5 1 1 1\n4 1 1 1\n", cutoff_s=10.0)


def test_an_empty_trace_is_refused() -> None:
    with pytest.raises(ValueError, match=r"jobs\.tr: the trace has no jobs"):
        parse_trace("# nothing here\n\n", cutoff_s=10.0, source="jobs.tr")


def test_format_trace_reads_back_exactly() -> None:
    jobs = bursty_jobs(seed=3)
    assert parse_trace(format_trace(jobs), cutoff_s=BurstyMix().cutoff_s) == jobs


# -------------------------------------------------------------------- generator


def test_the_generator_is_deterministic_per_seed() -> None:
    assert bursty_jobs(seed=7) == bursty_jobs(seed=7)
    assert bursty_jobs(seed=7) != bursty_jobs(seed=8)


def test_generated_jobs_are_sorted_within_the_horizon_and_classed_by_the_cutoff() -> None:
    mix = BurstyMix(horizon_s=300.0)
    jobs = bursty_jobs(seed=1, mix=mix)
    submits = [j.submit_s for j in jobs]
    assert submits == sorted(submits)
    assert submits[0] >= 0
    assert submits[-1] <= mix.horizon_s
    assert all(j.long == is_long(j.est_duration_s, mix.cutoff_s) for j in jobs)
    assert all(max(j.task_durations) <= mix.short_max_s for j in jobs if not j.long)
    assert all(min(j.task_durations) >= mix.long_min_s for j in jobs if j.long)


def test_a_few_long_jobs_take_most_of_the_cluster_time() -> None:
    jobs = bursty_jobs(seed=11, mix=BurstyMix(horizon_s=3600.0))
    work = np.array([sum(j.task_durations) for j in jobs])
    long = np.array([j.long for j in jobs])
    assert long.mean() < 0.1  # a few jobs are long...
    assert work[long].sum() / work.sum() > 0.8  # ...and they take most of the time
    task_durations = np.concatenate([j.task_durations for j in jobs if j.long])
    # heavy tail: the mean of the long tasks is well above their median
    assert task_durations.mean() > 1.3 * np.median(task_durations)


def test_short_jobs_arrive_in_bursts() -> None:
    mix = BurstyMix(horizon_s=3600.0)
    jobs = bursty_jobs(seed=11, mix=mix)
    short_submits = [j.submit_s for j in jobs if not j.long]
    counts, _ = np.histogram(short_submits, bins=int(mix.horizon_s / 10))
    # a Poisson process has variance == mean per window; bursts make it far larger
    assert counts.var() / counts.mean() > 3


def test_inconsistent_mix_is_refused() -> None:
    with pytest.raises(ValueError, match="short_max_s < cutoff_s"):
        BurstyMix(short_max_s=20.0, cutoff_s=10.0)
    with pytest.raises(ValueError, match="horizon_s must be > 0"):
        BurstyMix(horizon_s=0.0)
