"""The logical DAG of a job a workload planned as a stage DAG (``testbed.api.JobDag``): one
operator per stage, each edge with the dependency type the workload declared, so that Spark's
stage rule and Pado's Algorithm 1 (``pado_compiler``) reason about it as about the built-in
workloads' DAGs."""

from __future__ import annotations

from testbed.api import JobPlan
from testbed.logical_dag import Dependency, Edge, LogicalDag, Operator
from testbed.plan import DAG_OP


def is_stage_dag(plan: JobPlan) -> bool:
    return bool(plan.stages) and all(stage.op == DAG_OP for stage in plan.stages)


def stage_dag(plan: JobPlan) -> LogicalDag:
    """The plan's stages as operators (ids: the stage names), its edges as declared."""
    stages = [stage.shared_params["dag"] for stage in plan.stages]
    operators = tuple(
        Operator(
            meta["stage"],
            meta["stage"],
            plan.stages[s].tasks,
            source=None if meta["inputs"] else meta["source"],
            commutative_associative=meta["commutative_associative"],
        )
        for s, meta in enumerate(stages)
    )
    edges = tuple(
        Edge(parent, meta["stage"], Dependency(kind))
        for meta in stages
        for parent, kind in zip(meta["inputs"], meta["dependencies"], strict=True)
    )
    return LogicalDag(plan.workload, operators, edges)


def stage_operators(plan: JobPlan) -> list[tuple[str, ...]]:
    """Each physical stage runs its own operator (no fusion: the workload fused what it would)."""
    return [(stage.shared_params["dag"]["stage"],) for stage in plan.stages]
