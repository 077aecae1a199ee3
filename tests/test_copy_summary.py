"""master/summary/checkpoint_copies.py: a checkpoint copy's delay, from its task's end to its commit."""

from __future__ import annotations

from typing import Any

import pytest

from master.summary.checkpoint_copies import checkpoint_summary
from testbed.app.crosscheck.table import ALIASES, METRICS
from testbed.scenario.fidelity import emulated


def finished(t: float, task: str, status: str = "succeeded") -> dict[str, Any]:
    return {"t": t, "event": "task_finished", "task": task, "status": status}


def checkpointed(t: float, task: str) -> dict[str, Any]:
    return {"t": t, "event": "checkpointed", "task": task, "node": "reserved-0", "bytes": 1}


def test_each_copy_is_timed_from_its_tasks_last_success_to_its_commit() -> None:
    events = [
        finished(1.0, "j0.s0.t0"),
        finished(1.5, "j0.s0.t1"),
        checkpointed(1.1, "j0.s0.t0"),  # 0.1
        checkpointed(2.0, "j0.s0.t1"),  # 0.5
        finished(3.0, "j0.s0.t0", status="lost"),  # its node died after the copy: not a new end
        finished(4.0, "j0.s0.t0"),  # recomputed (the copy was lost too): timed anew
        checkpointed(4.3, "j0.s0.t0"),  # 0.3
        checkpointed(5.0, "j0.s0.t9"),  # no success of its task in the journal: not timed
    ]
    summary = checkpoint_summary(events)
    assert summary["checkpoint_copies"] == 3
    assert summary["checkpoint_delay_p50_s"] == pytest.approx(0.3)
    assert summary["checkpoint_delay_p95_s"] == pytest.approx(0.48)  # numpy's linear interpolation


def test_a_run_without_checkpoints_has_no_delay_figures() -> None:
    assert checkpoint_summary([finished(1.0, "j0.s0.t0")]) == {}


def test_the_delays_are_times_so_a_real_runs_summary_gives_them_emulated() -> None:
    """events.jsonl of a real run is in wall seconds; the simulator's in its own (emulated) ones.
    Compared without the dilation, a real copy looks 6.67x slower than it was (issue 18)."""
    summary = emulated({"checkpoint_delay_p50_s": 2.0, "checkpoint_copies": 16}, 4.0)
    assert summary == {"checkpoint_delay_p50_s": 0.5, "checkpoint_copies": 16}


def test_the_crosscheck_compares_the_delays() -> None:
    assert {"checkpoint_delay_p50_s", "checkpoint_delay_p95_s"} <= set(METRICS)
    assert ALIASES["checkpoint_delay"] == "checkpoint_delay_p50_s"
