"""A workload plugin's stage DAG (``Workload.dag``), asked for and checked: at load (so a bad
DAG is refused before the run, naming the job) and when the job is planned."""

from __future__ import annotations

from typing import Any

from testbed.api.dag import JobDag, JobInputs
from testbed.scenario.jobs import PluginJob
from testbed.scenario.loading import ScenarioError
from testbed.scenario.splitting import line_splits

SPLIT_MB = 8
"""Default split size of a DAG source reading the job's input (as a map's)."""


def job_inputs(job: PluginJob, seed: int) -> JobInputs:
    """What a DAG workload's ``dag(job)`` and ``reference(job)`` get."""

    def splitter(path: str, maps: int | None) -> list[dict[str, Any]]:
        return line_splits(path, maps, SPLIT_MB)

    return JobInputs(job.input, job.maps, job.reduces, seed, splitter)


def dag_of(job: PluginJob, seed: int, workload: Any, field: str = "workload") -> JobDag:
    """The plugin's ``dag(job)``; a ``ScenarioError`` naming ``field`` when it raises (its
    ``DagError`` among others) or returns no ``JobDag``."""
    try:
        dag = workload.dag(job_inputs(job, seed))
    except Exception as exc:  # the plugin's code, or a DagError of the DAG it builds
        raise ScenarioError([f"{field}: {job.workload}.dag() raised {type(exc).__name__}: {exc}"]) from None
    if not isinstance(dag, JobDag):
        raise ScenarioError([f"{field}: {job.workload}.dag() must return a JobDag, got {dag!r:.80}"])
    return dag
