"""Workloads run in-process for tests: plans, a local wordcount."""

from __future__ import annotations

from pathlib import Path

from testbed.plan import Dependency, JobPlan, StagePlan
from testbed.scenario.schema import parse_scenario
from testbed.workloads.catalog import plan_job
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


def no_spill_files(job: LocalJob) -> bool:
    scratch = job.work / "scratch"
    return not scratch.exists() or not any(p.is_file() for p in scratch.rglob("*"))
