"""Firmament with ``preemption: true`` on the simulator: tasks are preempted, every job still
succeeds, and each final task's output is committed exactly once, by an attempt that succeeded."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import yaml

from testbed.app.cli import main

SCENARIO = {
    "name": "firmament-preemption",
    "seed": 4,
    "cluster": {
        "reserved": {"count": 4, "slots": 4, "memory_mb": 4096},
        "transient": {"count": 4, "slots": 4, "memory_mb": 4096},
    },
    "chaos": {"transient": {"lifetime": {"exponential": {"mean": "5m"}}, "replace": True}},
    "jobs": [
        {
            "workload": "sleep",
            "tasks": 12,
            "duration": "40s",
            "memory_mb": 1024,
            "repeat": 20,
            "every": "15s",
        },
        {
            "workload": "wordcount",
            "size_mb": 256,
            "maps": 16,
            "reduces": 4,
            "memory_mb": 2048,
            "repeat": 3,
            "every": "60s",
            "submit_at": "20s",
        },
    ],
    "timeout": 3600,
}


def simulate(tmp_path: Path, preemption: bool) -> tuple[dict, list[dict]]:  # type: ignore[type-arg]
    options = {"firmament": {"cost_model": "quincy", "preemption": preemption}}
    path = tmp_path / f"{preemption}.yaml"
    path.write_text(yaml.safe_dump({**SCENARIO, "policy": {"scheduler": "firmament", "options": options}}))
    out = tmp_path / str(preemption)
    assert main(["run", str(path), "--backend", "sim", "--out", str(out)]) == 0
    events = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    return json.loads((out / "summary.json").read_text()), events


def test_preempted_tasks_commit_their_output_exactly_once(tmp_path: Path) -> None:
    summary, events = simulate(tmp_path, preemption=True)
    assert summary["succeeded"] == 23 and summary["failed"] == 0
    killed = [e for e in events if e["event"] == "task_finished" and e["failure"] == "preempted"]
    assert killed and summary["preempted_attempts"] == len(killed)
    assert summary["wasted_slot_s"] >= 0
    commits = [(e["job"], e["index"], e["attempt"]) for e in events if e["event"] == "output_committed"]
    assert max(Counter((job, index) for job, index, _ in commits).values()) == 1  # each output once
    finals = {e["job"]: e["tasks"] for e in events if e["event"] == "job_finished"}
    assert len(commits) == 20 * 12 + 3 * 4 == sum(finals.values()) - 3 * 16  # every final task (not the maps)
    succeeded = {
        (e["job"], e["index"], e["attempt"])
        for e in events
        if e["event"] == "task_finished" and e["status"] == "succeeded"
    }
    assert set(commits) <= succeeded  # by an attempt that succeeded
    assert not {(e["job"], e["index"], e["attempt"]) for e in killed} & set(commits)  # never a killed one


def test_without_preemption_nothing_is_preempted(tmp_path: Path) -> None:
    summary, events = simulate(tmp_path, preemption=False)
    assert summary["succeeded"] == 23 and "preempted_attempts" not in summary
    assert not any(e["event"] == "task_finished" and e["failure"] == "preempted" for e in events)
