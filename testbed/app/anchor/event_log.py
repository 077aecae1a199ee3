"""What a Spark application's event log (``spark.eventLog.enabled``, JSON lines) says of a run:
its job time, the tasks it ran and recomputed, and the executors it lost."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SparkLog:
    jct_s: float
    """First job's submission to the last job's completion (the JVM's start-up excluded)."""
    jobs: int
    task_ends: int
    """Task attempts that ended, whatever their outcome."""
    failed_attempts: int
    recomputed_tasks: int
    """Successful attempts of a (stage, partition) that had already succeeded: lost map output
    recomputed through lineage."""
    retried_attempts: int
    """Task attempts numbered above 0 (Spark's ``Attempt``): reruns of a failed attempt."""
    resubmitted_stages: int
    """Stage attempts above 0: stages Spark resubmitted after a fetch failure."""
    executors_removed: int
    failure_reasons: dict[str, int]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def read_event_log(folder: Path) -> SparkLog:
    """The one application's log in ``folder`` (Spark names the file after the application)."""
    files = [p for p in Path(folder).iterdir() if p.is_file() and not p.name.endswith(".inprogress")]
    if len(files) != 1:
        raise ValueError(f"{folder}: expected one finished event log, found {sorted(p.name for p in files)}")
    events = [json.loads(line) for line in files[0].read_text().splitlines() if line.strip()]
    return summarize(events)


def summarize(events: list[dict[str, Any]]) -> SparkLog:
    kinds = [e["Event"] for e in events]
    starts = [e["Submission Time"] for e in events if e["Event"] == "SparkListenerJobStart"]
    ends = [e["Completion Time"] for e in events if e["Event"] == "SparkListenerJobEnd"]
    tasks = [e for e in events if e["Event"] == "SparkListenerTaskEnd"]
    done: Counter[tuple[int, int]] = Counter()
    reasons: Counter[str] = Counter()
    for task in tasks:
        reason = task["Task End Reason"]["Reason"]
        if reason == "Success":
            done[(task["Stage ID"], task["Task Info"]["Index"])] += 1
        else:
            reasons[reason] += 1
    stages = [e["Stage Info"] for e in events if e["Event"] == "SparkListenerStageSubmitted"]
    return SparkLog(
        jct_s=(max(ends) - min(starts)) / 1000 if starts and ends else 0.0,
        jobs=len(starts),
        task_ends=len(tasks),
        failed_attempts=sum(reasons.values()),
        recomputed_tasks=sum(n - 1 for n in done.values()),
        retried_attempts=sum(1 for t in tasks if t["Task Info"]["Attempt"] > 0),
        resubmitted_stages=sum(1 for s in stages if s["Stage Attempt ID"] > 0),
        executors_removed=kinds.count("SparkListenerExecutorRemoved"),
        failure_reasons=dict(reasons),
    )
