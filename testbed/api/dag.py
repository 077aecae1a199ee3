"""A job as a general DAG of stages (public: re-exported by ``testbed.api``).

A workload plugin that defines ``dag(job: JobInputs) -> JobDag`` plans its own stages
instead of map/reduce (Musketeer's jobs, Pado's operator DAGs). A stage is ``tasks``
identical tasks running the body ``task`` (an import path ``package.module:function``,
called as ``function(task: DagTask)`` in an agent's worker); each of its ``inputs``
names a parent stage and the edge's dependency type (Pado, section 2.2):

- ``many-to-many`` (a shuffle): task i reads partition i of every parent task's
  output; the parent's ``partitions`` must equal this stage's ``tasks``;
- ``one-to-one`` (narrow, pipelined without a shuffle): task i reads the whole output
  of parent task i; equal ``tasks``;
- ``one-to-many`` (a broadcast): every task reads the whole output of every parent task;
- ``many-to-one`` (a gather): the stage's single task reads the whole output of every
  parent task.

Outside a shuffle a parent's output is one partition (``partitions`` = 1), so a stage
feeding a shuffle feeds nothing else unless its ``partitions`` is 1. The DAG is checked
when built: names unique, parents declared before their children (so no cycle), one sink
(the stage with no consumer: it writes the job's part files, one per task).

Records between stages are msgpack values (``DagTask.emit``); the sink writes text lines
(``DagTask.write_line``). Every body must be deterministic: a task may run twice (a
retry, a lineage recomputation after an eviction) and both runs must emit the same
records, partition by partition.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

EdgeKind = Literal["one-to-one", "one-to-many", "many-to-one", "many-to-many"]
EDGE_KINDS: tuple[EdgeKind, ...] = ("one-to-one", "one-to-many", "many-to-one", "many-to-many")
SourceKind = Literal["read", "create"]


class DagError(ValueError):
    """A stage DAG that breaks one of the rules above (the message names the stage)."""


@dataclass(frozen=True, slots=True)
class StageInput:
    """One incoming edge: the parent stage's name and the dependency type."""

    stage: str
    dependency: EdgeKind = "many-to-many"


@dataclass(frozen=True, slots=True)
class StageCost:
    """How ``--backend sim`` costs the stage's tasks: compute seconds per MB read (its
    inputs' blocks plus its split, or ``source_mb`` for a creating source), and output
    bytes per byte read, cut evenly into its partitions. A scenario's
    ``simulation.ops`` entry ``<workload>.<stage>`` overrides it."""

    s_per_mb: float = 0.0
    output_ratio: float = 1.0
    source_mb: float = 0.0


@dataclass(frozen=True, slots=True)
class StageSpec:
    """One stage of a ``JobDag``."""

    name: str
    task: str
    """The body's import path ``package.module:function`` (reachable on the agents'
    ``PYTHONPATH``: ``policy.plugin_path``)."""
    tasks: int = 1
    partitions: int = 1
    """Partitions of each task's output: the ``tasks`` of its many-to-many consumers."""
    inputs: tuple[StageInput, ...] = ()
    args: Mapping[str, Any] = field(default_factory=dict)
    """Arguments of every task (msgpack/JSON values), ``DagTask.args``."""
    task_args: tuple[Mapping[str, Any], ...] = ()
    """Per-task arguments (empty, or one mapping per task, merged over ``args``): a source's
    split (``JobInputs.splits``)."""
    source: SourceKind = "read"
    """For a stage without inputs: whether it reads stored data (its split) or creates it
    in memory (Pado's Algorithm 1 places the two differently)."""
    commutative_associative: bool = False
    """Its body may run on partial inputs and again on the partial results (Pado's partial
    aggregation of pushed outputs, section 3.2.7)."""
    cost: StageCost = StageCost()


@dataclass(frozen=True, slots=True)
class JobDag:
    """A job's stages, each after its parents; checked when built (``DagError``)."""

    stages: tuple[StageSpec, ...]

    def __post_init__(self) -> None:
        check_dag(self)

    def index(self, name: str) -> int:
        for i, stage in enumerate(self.stages):
            if stage.name == name:
                return i
        raise DagError(f"no stage {name!r}")

    def consumers(self, name: str) -> tuple[tuple[StageSpec, StageInput], ...]:
        return tuple((s, e) for s in self.stages for e in s.inputs if e.stage == name)

    @property
    def sink(self) -> StageSpec:
        return self.stages[-1]


@dataclass(frozen=True, slots=True)
class JobInputs:
    """What ``Workload.dag`` plans from: the job's fields."""

    input: str | None
    """The job's ``input`` (a path or glob of text files), None without one."""
    maps: int | None
    reduces: int
    seed: int
    splitter: Callable[[str, int | None], list[dict[str, Any]]] = field(
        repr=False, compare=False, default=None
    )  # type: ignore[assignment]
    """The testbed's line-aligned splitting (set by the planner)."""

    def splits(self, count: int | None = None, pattern: str | None = None) -> tuple[dict[str, Any], ...]:
        """``task_args`` of a source reading ``pattern`` (default: the job's ``input``) in
        ``count`` line-aligned byte ranges (default ``maps``, else one per 8 MB); a body reads
        its own with ``DagTask.lines()``."""
        source = pattern or self.input
        if source is None:
            raise DagError("the job has no input to split")
        return tuple(self.splitter(source, count or self.maps))


class DagTask(Protocol):
    """What a stage's body gets (an agent's worker builds it)."""

    stage: str
    index: int
    tasks: int
    partitions: int
    args: dict[str, Any]
    scratch: Path
    budget_bytes: int

    def inputs(self, stage: str) -> Iterator[Any]:
        """The records this task reads from parent ``stage`` (by its edge's type)."""
        ...

    def lines(self) -> Iterator[str]:
        """The lines of this task's split (its ``task_args`` from ``JobInputs.splits``)."""
        ...

    def emit(self, record: Any, partition: int = 0) -> None:
        """One output record into ``partition`` (``partition_of(key, task.partitions)`` for a
        shuffle by key)."""
        ...

    def write_line(self, line: str) -> None:
        """One line of the job's part file (the sink stage only)."""
        ...


def check_dag(dag: JobDag) -> None:
    """Raise ``DagError`` unless the DAG keeps the rules of the module docstring."""
    if not dag.stages:
        raise DagError("a job DAG needs at least one stage")
    seen: dict[str, StageSpec] = {}
    for stage in dag.stages:
        _check_stage(stage, seen)
        seen[stage.name] = stage
    for stage in dag.stages[:-1]:
        _check_outputs(dag, stage)
    if dag.consumers(dag.sink.name):
        raise DagError(f"stage {dag.sink.name!r}: the last stage is the sink and has no consumer")


def _check_stage(stage: StageSpec, seen: dict[str, StageSpec]) -> None:
    where = f"stage {stage.name!r}"
    if stage.name in seen:
        raise DagError(f"{where}: the name is used twice")
    if ":" not in stage.task:
        raise DagError(f"{where}: task must be an import path package.module:function, got {stage.task!r}")
    if stage.tasks < 1 or stage.partitions < 1:
        raise DagError(f"{where}: tasks and partitions must be >= 1")
    if stage.task_args and len(stage.task_args) != stage.tasks:
        raise DagError(f"{where}: {len(stage.task_args)} task_args for {stage.tasks} tasks")
    parents = [e.stage for e in stage.inputs]
    if len(set(parents)) != len(parents):
        raise DagError(f"{where}: reads a parent twice")
    for edge in stage.inputs:
        parent = seen.get(edge.stage)
        if parent is None:
            raise DagError(f"{where}: input {edge.stage!r} is not a stage declared before it")
        if edge.dependency not in EDGE_KINDS:
            raise DagError(f"{where}: dependency {edge.dependency!r} is not one of {', '.join(EDGE_KINDS)}")
        if edge.dependency == "many-to-many" and parent.partitions != stage.tasks:
            raise DagError(
                f"{where}: shuffles {edge.stage!r}, whose {parent.partitions} partitions "
                f"must equal its {stage.tasks} tasks"
            )
        if edge.dependency == "one-to-one" and parent.tasks != stage.tasks:
            raise DagError(
                f"{where}: one-to-one from {edge.stage!r} needs equal tasks ({parent.tasks} != {stage.tasks})"
            )
        if edge.dependency == "many-to-one" and stage.tasks != 1:
            raise DagError(f"{where}: gathers {edge.stage!r} (many-to-one), so it has one task")


def _check_outputs(dag: JobDag, stage: StageSpec) -> None:
    consumers = dag.consumers(stage.name)
    if not consumers:
        raise DagError(f"stage {stage.name!r}: nothing reads its output (only the last stage is a sink)")
    whole = [s.name for s, e in consumers if e.dependency != "many-to-many"]
    if whole and stage.partitions != 1:
        raise DagError(
            f"stage {stage.name!r}: {whole[0]!r} reads its whole output, so its partitions must be 1 "
            f"(not {stage.partitions})"
        )


def partition_of(key: Any, partitions: int) -> int:
    """The partition of a key in a shuffle: CRC32 of its msgpack bytes, as the built-in
    workloads partition."""
    import zlib

    import msgpack

    return zlib.crc32(msgpack.packb(key)) % partitions
