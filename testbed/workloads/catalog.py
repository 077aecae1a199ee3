"""The built-in workloads gathered (``testbed/registry.py`` names them): each one's package, every
op's task function and combiner, and the master's entry points ``plan_job``, ``builtin`` and
``lineage``. Here, not in the package's ``__init__``: importing one pure description
(``testbed.workloads.progress``, ``task_model``) loads no task code."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING

from testbed import registry
from testbed.scenario.inputs import resolve_inputs
from testbed.workloads import dag, user
from testbed.workloads.base import Combiner, TaskFunction
from testbed.workloads.description import BuiltinWorkload, Lineage

if TYPE_CHECKING:  # the master's: an agent's task workers import neither
    from testbed.plan import JobPlan
    from testbed.scenario.schema import Scenario

BUILT_IN: dict[str, ModuleType] = {
    name: importlib.import_module(module) for name, module in registry.BUILTINS["workload"].items()
}
"""Each built-in workload's package, by the name jobs give it."""

OPERATIONS: dict[str, TaskFunction] = {
    op: task for module in (*BUILT_IN.values(), user, dag) for op, task in module.OPERATIONS.items()
}

COMBINERS: dict[str, Combiner] = {
    op: combine for module in (*BUILT_IN.values(), user, dag) for op, combine in module.COMBINERS.items()
}
"""Ops whose outputs may be partially aggregated on their node before a push (Pado)."""


def plan_job(job, seed: int, scenario: Scenario) -> JobPlan:
    """A job's stages of tasks. A simulated run (``backend: sim``) plans from sizes alone:
    no input is generated or read beyond the files' sizes."""
    from testbed.scenario.jobs import PluginJob

    if getattr(job, "input", None) is not None and not resolve_inputs(job.input):  # a chained job's parts
        raise ValueError(f"no input file matches {job.input!r}")
    module = user if isinstance(job, PluginJob) else BUILT_IN[job.workload]
    plan: JobPlan = module.plan(job, seed, scenario)
    return plan


def builtin(name: str) -> BuiltinWorkload | None:
    """The built-in workload ``name`` (a job's or a plan's ``workload``); None for a plugin."""
    module: BuiltinWorkload | None = BUILT_IN.get(name)
    return module


def lineage(plan: JobPlan) -> Lineage | None:
    """The logical DAG of a built-in workload's plan (None: it has none, e.g. sleep, or the
    plan is a plugin's)."""
    workload = builtin(plan.workload)
    return None if workload is None or workload.lineage is None else workload.lineage(plan)
