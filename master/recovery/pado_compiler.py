"""``strategy: pado``: the Pado compiler (EuroSys'17, section 3.1).

The compiler marks every operator of the logical DAG reserved or transient
(Algorithm 1, ``place_operators``) and cuts the marked DAG into Pado stages that
each end on a reserved operator or on a sink (Algorithm 2, ``partition_stages``);
``task_groups`` fuses a stage's neighbours into physical operators, and
``aggregates_partially`` says which stages' outputs may be partially aggregated.
The runtime of section 3.2 is ``master.recovery.pado`` (its bookkeeping rules in
``master.recovery.pado_rules``): one implementation, the one that runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from testbed.api.policy import NodeClass
from testbed.logical_dag import Dependency, Edge, LogicalDag

# ---------------------------------------------------------------- Algorithm 1


def place_operators(dag: LogicalDag) -> dict[str, NodeClass]:
    """Algorithm 1 (Operator Placement), line by line.

    In topological order: a computational operator (one with in-edges) is reserved
    if ANY in-edge is many-to-many or many-to-one, or if ALL in-edges are
    one-to-one and ALL come from reserved operators; otherwise transient. A source
    operator is transient if it reads its data, reserved if it creates it.
    """
    placement: dict[str, NodeClass] = {}
    for op_id in dag.topological_order():
        in_edges = dag.in_edges(op_id)
        if in_edges:
            placement[op_id] = _place_computational(in_edges, placement)
        elif dag.operator(op_id).source == "read":
            placement[op_id] = "transient"
        else:
            placement[op_id] = "reserved"
    return placement


def _place_computational(in_edges: Sequence[Edge], placement: Mapping[str, NodeClass]) -> NodeClass:
    gathers = (Dependency.MANY_TO_MANY, Dependency.MANY_TO_ONE)
    if any(e.dependency in gathers for e in in_edges):
        return "reserved"
    if all(e.dependency is Dependency.ONE_TO_ONE for e in in_edges) and all(
        placement[e.src] == "reserved" for e in in_edges
    ):
        return "reserved"
    return "transient"


# ---------------------------------------------------------------- Algorithm 2


@dataclass(frozen=True, slots=True)
class Stage:
    """A Pado stage: the operator that opened it (a reserved operator, or a sink),
    every transient operator recursively reached from it through transient
    parents, and the stages holding the reserved parents it reads from."""

    stage_id: int
    anchor: str
    operators: tuple[str, ...]
    parents: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.stage_id,
            "anchor": self.anchor,
            "operators": list(self.operators),
            "parents": list(self.parents),
        }


def partition_stages(dag: LogicalDag, placement: Mapping[str, NodeClass]) -> list[Stage]:
    """Algorithm 2 (Logical DAG Partitioning).

    In topological order, every operator marked reserved or without out-edges
    opens a new stage and RECURSIVEADDs itself: the stage takes the operator, then
    each transient parent recursively; a reserved parent instead belongs to an
    earlier stage, which gets the new stage as a child. A transient operator
    reachable from several stages belongs to each of them (its outputs are never
    kept, so each stage computes it). Stage ids follow creation order, hence are
    topological: a parent stage's id is smaller than its child's.
    """
    _check_placement(dag, placement)
    order = {op: i for i, op in enumerate(dag.topological_order())}
    stage_of: dict[str, int] = {}
    stages: list[Stage] = []
    for op_id in dag.topological_order():
        if placement[op_id] == "reserved" or not dag.out_edges(op_id):
            members, parents = _recursive_add(dag, placement, stage_of, op_id)
            stage_id = len(stages)
            stage_of[op_id] = stage_id
            stages.append(
                Stage(
                    stage_id,
                    op_id,
                    tuple(sorted(members, key=order.__getitem__)),
                    tuple(sorted(parents)),
                )
            )
    return stages


def _recursive_add(
    dag: LogicalDag, placement: Mapping[str, NodeClass], stage_of: Mapping[str, int], op_id: str
) -> tuple[set[str], set[int]]:
    members, parents, stack = {op_id}, set(), [op_id]
    while stack:
        for edge in dag.in_edges(stack.pop()):
            if placement[edge.src] == "reserved":
                parents.add(stage_of[edge.src])
            elif edge.src not in members:
                members.add(edge.src)
                stack.append(edge.src)
    return members, parents


def _check_placement(dag: LogicalDag, placement: Mapping[str, NodeClass]) -> None:
    ops = set(dag.topological_order())
    if set(placement) != ops:
        missing, extra = sorted(ops - set(placement)), sorted(set(placement) - ops)
        raise ValueError(
            f"placement must cover exactly the dag's operators: missing {missing}, unknown {extra}"
        )
    bad = {op: where for op, where in placement.items() if where not in ("reserved", "transient")}
    if bad:
        raise ValueError(f"placement must be 'reserved' or 'transient': {bad}")


@dataclass(frozen=True, slots=True)
class TaskGroup:
    """Operators of one stage fused into one physical operator, run as ``tasks`` tasks."""

    stage_id: int
    operators: tuple[str, ...]
    placement: NodeClass
    tasks: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage_id,
            "operators": list(self.operators),
            "placement": self.placement,
            "tasks": self.tasks,
        }


def task_groups(dag: LogicalDag, placement: Mapping[str, NodeClass], stage: Stage) -> list[TaskGroup]:
    """Section 3.2.2: "For each stage, neighboring operators placed on identical types
    of containers are fused into a single operator [...] Such operators are expanded
    into a number of multiple parallel tasks". We fuse neighbours joined one-to-one
    (any other edge is a physical transfer between tasks), so a group's operators
    share one parallelism. Groups come in topological order of their first operator."""
    members = set(stage.operators)
    group_of = {op: op for op in stage.operators}

    def root(op: str) -> str:
        while group_of[op] != op:
            op = group_of[op]
        return op

    for op in stage.operators:
        for edge in dag.in_edges(op):
            fusable = edge.dependency is Dependency.ONE_TO_ONE
            if edge.src in members and fusable and placement[edge.src] == placement[op]:
                group_of[root(op)] = root(edge.src)
    groups: dict[str, list[str]] = {}
    for op in stage.operators:
        groups.setdefault(root(op), []).append(op)
    return [
        TaskGroup(stage.stage_id, tuple(ops), placement[ops[0]], dag.operator(ops[0]).parallelism)
        for ops in groups.values()
    ]


@dataclass(frozen=True)
class PadoPlan:
    """What the compiler hands the runtime; ``to_json`` is what the run directory keeps."""

    dag: LogicalDag
    placement: Mapping[str, NodeClass]
    stages: tuple[Stage, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": "pado",
            "dag": self.dag.to_dict(),
            "placement": {op: self.placement[op] for op in self.dag.topological_order()},
            "stages": [s.to_dict() for s in self.stages],
            "task_groups": [g.to_dict() for g in self.task_groups()],
            "total_tasks": self.total_tasks,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def task_groups(self) -> list[TaskGroup]:
        return [g for s in self.stages for g in task_groups(self.dag, self.placement, s)]

    @property
    def total_tasks(self) -> int:
        """Tasks of one clean run: the denominator of the relaunched-task ratio."""
        return sum(g.tasks for g in self.task_groups())


def compile_pado(dag: LogicalDag) -> PadoPlan:
    placement = place_operators(dag)
    return PadoPlan(dag, placement, tuple(partition_stages(dag, placement)))


# ---------------------------------------------------------------- partial aggregation


def aggregates_partially(plan: PadoPlan, stage: Stage) -> bool:
    """Whether the transient outputs of ``stage`` may be partially aggregated on their
    transient node: the reserved operator they go to is commutative and associative."""
    anchor = plan.dag.operator(stage.anchor)
    return plan.placement[stage.anchor] == "reserved" and anchor.commutative_associative
