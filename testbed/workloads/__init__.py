"""Workloads: how a job becomes stages of tasks (planning) and what each task computes.

``plan_job`` is called by the master; ``OPERATIONS`` maps a task's ``op`` name
to the function an agent's worker runs.
"""

from __future__ import annotations

from testbed.plan import JobPlan
from testbed.scenario.schema import PluginJob, Scenario
from testbed.workloads import dag, mlr, noop, pagerank, sleep, sort, sql, user, wordcount
from testbed.workloads.base import Combiner, TaskFunction

OPERATIONS: dict[str, TaskFunction] = {
    "wordcount.map": wordcount.map_task,
    "wordcount.reduce": wordcount.reduce_task,
    "pagerank.edges": pagerank.edges_task,
    "pagerank.links": pagerank.links_task,
    "pagerank.scatter": pagerank.scatter_task,
    "pagerank.iterate": pagerank.iterate_task,
    "mlr.points": mlr.points_task,
    "mlr.gradient": mlr.gradient_task,
    "mlr.aggregate": mlr.aggregate_task,
    "mlr.model": mlr.model_task,
    "sort.map": sort.map_task,
    "sort.reduce": sort.reduce_task,
    "sleep.run": sleep.run_task,
    "plugin.map": user.map_task,
    "plugin.step": user.step_task,
    "plugin.reduce": user.reduce_task,
    dag.DAG_OP: dag.dag_task,
}


COMBINERS: dict[str, Combiner] = {
    "wordcount.map": wordcount.combine_outputs,
    "mlr.gradient": mlr.combine_gradients,
}
"""Ops whose outputs may be partially aggregated on their node before a push (Pado)."""


def plan_job(job, seed: int, scenario: Scenario) -> JobPlan:
    """A job's stages of tasks. A simulated run (``backend: sim``) plans from sizes alone:
    no input is generated or read beyond the files' sizes."""
    if job.workload == "wordcount":
        return wordcount.plan(job, seed)
    if job.workload == "pagerank":
        return pagerank.plan(job, seed)
    if job.workload == "mlr":
        return mlr.plan(job, seed)
    if job.workload == "sort":
        return sort.plan(job, seed, sample=scenario is None or scenario.backend != "sim")
    if job.workload == "sleep":
        return sleep.plan(job, seed, scenario.wall_per_trace)
    if job.workload == "sql":
        return sql.plan(job)
    if isinstance(job, PluginJob):
        return user.plan(job, seed)
    if job.workload == "noop":
        return noop.plan(job, seed)
    raise ValueError(f"workload {job.workload!r} is not implemented yet")
