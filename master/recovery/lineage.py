"""``strategy: spark`` and ``strategy: spark-checkpoint``: Spark's stages and lineage recovery.

Spec: the RDD paper (NSDI'12), sections 4 and 5.1, and the two Spark baselines of
the Pado paper (section 5.1.2). Pure functions only: the master shell keeps the
task states and applies what these return.

The physical plan is a DAG of stages, each of ``tasks`` identical tasks whose
outputs stay on the node that ran them (shuffle map outputs and persisted
partitions alike). A task reads its inputs through its stage's dependencies:
``narrow`` (task i reads the output of parent task i: a one-to-one, co-partitioned
edge) or ``wide`` (task i reads its share of every parent task's output: a
shuffle, a broadcast or a gather). The RDD paper calls a many-to-one gather
narrow, since each parent partition feeds one child; we plan it as wide, which
can only make recovery recompute more, never less, and none of our workloads
has one.

Recovery is demand driven, as Spark's scheduler is ("If some stages have become
unavailable [...] we resubmit tasks to compute the missing partitions"): after a
node loss, every unfinished task needs its inputs (a running one, only those it reads:
not a parent's partition known to be empty for it); a lost input is recomputed,
and the recomputation needs the lost inputs of its own, and so on up the
lineage: the critical chain. Outputs of final stages are written to the job's
output directory, so they are never lost.

spark-checkpoint is the same recovery over the same plan: each output crossing a
shuffle boundary (``PhysicalPlan.checkpointed_stages``) is also copied,
asynchronously, to a reserved node, and a task's output counts as lost only when
every node holding a copy is gone. So recovery reads a checkpoint where spark
would recompute its parents.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from testbed.api.policy import NodeClass
from testbed.logical_dag import Dependency, Edge, LogicalDag

TaskKey = tuple[int, int]
"""(stage id, task index)."""

DepKind = Literal["narrow", "wide"]
Strategy = Literal["spark", "spark-checkpoint"]


@dataclass(frozen=True, slots=True)
class StageDep:
    stage: int
    kind: DepKind


@dataclass(frozen=True, slots=True)
class PlanStage:
    stage_id: int
    operators: tuple[str, ...]
    tasks: int
    deps: tuple[StageDep, ...] = ()
    final: bool = False
    """Its outputs are the job's output, written outside node-local disks."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.stage_id,
            "operators": list(self.operators),
            "tasks": self.tasks,
            "deps": [{"stage": d.stage, "kind": d.kind} for d in self.deps],
            "final": self.final,
        }


@dataclass(frozen=True)
class PhysicalPlan:
    """Stages in topological order; a stage's id is its position."""

    stages: tuple[PlanStage, ...]

    def __post_init__(self) -> None:
        for position, stage in enumerate(self.stages):
            if stage.stage_id != position:
                raise ValueError(f"stage {stage.stage_id} is at position {position}")
            if stage.tasks < 1:
                raise ValueError(f"stage {position} needs at least one task")
            for dep in stage.deps:
                if not 0 <= dep.stage < position:
                    raise ValueError(f"stage {position} depends on {dep.stage}, not an earlier stage")
                if dep.kind == "narrow" and self.stages[dep.stage].tasks != stage.tasks:
                    raise ValueError(
                        f"narrow dependency {dep.stage} -> {position} joins "
                        f"{self.stages[dep.stage].tasks} tasks to {stage.tasks}"
                    )

    def task_keys(self) -> Iterator[TaskKey]:
        for stage in self.stages:
            for index in range(stage.tasks):
                yield (stage.stage_id, index)

    def inputs(self, key: TaskKey, unread: Callable[[TaskKey], bool] | None = None) -> Iterator[TaskKey]:
        """The parent tasks whose outputs task ``key`` reads (``unread``: the wide parents it
        does not, whose partition for it is empty)."""
        stage_id, index = key
        for dep in self.stages[stage_id].deps:
            if dep.kind == "narrow":
                yield (dep.stage, index)
                continue
            for parent in ((dep.stage, i) for i in range(self.stages[dep.stage].tasks)):
                if unread is None or not unread(parent):
                    yield parent

    def checkpointed_stages(self) -> frozenset[int]:
        """Stages whose outputs cross a wide boundary (a shuffle, a broadcast): spark-checkpoint
        copies them."""
        return frozenset(d.stage for s in self.stages for d in s.deps if d.kind == "wide")

    @property
    def total_tasks(self) -> int:
        return sum(s.tasks for s in self.stages)

    def to_dict(self, strategy: Strategy = "spark") -> dict[str, Any]:
        return {
            "strategy": strategy,
            "stages": [s.to_dict() for s in self.stages],
            "checkpointed_stages": sorted(self.checkpointed_stages())
            if strategy == "spark-checkpoint"
            else [],
        }

    def to_json(self, strategy: Strategy = "spark") -> str:
        return json.dumps(self.to_dict(strategy), indent=2)


def spark_plan(dag: LogicalDag) -> PhysicalPlan:
    """Spark's stages for a logical DAG (section 5.1: "Each stage contains as many
    pipelined transformations with narrow dependencies as possible. The boundaries
    of the stages are the shuffle operations required for wide dependencies, or any
    already computed partitions that can shortcircuit the computation").

    An operator is pipelined into the stage of a parent that feeds it one-to-one
    and feeds nothing else; its other inputs become dependencies of that stage.
    Otherwise it starts a stage. An operator read by several others (PageRank's
    links) therefore keeps its partitions, as a persisted RDD does, and each
    PageRank iteration is one stage: ranks of the previous iteration, joined with
    links, emitting the contributions that the next shuffle carries."""
    stage_of: dict[str, int] = {}
    members: list[list[str]] = []
    deps: list[dict[int, DepKind]] = []
    for op_id in dag.topological_order():
        in_edges = dag.in_edges(op_id)
        carrier = _pipelining_parent(dag, in_edges)
        if carrier is None:
            members.append([])
            deps.append({})
            stage = len(members) - 1
        else:
            stage = stage_of[carrier]
        stage_of[op_id] = stage
        members[stage].append(op_id)
        for edge in in_edges:
            if edge.src != carrier:
                _add_dep(deps[stage], stage_of[edge.src], edge.dependency)
    sinks = set(dag.sinks())
    return PhysicalPlan(
        tuple(
            PlanStage(
                stage_id=i,
                operators=tuple(ops),
                tasks=dag.operator(ops[0]).parallelism,
                deps=tuple(StageDep(p, k) for p, k in sorted(deps[i].items())),
                final=ops[-1] in sinks,
            )
            for i, ops in enumerate(members)
        )
    )


def _pipelining_parent(dag: LogicalDag, in_edges: Sequence[Edge]) -> str | None:
    for edge in in_edges:
        if edge.dependency is Dependency.ONE_TO_ONE and len(dag.out_edges(edge.src)) == 1:
            return edge.src
    return None


def _add_dep(deps: dict[int, DepKind], parent: int, dependency: Dependency) -> None:
    kind: DepKind = "narrow" if dependency is Dependency.ONE_TO_ONE else "wide"
    deps[parent] = "wide" if "wide" in (kind, deps.get(parent)) else kind


def executor_classes(strategy: Strategy, driver: bool = False) -> frozenset[NodeClass]:
    """Where tasks may run (Pado paper, section 5.1.2): Spark "runs executors on both
    transient and reserved containers"; Spark-checkpoint "runs executors on transient
    containers and uses reserved containers [...] as stable storages". A ``driver`` stage
    (its operators run in Spark's driver program, ``Operator.driver``) runs on a reserved
    node under both: the engines' master ran on a reserved container (section 5.2), never
    evicted."""
    if driver:
        return frozenset({"reserved"})
    if strategy == "spark":
        return frozenset({"reserved", "transient"})
    return frozenset({"transient"})


def checkpoint_node(key: TaskKey, reserved_nodes: Sequence[str]) -> str:
    """The reserved node that stores the checkpoint of task ``key``'s output: a stable
    spread of outputs over the stable-storage nodes."""
    if not reserved_nodes:
        raise ValueError("spark-checkpoint needs at least one reserved node as stable storage")
    ordered = sorted(reserved_nodes)
    return ordered[zlib.crc32(f"{key[0]}.{key[1]}".encode()) % len(ordered)]


# ---------------------------------------------------------------- recovery


@dataclass(frozen=True, slots=True)
class TaskState:
    """``node``: where a running task runs. ``output_nodes``: every node holding a copy
    of a done task's output (the node that ran it, plus its checkpoint's reserved
    node once the checkpoint is complete). ``inputs_fetched``: a running task that
    already holds all its inputs needs nothing more from its parents.
    ``partition_bytes``: a done task's output per partition, where known: a running child
    does not read a partition that is empty for it (Spark's reducers skip zero-size
    blocks), so its loss is nothing to that child."""

    status: Literal["pending", "running", "done"] = "pending"
    node: str | None = None
    output_nodes: frozenset[str] = frozenset()
    inputs_fetched: bool = False
    partition_bytes: tuple[int, ...] = ()


PENDING = TaskState()


@dataclass(frozen=True, slots=True)
class Recovery:
    """``relaunch``: tasks that were running on a lost node. ``recompute``: done tasks
    whose outputs are lost and still needed, however far back in the lineage.
    ``lost_outputs``: every done, non-final task whose output is gone (the shell
    forgets them; those not in ``recompute`` are never needed again)."""

    relaunch: frozenset[TaskKey]
    recompute: frozenset[TaskKey]
    lost_outputs: frozenset[TaskKey]

    def resubmit(self) -> list[TaskKey]:
        """Everything to run again, parents first."""
        return sorted(self.relaunch | self.recompute)

    def chain_stages(self) -> list[int]:
        """The stages the recomputation reaches back into."""
        return sorted({stage for stage, _ in self.recompute})


def recover(plan: PhysicalPlan, tasks: Mapping[TaskKey, TaskState], lost_nodes: Collection[str]) -> Recovery:
    """What to run again once ``lost_nodes`` (every node lost so far) are gone.

    Tasks absent from ``tasks`` are pending. Call it on each node loss, and again
    whenever a task goes back to pending for another reason (its inputs may have
    been lost meanwhile)."""
    dead = frozenset(lost_nodes)

    def state(key: TaskKey) -> TaskState:
        return tasks.get(key, PENDING)

    relaunch = frozenset(k for k, s in tasks.items() if s.status == "running" and s.node in dead)
    lost_outputs = frozenset(
        k
        for k, s in tasks.items()
        if s.status == "done" and not plan.stages[k[0]].final and not (s.output_nodes - dead)
    )
    demand = [k for k in plan.task_keys() if _needs_inputs(state(k), dead)]
    recompute: set[TaskKey] = set()
    while demand:
        child = demand.pop()
        unread = partial(_unread, state, child) if state(child).status == "running" else None
        for parent in plan.inputs(child, unread):
            if parent in lost_outputs and parent not in recompute:
                recompute.add(parent)
                demand.append(parent)
    return Recovery(relaunch, frozenset(recompute), lost_outputs)


def _unread(state: Callable[[TaskKey], TaskState], child: TaskKey, parent: TaskKey) -> bool:
    """Whether a running ``child`` does not read wide ``parent``'s output: partition ``i``,
    which child ``i`` reads, is known to be empty (one beyond those known is not)."""
    sizes = state(parent).partition_bytes
    return child[1] < len(sizes) and sizes[child[1]] == 0


def _needs_inputs(state: TaskState, dead: frozenset[str]) -> bool:
    if state.status == "pending":
        return True
    if state.status == "running":
        return state.node in dead or not state.inputs_fetched
    return False
