"""Where a run's reduces lose to evictions (docs/firmament.md, "The 1,000-node regression").

Reads a run's journal and prints, for each job: its JCT, where its map outputs were when its
first reduce began (the share on reserved nodes, and how many distinct transient nodes held
the rest: its footprint), and its reduce attempts (started, failed on a fetch, succeeded);
then, over every reduce attempt that failed on a fetch, how far it had read (the index of the
map whose block was gone, of the reduce's blocks in map order) and how fast.

    python benchmarks/firmament_cascade.py RUN_DIR [--until SECONDS]

``--until``: only the journal's first SECONDS (to compare two runs over the same window).
A reduce of the spark strategy reads its blocks in map order and fails at the first whose
holders are gone; the strategy recomputes that map and relaunches the whole reduce, so a job
whose outputs sit on many transient nodes rarely gets a reduce through.
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.journal.schema import read_events

LOST_BLOCK = re.compile(r"block \S+\.s0\.t(\d+)\.a\d+")


@dataclass
class JobCascade:
    job_id: str
    jct_s: float | None = None
    reserved_share: float | None = None
    """Of the live map outputs when the first reduce began, the share on reserved nodes."""
    footprint: int | None = None
    """Distinct live transient nodes holding its map outputs when the first reduce began."""
    reduces: Counter[str] = field(default_factory=Counter)
    """Reduce attempts: started, fetch (failed on a lost block), succeeded."""


@dataclass(frozen=True)
class FailedRead:
    reached: int
    """The index of the map whose block was gone."""
    seconds: float


def cascade(events: Iterable[Mapping[str, Any]]) -> tuple[dict[str, JobCascade], list[FailedRead]]:
    """Per job, its footprint and reduce attempts; the failed reduces' reads."""
    jobs: dict[str, JobCascade] = {}
    outputs: dict[str, dict[int, tuple[str, str]]] = defaultdict(dict)
    dead: set[str] = set()
    failed: list[FailedRead] = []
    for event in events:
        kind, job_id = event["event"], event.get("job")
        if kind == "node_lost":
            dead.add(event["node"])
        elif kind == "job_submitted":
            jobs[job_id] = JobCascade(job_id)
        elif kind == "job_finished" and job_id in jobs:
            jobs[job_id].jct_s = event["jct_s"]
        elif kind == "task_started" and event["stage"] == 1:
            job = jobs.setdefault(job_id, JobCascade(job_id))
            job.reduces["started"] += 1
            if job.footprint is None:
                _place(job, [held for held in outputs[job_id].values() if held[0] not in dead])
        elif kind == "task_finished":
            _finished(event, jobs, outputs, failed)
    return jobs, failed


def _place(job: JobCascade, live: list[tuple[str, str]]) -> None:
    reserved = sum(1 for _, node_class in live if node_class == "reserved")
    job.reserved_share = reserved / len(live) if live else 0.0
    job.footprint = len({node for node, node_class in live if node_class == "transient"})


def _finished(
    event: Mapping[str, Any],
    jobs: dict[str, JobCascade],
    outputs: dict[str, dict[int, tuple[str, str]]],
    failed: list[FailedRead],
) -> None:
    if event["stage"] == 0 and event["status"] == "succeeded":
        outputs[event["job"]][event["index"]] = (event["node"], event["class"])
    elif event["stage"] == 1 and event["job"] in jobs:
        reduces = jobs[event["job"]].reduces
        if event["status"] == "succeeded":
            reduces["succeeded"] += 1
        elif event.get("failure") == "fetch":
            reduces["fetch"] += 1
            found = LOST_BLOCK.search(event.get("error") or "")
            if found:
                failed.append(FailedRead(int(found.group(1)), event["t"] - event["start_s"]))


def report(jobs: Mapping[str, JobCascade], failed: list[FailedRead]) -> str:
    lines = ["job    JCT (s)  reserved share  footprint  reduce attempts  fetch failed  succeeded"]
    for job in sorted(jobs.values(), key=lambda j: j.job_id):
        jct = f"{job.jct_s:8.1f}" if job.jct_s is not None else "       -"
        share = f"{job.reserved_share:14.2f}" if job.reserved_share is not None else "             -"
        footprint = f"{job.footprint:9d}" if job.footprint is not None else "        -"
        counts = job.reduces
        attempts = f"{counts['started']:16d} {counts['fetch']:13d} {counts['succeeded']:10d}"
        lines.append(f"{job.job_id:6} {jct} {share} {footprint} {attempts}")
    read = [f for f in failed if f.seconds > 0]
    if read:
        reached = statistics.median(f.reached for f in read)
        rate = statistics.median(f.reached / f.seconds for f in read)
        window = statistics.median(f.seconds for f in read)
        lines.append(
            f"failed reduces: {len(read)}, median map index reached {reached:.0f}, "
            f"median {rate:.1f} blocks/s, median attempt {window:.1f} s"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("--until", type=float, default=float("inf"))
    args = parser.parse_args(argv)
    events = [e for e in read_events(args.run / "events.jsonl").events if e["t"] <= args.until]
    print(report(*cascade(events)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
