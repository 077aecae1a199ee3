"""``strategy: pado``: the Pado compiler and the pure decisions of its runtime.

Spec: Pado (EuroSys'17), section 3. The compiler marks every operator of the
logical DAG reserved or transient (Algorithm 1, ``place_operators``) and cuts the
marked DAG into Pado stages that each end on a reserved operator or on a sink
(Algorithm 2, ``partition_stages``). The runtime helpers below are the decisions
of section 3.2, each a pure function of the state it is given (or, for the
commit ledger, bookkeeping without I/O): launch order inside a stage, what to
relaunch after an eviction, exactly-once commits of pushed outputs, the task
input cache, when to flush a partial aggregate, and what to recompute when a
reserved node fails. The master shell applies them.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from master.dag import Dependency, Edge, LogicalDag
from master.policies.base import NodeClass
from testbed.lru import LruCache

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


# ---------------------------------------------------------------- runtime: a stage's tasks

TaskStatus = Literal["pending", "running", "pushing", "committed", "done"]


@dataclass(frozen=True, slots=True)
class StageTask:
    """One task of the running stage.

    Transient: pending -> running -> pushing (computed; output being pushed, or
    held for partial aggregation, on ``node``) -> committed (the master accepted its
    commit). Reserved: pending -> running (set up, receiving pushes) -> done.
    """

    task_id: str
    placement: NodeClass
    status: TaskStatus = "pending"
    node: str | None = None


@dataclass(frozen=True, slots=True)
class StageRunState:
    stage_id: int
    tasks: tuple[StageTask, ...]


def ready_to_launch(stage: StageRunState) -> list[str]:
    """Section 3.2.3: "the task scheduler first schedules and sets up the tasks placed
    on reserved executors [...]. Once they are set up, the tasks placed on transient
    executors are scheduled and run." Pending reserved tasks come first; transient
    tasks become ready only when no reserved task of the stage is still pending."""
    reserved = [t.task_id for t in stage.tasks if t.placement == "reserved" and t.status == "pending"]
    if reserved:
        return reserved
    return [t.task_id for t in stage.tasks if t.placement == "transient" and t.status == "pending"]


def on_transient_eviction(stage: StageRunState, node: str) -> frozenset[str]:
    """Section 3.2.5: "the task scheduler reschedules only the tasks that were
    scheduled in the evicted executors, whose outputs were not transferred and
    committed to their destinations." Committed outputs already live on reserved
    executors, and no parent stage is touched."""
    return frozenset(
        t.task_id
        for t in stage.tasks
        if t.placement == "transient" and t.node == node and t.status in ("running", "pushing")
    )


# ---------------------------------------------------------------- runtime: commits

Verdict = Literal["accepted", "duplicate", "superseded", "incomplete"]
Block = tuple[int, str]
"""A pushed block as the reserved side verified it: (bytes, checksum)."""


@dataclass(frozen=True, slots=True)
class Push:
    """One pushed output: a single task attempt's, or the partial aggregate of several
    tasks' outputs held on one transient node (section 3.2.7). ``members`` pairs
    each task id with the attempt whose output the push carries."""

    push_id: str
    members: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, task_id: str, attempt: int) -> Push:
        return cls(f"{task_id}#{attempt}", ((task_id, attempt),))


class CommitLedger:
    """Exactly-once delivery of pushed outputs (section 3.2.5).

    Reserved executors report each block they received whole, with its checksum
    verified (``receive``). A commit names a push and every destination it sent to
    with what it sent (its manifest). It is accepted only when every block it
    names has arrived as sent, and then atomically: each destination processes,
    for each task, the block of exactly one push (``inputs_for``, ``pushes_for``)
    and drops the others. A push whose tasks already reached a destination through
    another push is refused there (``superseded``; if only some of an aggregate's
    tasks did, the whole push is refused and the rest must be relaunched), and a
    redelivered commit is recognised (``duplicate``). When a reserved executor
    fails, ``forget_destination`` reopens what was committed to it, so that reruns
    push there again. Bookkeeping only: no I/O, no clock.
    """

    def __init__(self) -> None:
        self._received: dict[str, dict[str, Block]] = {}
        self._owner: dict[tuple[str, str], tuple[str, int]] = {}
        self._accepted: set[str] = set()
        self._done: set[str] = set()

    def receive(self, push_id: str, destination: str, block: Block) -> None:
        self._received.setdefault(push_id, {})[destination] = block

    def discard(self, push_id: str) -> None:
        """The push's node was evicted before its commit: forget what it sent. What
        it had committed is safe on the reserved executors and stays."""
        self._received.pop(push_id, None)

    def commit(self, push: Push, manifest: Mapping[str, Block]) -> Verdict:
        if push.push_id in self._accepted:
            return "duplicate"
        tasks = [task for task, _ in push.members]
        fresh = []
        for dest in manifest:
            reached = sum((task, dest) in self._owner for task in tasks)
            if 0 < reached < len(tasks):
                return "superseded"
            if reached == 0:
                fresh.append(dest)
        if not fresh and (manifest or all(task in self._done for task in tasks)):
            return "superseded"
        received = self._received.get(push.push_id, {})
        if any(received.get(dest) != manifest[dest] for dest in fresh):
            return "incomplete"
        for dest in fresh:
            for task, attempt in push.members:
                self._owner[(task, dest)] = (push.push_id, attempt)
        self._accepted.add(push.push_id)
        self._done.update(tasks)
        self._received.pop(push.push_id, None)
        return "accepted"

    def is_committed(self, task_id: str) -> bool:
        return task_id in self._done

    def inputs_for(self, destination: str) -> dict[str, int]:
        """Task id -> the one attempt whose output ``destination`` processes."""
        return {t: a for (t, d), (_, a) in self._owner.items() if d == destination}

    def owners_for(self, destination: str) -> dict[str, str]:
        """Task id -> the push whose block ``destination`` processes for that task."""
        return {t: p for (t, d), (p, _) in self._owner.items() if d == destination}

    def pushes_for(self, destination: str) -> frozenset[str]:
        """The pushed blocks ``destination`` processes; it drops any other."""
        return frozenset(p for (_, d), (p, _) in self._owner.items() if d == destination)

    def forget_destination(self, destination: str) -> frozenset[str]:
        """A reserved task lost what it had received (its node failed): the tasks that
        had committed to it, which must run again and push to it."""
        tasks = frozenset(t for t, d in self._owner if d == destination)
        for task in tasks:
            del self._owner[(task, destination)]
        self._done -= tasks
        return tasks


# ---------------------------------------------------------------- runtime: input cache


@dataclass(frozen=True, slots=True)
class Executor:
    node: str
    free_slots: int


def choose_executor(
    inputs: Collection[str],
    executors: Sequence[Executor],
    caches: Mapping[str, LruCache],
    cursor: int,
) -> tuple[str | None, int]:
    """Section 3.2.3's default policy: "first tries to pick an executor with the input
    data of the task cached [...] If not applicable, it picks an available executor
    in a round-robin manner, and waits until a task slot becomes available if none
    of the executors are available."

    ``executors`` is the stable round-robin order of the executors of the task's
    class; ``cursor`` is where the round robin resumes. Returns the chosen node
    (None: wait) and the next cursor. Among executors with some of the inputs
    cached, the one with most cached bytes wins; ties go round robin.
    """
    if not executors:
        return None, cursor
    start = cursor % len(executors)
    rotation = [executors[(start + k) % len(executors)] for k in range(len(executors))]
    free = [e for e in rotation if e.free_slots > 0]
    if not free:
        return None, cursor

    def cached(e: Executor) -> int:
        cache = caches.get(e.node)
        return cache.cached_bytes(inputs) if cache is not None else 0

    best = max(free, key=cached)  # max keeps the first of equals: round-robin order
    chosen = best if cached(best) > 0 else free[0]
    return chosen.node, executors.index(chosen) + 1


# ---------------------------------------------------------------- runtime: partial aggregation


@dataclass(frozen=True, slots=True)
class AggregationLimits:
    """Section 3.2.7: "Pado can configure an upper limit for the time and the number of
    aggregated tasks, so that data escapes once it reaches a certain point.\""""

    max_delay_s: float
    max_tasks: int

    def __post_init__(self) -> None:
        if self.max_delay_s < 0 or self.max_tasks < 1:
            raise ValueError(f"aggregation limits need max_delay_s >= 0, max_tasks >= 1: {self}")


def aggregates_partially(plan: PadoPlan, stage: Stage) -> bool:
    """Whether the transient outputs of ``stage`` may be partially aggregated on their
    transient node: the reserved operator they go to is commutative and associative."""
    anchor = plan.dag.operator(stage.anchor)
    return plan.placement[stage.anchor] == "reserved" and anchor.commutative_associative


def should_flush(
    limits: AggregationLimits, held_for_s: float, tasks_aggregated: int, more_tasks_coming: bool
) -> bool:
    """Push the partial aggregate held on a transient node now?

    ``held_for_s``: time since the oldest output in the aggregate finished;
    ``more_tasks_coming``: whether another task of the stage may still finish on
    this node (if not, waiting gains nothing)."""
    if tasks_aggregated == 0:
        return False
    return not more_tasks_coming or tasks_aggregated >= limits.max_tasks or held_for_s >= limits.max_delay_s


# ---------------------------------------------------------------- runtime: reserved failure


@dataclass(frozen=True, slots=True)
class ReservedFailurePlan:
    """``paused``: the running stage, which waits for the recomputations.
    ``recompute``: (stage, reserved task indices lost) in topological order; each is
    rerun for those indices, its transient tasks pushing to them again.
    ``restart``: the paused stage's own reserved tasks that were on the node."""

    paused: int
    recompute: tuple[tuple[int, frozenset[int]], ...]
    restart: frozenset[int]


def on_reserved_failure(
    stages: Sequence[Stage],
    running: int,
    completed: Collection[int],
    output_nodes: Mapping[int, Mapping[int, str]],
    node: str,
) -> ReservedFailurePlan:
    """Section 3.2.6: on a reserved executor failure the runtime pauses "the currently
    executing stage, and observ[es] its parent stages in a topological order to
    identify stages whose intermediate results are unavailable, to relaunch the
    corresponding tasks."

    ``output_nodes[stage][index]`` is the reserved node holding reserved task
    ``index``'s output (for the running stage: the node running it). A completed
    stage is inspected when an unfinished stage reads it; a stage that lost
    outputs has its own parents inspected in turn (they feed the recomputation),
    and the walk stops at stages that lost nothing.
    """
    by_id = {s.stage_id: s for s in stages}
    done = set(completed)
    frontier = {p for s in by_id if s not in done for p in by_id[s].parents} & done
    inspected: set[int] = set()
    lost: dict[int, frozenset[int]] = {}
    while frontier:
        stage_id = frontier.pop()
        inspected.add(stage_id)
        gone = _indices_on(output_nodes.get(stage_id, {}), node)
        if gone:
            lost[stage_id] = gone
            frontier |= (set(by_id[stage_id].parents) & done) - inspected
    return ReservedFailurePlan(
        paused=running,
        recompute=tuple(sorted(lost.items())),
        restart=_indices_on(output_nodes.get(running, {}), node),
    )


def _indices_on(where: Mapping[int, str], node: str) -> frozenset[int]:
    return frozenset(index for index, holder in where.items() if holder == node)
