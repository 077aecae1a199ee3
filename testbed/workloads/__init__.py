"""Workloads: how a job becomes stages of tasks (planning) and what each task computes.

Each built-in workload is a package ``testbed/workloads/<name>/``, registered by one line in
``testbed/registry.py``; a plugin workload runs through ``user``. A built-in's package is its
description (``description.BuiltinWorkload``): ``plan(job, seed, scenario)``, ``OPERATIONS`` (its
ops' task functions), ``COMBINERS`` (ops whose outputs may be aggregated on their node before a
push), ``PROFILED_STAGES`` (what ``testbed profile`` measures; empty: not profiled),
``lineage`` (its logical DAG), ``RECORD_BYTES`` (the simulator's record), ``check`` and
``generate``. ``plan_job`` is called by the master; ``OPERATIONS`` maps every task's ``op``
name to the function an agent's worker runs; ``builtin(name)`` is the description the
recovery strategies, the simulator and the CLI read.
"""

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
