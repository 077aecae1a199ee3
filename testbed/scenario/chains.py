"""Chained jobs (``jobs[].after``): a job whose input is another job's committed output in
the same run, submitted when that job succeeds (docs/plugins.md, "Chained jobs").

Checked at load, each refusal one line naming the field: the parent is a job of the scenario
named once, not repeated, that writes part files; the child reads text lines (wordcount or a
plugin workload), has no input of its own, no submit_at, no repeat; the chain has no cycle;
the simulator, which produces no outputs, refuses chains.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from testbed.scenario.jobs import PluginJob

TEXT_READERS = ("wordcount",)
"""Built-in workloads whose ``input`` is text lines, so may be another job's part files
(plugin workloads too: their input is split at line boundaries)."""

NO_OUTPUT = ("sleep", "noop")
"""Built-in workloads that write no part files."""


def check_chains(jobs: Sequence[Any], backend: str | None) -> None:
    """Refuse a malformed chain: ValueError naming ``jobs.N.<field>`` and the fix."""
    named: dict[str, list[int]] = {}
    for index, job in enumerate(jobs):
        if job.name is not None:
            named.setdefault(job.name, []).append(index)
    for index, job in enumerate(jobs):
        if job.after is not None:
            _check_child(index, job, jobs, named, backend)
    for index in range(len(jobs)):
        _check_acyclic(index, jobs, named)


def _check_child(
    index: int, job: Any, jobs: Sequence[Any], named: dict[str, list[int]], backend: str | None
) -> None:
    field = f"jobs.{index}.after"
    if backend == "sim":
        raise ValueError(
            f"{field}: --backend sim produces no job outputs, so a chained job has no input there; "
            "run the scenario on a real backend (local, docker) or remove after"
        )
    if job.workload not in TEXT_READERS and not isinstance(job, PluginJob):
        raise ValueError(
            f"{field}: a {job.workload} job cannot read another job's output "
            "(its part files are text lines); chain a wordcount or a plugin workload"
        )
    if job.input is not None:
        raise ValueError(f"{field}: a chained job reads its parent's output; remove jobs.{index}.input")
    if job.repeat != 1 or job.submit_at:
        raise ValueError(
            f"{field}: a chained job is submitted once, when its parent succeeds; "
            f"remove jobs.{index}.repeat and jobs.{index}.submit_at"
        )
    parents = named.get(job.after, [])
    if not parents:
        known = ", ".join(sorted(named)) or "none: give the parent job a name"
        raise ValueError(f"{field}: no job named {job.after!r}; named jobs: {known}")
    if len(parents) > 1:
        raise ValueError(f"{field}: {len(parents)} jobs are named {job.after!r}; give each job its own name")
    parent = jobs[parents[0]]
    if parent.repeat != 1:
        raise ValueError(
            f"{field}: job {job.after!r} is submitted {parent.repeat} times (repeat), "
            "so it has no one output; chain a job without repeat"
        )
    if parent.workload in NO_OUTPUT:
        raise ValueError(
            f"{field}: job {job.after!r} is a {parent.workload} job, which writes no output to read"
        )


def _check_acyclic(index: int, jobs: Sequence[Any], named: dict[str, list[int]]) -> None:
    seen = [index]
    job = jobs[index]
    while job.after is not None:
        parent = named[job.after][0]
        if parent in seen:
            names = " -> ".join(str(jobs[i].name) for i in [*seen, parent])
            raise ValueError(f"jobs.{index}.after: a cycle of chained jobs ({names}); break it")
        seen.append(parent)
        job = jobs[parent]
