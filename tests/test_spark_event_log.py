"""testbed/app/anchor/event_log.py on a hand-built Spark event log: what it counts as recomputed,
retried and resubmitted."""

from __future__ import annotations

from typing import Any

from testbed.app.anchor.event_log import summarize


def task(stage: int, stage_attempt: int, index: int, attempt: int, reason: str = "Success") -> dict[str, Any]:
    return {
        "Event": "SparkListenerTaskEnd",
        "Stage ID": stage,
        "Stage Attempt ID": stage_attempt,
        "Task End Reason": {"Reason": reason},
        "Task Info": {"Index": index, "Attempt": attempt},
    }


def stage(stage_id: int, attempt: int) -> dict[str, Any]:
    info = {"Stage ID": stage_id, "Stage Attempt ID": attempt}
    return {"Event": "SparkListenerStageSubmitted", "Stage Info": info}


def test_a_lost_map_output_is_recomputed_and_the_failed_reduce_retried() -> None:
    """Two maps succeed; their executor dies while reduce 0 runs there (ExecutorLostFailure);
    reduce 1 cannot fetch map 1's output (FetchFailed); stage 0 is resubmitted and map 1 runs
    again; both reduces then succeed in the reduce stage's second attempt."""
    events = [
        {"Event": "SparkListenerJobStart", "Submission Time": 1_000},
        stage(0, 0),
        task(0, 0, 0, 0),
        task(0, 0, 1, 0),
        stage(1, 0),
        task(1, 0, 0, 0, "ExecutorLostFailure"),
        {"Event": "SparkListenerExecutorRemoved"},
        task(1, 0, 1, 0, "FetchFailed"),
        stage(0, 1),
        task(0, 1, 1, 0),
        stage(1, 1),
        task(1, 1, 0, 0),
        task(1, 1, 1, 0),
        {"Event": "SparkListenerJobEnd", "Completion Time": 4_500},
    ]
    log = summarize(events)
    assert log.jct_s == 3.5 and log.jobs == 1
    assert log.task_ends == 7 and log.failed_attempts == 2
    assert log.recomputed_tasks == 1  # map 1 succeeded twice
    assert log.resubmitted_stages == 2 and log.retried_attempts == 0
    assert log.executors_removed == 1
    assert log.failure_reasons == {"ExecutorLostFailure": 1, "FetchFailed": 1}


def test_a_rerun_of_a_failed_attempt_is_retried_not_recomputed() -> None:
    events = [
        {"Event": "SparkListenerJobStart", "Submission Time": 0},
        task(0, 0, 0, 0, "ExecutorLostFailure"),
        task(0, 0, 0, 1),
        {"Event": "SparkListenerJobEnd", "Completion Time": 2_000},
    ]
    log = summarize(events)
    assert (log.retried_attempts, log.recomputed_tasks, log.resubmitted_stages) == (1, 0, 0)
