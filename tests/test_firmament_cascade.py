"""benchmarks/firmament_cascade.py on a hand-built journal: a job's footprint is read when its
first reduce begins, over the map outputs still alive then (a map's latest success; a lost
node's outputs left out), and a reduce failed on a fetch reports the map index it reached."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))

from firmament_cascade import FailedRead, cascade, main


def finished(t: float, stage: int, index: int, node: str, status: str = "succeeded", **extra: Any) -> dict:
    node_class = "reserved" if node.startswith("r") else "transient"
    return {
        "t": t,
        "event": "task_finished",
        "job": "j0",
        "stage": stage,
        "index": index,
        "node": node,
        "class": node_class,
        "status": status,
        **extra,
    }


def started(t: float, index: int, node: str = "t9") -> dict:
    return {"t": t, "event": "task_started", "job": "j0", "stage": 1, "index": index, "node": node}


LOST = "j0.s0.t2.a0: its holders are gone"
JOURNAL = [
    {"t": 0.0, "event": "job_submitted", "job": "j0"},
    finished(1.0, 0, 0, "r0"),
    finished(1.0, 0, 1, "t1"),
    finished(1.0, 0, 2, "t1"),
    finished(1.0, 0, 3, "t2"),
    finished(1.5, 0, 4, "t3"),
    {"t": 2.0, "event": "node_lost", "node": "t3"},
    finished(2.5, 0, 4, "t4"),  # map 4 recomputed on t4
    {"t": 3.0, "event": "node_lost", "node": "t2"},  # map 3's output lost, not yet recomputed
    started(4.0, 0),
    {"t": 5.0, "event": "node_lost", "node": "t1"},
    finished(6.0, 1, 0, "t9", "failed", failure="fetch", start_s=4.0, error=f"cannot fetch block {LOST}"),
    started(7.0, 0),
    finished(9.0, 1, 0, "t9", start_s=7.0),
    {"t": 9.5, "event": "job_finished", "job": "j0", "jct_s": 9.5},
]


def test_footprint_counts_live_outputs_when_the_first_reduce_begins() -> None:
    jobs, failed = cascade(JOURNAL)
    job = jobs["j0"]
    # alive at t=4: map 0 on r0, maps 1 and 2 on t1, map 4 on t4 (t2 and t3 lost)
    assert job.reserved_share == pytest.approx(1 / 4)
    assert job.footprint == 2  # t1 and t4; t1's loss after the reduce began does not count
    assert dict(job.reduces) == {"started": 2, "fetch": 1, "succeeded": 1}
    assert job.jct_s == 9.5
    assert failed == [FailedRead(2, 2.0)]


def test_main_prints_each_job_and_the_failed_reads(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in JOURNAL))
    assert main([str(tmp_path), "--until", "6.5"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["j0", "-", "0.25", "2", "1", "1", "0"]  # not finished by 6.5 s
    assert lines[2] == (
        "failed reduces: 1, median map index reached 2, median 1.0 blocks/s, median attempt 2.0 s"
    )
