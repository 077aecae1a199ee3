"""``merge: auto``: Musketeer's cost function choosing how a workflow is cut into stages
(Gog's dissertation, section 3.5: the cost of a DAG partitioning is the sum over its jobs of
the rates of Table 3.2, PULL, LOAD, PROCESS and PUSH, applied to predicted data volumes).

The partitionings are the ones the lowering supports: merged (Musketeer's rules, Table 3.1)
and unmerged (every operator a stage). Each is lowered and scored by its predicted makespan:
the critical path of its stages, a stage taking ``waves`` rounds of its slowest task, a task
its launch, its cold start where its chain compiles an expression (a freshly forked worker
imports the expression compiler: the per-job start cost of this testbed, Musketeer's
one-off Hadoop job creation) and its bytes at the rates below. Data volumes are Musketeer's
first-run bounds (section 3.5.1: no history, so every operator is assumed to output as much
as it reads): a stage writes what it reads. The cheaper plan wins, merged on a tie.

The rates were measured on this host (docs/workflows.md, "merge: auto"): top-shopper's
stages run task by task in one process (``benchmarks/workflows.py``'s ``stage_costs``), and a
fresh worker's import of the compiler (``benchmarks/workflows.py``'s ``cold_start_s``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from testbed.plan import JobPlan, StagePlan
from testbed.workflows.lowering import Splitter, Workflow, lower

MB = 2**20
COMPILING_OPS = frozenset({"select", "project", "choose"})
"""Chain ops whose first row needs the expression compiler (``sql_stage.compile_expr``)."""


@dataclass(frozen=True)
class Rates:
    """Seconds of one task (Musketeer's Table 3.2, its PULL and PUSH together)."""

    launch_s: float = 0.06
    """A launch command to its work starting and its report (the simulator's launch_overhead)."""
    start_s: float = 0.19
    """A task whose chain compiles an expression: CPU seconds of importing the compiler in a
    fresh worker (sqlglot), measured 0.18-0.21 s in three fresh processes at load 1-3."""
    scan_s_per_mb: float = 0.24
    """LOAD and PROCESS of a scan: text parsed into typed rows (top-shopper's scan stage)."""
    s_per_mb: float = 0.08
    """PULL and PUSH of every byte a task reads and writes as blocks (a narrow stage's read,
    filter and write, top-shopper unmerged)."""


@dataclass(frozen=True)
class Choice:
    merge: bool
    predicted_s: dict[bool, float]
    """Each partitioning's predicted makespan (seconds), by its ``merge``."""


def predicted_s(plan: JobPlan, rates: Rates = Rates(), slots: int | None = None) -> float:
    """The plan's makespan under the cost model: its stages' critical path, ``slots`` tasks
    at a time (None: every stage in one wave)."""
    out_mb: list[float] = []
    done: list[float] = []
    for stage in plan.stages:
        read_mb = _read_mb(stage, out_mb)
        out_mb.append(read_mb)  # first-run bound: a stage writes what it reads
        ops = {op["op"] for op in stage.shared_params.get("ops", [])}
        per_task = read_mb / max(1, stage.tasks)
        task_s = rates.launch_s + per_task * (rates.scan_s_per_mb if "scan" in ops else rates.s_per_mb)
        task_s += rates.start_s if ops & COMPILING_OPS else 0.0
        waves = 1 if slots is None else math.ceil(stage.tasks / slots)
        ready = max((done[d.stage] for d in stage.deps), default=0.0)
        done.append(ready + waves * task_s)
    return done[-1] if done else 0.0


def _read_mb(stage: StagePlan, out_mb: list[float]) -> float:
    if not stage.deps:  # a source: its splits' byte ranges
        return sum(_split_bytes(p.get("split")) for p in stage.task_params) / MB
    total = 0.0
    for dep in stage.deps:
        total += out_mb[dep.stage] * (stage.tasks if dep.kind == "broadcast" else 1)
    return total


def _split_bytes(split: dict[str, Any] | None) -> int:
    return int(split["end"]) - int(split["start"]) if split else 0


def choose(
    workflow: Workflow, splitter: Splitter, rates: Rates = Rates(), slots: int | None = None
) -> Choice:
    """The partitioning of ``workflow`` the cost model predicts fastest."""
    return _choice(_partitionings(workflow, splitter), rates, slots)


def planned(workflow: Workflow, splitter: Splitter, auto: bool = False) -> tuple[JobPlan, Choice | None]:
    """The workflow's stage DAG; with ``auto``, of the partitioning ``choose`` picks (and its choice)."""
    if not auto:
        return lower(workflow, splitter), None
    plans = _partitionings(workflow, splitter)
    choice = _choice(plans)
    return plans[choice.merge], choice


def _partitionings(workflow: Workflow, splitter: Splitter) -> dict[bool, JobPlan]:
    """The workflow lowered merged (True) and unmerged (False)."""
    return {merge: lower(replace(workflow, merge=merge), splitter) for merge in (True, False)}


def _choice(plans: dict[bool, JobPlan], rates: Rates = Rates(), slots: int | None = None) -> Choice:
    predicted = {merge: predicted_s(plan, rates, slots) for merge, plan in plans.items()}
    return Choice(predicted[True] <= predicted[False], predicted)
