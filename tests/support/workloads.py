"""Workloads run in-process for tests: plans, a local wordcount, a worker that allocates."""

from __future__ import annotations

from multiprocessing.connection import Connection
from pathlib import Path

from agents.agent import _forkserver, _receive, _start_worker
from testbed.api.plan import Dependency, JobPlan, StagePlan
from testbed.scenario.schema import parse_scenario
from testbed.workloads import plan_job
from testbed.workloads.local import LocalJob


def local_wordcount(work: Path, maps: int = 3) -> LocalJob:
    job = {"workload": "wordcount", "size_mb": 0.3, "maps": maps, "reduces": 2}
    scenario = parse_scenario({"name": "t", "jobs": [job]})
    local = LocalJob(plan_job(scenario.jobs[0], 5, scenario), work)
    for index in range(maps):
        local.run_task(0, index, 16 << 20)
    return local


def pagerank_plan(parts: int = 3, iterations: int = 4) -> JobPlan:
    stages = [
        StagePlan("pagerank.edges", 2, parts),
        StagePlan("pagerank.links", parts, 2, (Dependency(0, "shuffle"),)),
        StagePlan("pagerank.scatter", parts, parts, (Dependency(1, "narrow"),)),
    ]
    for i in range(1, iterations + 1):
        deps = (Dependency(len(stages) - 1, "shuffle"), Dependency(1, "narrow"))
        stages.append(StagePlan("pagerank.iterate", parts, parts, deps, final=i == iterations))
    return JobPlan("pagerank", tuple(stages))


def allocate(conn: Connection, megabytes: int) -> None:
    """A worker that touches ``megabytes`` of memory (every page written), then reports."""
    hog = b"\x01" * (megabytes << 20)
    conn.send({"state": "succeeded", "bytes": len(hog)})


async def run_allocating_worker(megabytes: int) -> dict:
    """Start ``allocate`` as the agent starts a task's worker and return the outcome it reads."""
    receiver, sender = _forkserver.Pipe(duplex=False)
    process = _forkserver.Process(target=allocate, args=(sender, megabytes), daemon=True)
    await _start_worker(process, None)
    sender.close()
    return await _receive(receiver, process, None)


def no_spill_files(job: LocalJob) -> bool:
    scratch = job.work / "scratch"
    return not scratch.exists() or not any(p.is_file() for p in scratch.rglob("*"))
