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
from collections.abc import Callable, Sequence
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

    def of(self, stage: StagePlan) -> StageRate:
        """A stage's rates: a scan's or a block's per MB, the cold start where its chain compiles."""
        ops = {op["op"] for op in stage.shared_params.get("ops", [])}
        per_mb = self.scan_s_per_mb if "scan" in ops else self.s_per_mb
        return StageRate(self.launch_s, per_mb, extra_s=self.start_s if ops & COMPILING_OPS else 0.0)


@dataclass(frozen=True)
class Choice:
    merge: bool
    predicted_s: dict[bool, float]
    """Each partitioning's predicted makespan (seconds), by its ``merge``."""


@dataclass(frozen=True)
class StageRate:
    """One stage's task at its rates: seconds per task, per MB read, and bytes written per
    byte read. ``merge: auto`` takes them from ``Rates``, ``strategy: auto`` from the
    simulator's calibrated op models (``testbed.scenario.simulation.SimulationSpec.dag_op``)."""

    fixed_s: float
    s_per_mb: float
    output_ratio: float = 1.0
    extra_s: float = 0.0
    """Seconds added after the bytes' (``Rates.start_s``: a compiling chain's cold start)."""
    source_mb: float = 0.0
    """MB each task of a source without a split creates (a DAG stage's ``StageCost.source_mb``)."""


@dataclass(frozen=True)
class StageEstimate:
    """One stage as the cost model predicts it (MB and seconds)."""

    tasks: int
    read_mb: float
    out_mb: float
    task_s: float
    start_s: float
    end_s: float


ReadyOf = Callable[[int, list["StageEstimate"]], float]
"""When stage ``number`` may start, given the estimates of the stages before it."""


def stage_estimates(
    plan: JobPlan,
    rate_of: Callable[[StagePlan], StageRate],
    slots: int | Sequence[int] | None = None,
    ready_of: ReadyOf | None = None,
) -> list[StageEstimate]:
    """Each stage's volumes and times: a stage starts when its last parent ends (or when
    ``ready_of`` says) and takes ``waves`` rounds (``slots`` tasks at a time, or each stage's
    own; None: one wave) of its task at its rates."""
    found: list[StageEstimate] = []
    for number, stage in enumerate(plan.stages):
        at = slots if slots is None or isinstance(slots, int) else slots[number]
        rate = rate_of(stage)
        read_mb = _read_mb(stage, [e.out_mb for e in found], rate.source_mb)
        task_s = rate.fixed_s + read_mb / max(1, stage.tasks) * rate.s_per_mb + rate.extra_s
        waves = 1 if at is None else math.ceil(stage.tasks / max(1, at))
        if ready_of is None:
            ready = max((found[d.stage].end_s for d in stage.deps), default=0.0)
        else:
            ready = ready_of(number, found)
        out_mb = read_mb * rate.output_ratio
        found.append(StageEstimate(stage.tasks, read_mb, out_mb, task_s, ready, ready + waves * task_s))
    return found


def predicted_s(plan: JobPlan, rates: Rates = Rates(), slots: int | None = None) -> float:
    """The plan's makespan under the cost model: its stages' critical path, ``slots`` tasks
    at a time (None: every stage in one wave). Data volumes are first-run bounds: a stage
    writes what it reads."""
    return max((e.end_s for e in stage_estimates(plan, rates.of, slots)), default=0.0)


def _read_mb(stage: StagePlan, out_mb: list[float], source_mb: float = 0.0) -> float:
    if not stage.deps:  # a source: its splits' byte ranges (a DAG stage's ``file``), or what it creates
        split = sum(_split_bytes(p.get("split", p.get("file"))) for p in stage.task_params) / MB
        return split or source_mb * stage.tasks
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
