"""Jobs planned as a general stage DAG (``testbed.api.JobDag``): the plan, and the task that
runs a stage's body.

Every stage becomes a ``StagePlan`` of op ``dag.task``; an edge's dependency type maps
onto the core's three dependency kinds: many-to-many and many-to-one onto ``shuffle``
(task i reads partition i of every parent task: a gather's single task reads partition 0,
its parents' only one), one-to-one onto ``narrow``, one-to-many onto ``broadcast``. The
stage's name, body, parents and costs travel in the task's params (``dag``), its
arguments in ``args`` and its own arguments (a split's ``file``) at the top level, where
the simulator and the input cache read a source's byte range.

The task imports the body in the worker, hands it a ``StageTask`` and writes what it
emitted: records spooled per partition on the scratch disk (bounded memory), then copied
into the task's block partition by partition, msgpack frames of ``RECORDS_PER_FRAME``
records; the sink's lines go to its part file.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import msgpack

from testbed.api.dag import DagError, JobDag, StageInput, StageSpec
from testbed.plan import DAG_OP, Dependency, JobPlan, StagePlan
from testbed.workloads.base import Combiner, FetchFailed, TaskContext, TaskFunction, WorkloadError
from testbed.workloads.splits import read_lines_range

RECORDS_PER_FRAME = 512
RESERVED_PARAMS = frozenset({"dag", "args"})
KINDS: dict[str, str] = {
    "many-to-many": "shuffle",
    "many-to-one": "shuffle",
    "one-to-one": "narrow",
    "one-to-many": "broadcast",
}


# ------------------------------------------------------------------ plan


def plan_dag(workload: str, dag: JobDag) -> JobPlan:
    """The physical plan of a checked DAG: one stage per ``StageSpec``, in its order."""
    return JobPlan(workload, tuple(_stage_plan(workload, dag, stage) for stage in dag.stages))


def _stage_plan(workload: str, dag: JobDag, stage: StageSpec) -> StagePlan:
    for own in stage.task_args:
        if RESERVED_PARAMS & set(own):
            raise DagError(f"stage {stage.name!r}: task_args may not use the names {sorted(RESERVED_PARAMS)}")
    final = stage is dag.sink
    meta = {
        "workload": workload,
        "stage": stage.name,
        "tasks": stage.tasks,
        "body": stage.task,
        "inputs": [edge.stage for edge in stage.inputs],
        "dependencies": [edge.dependency for edge in stage.inputs],
        "source": stage.source,
        "commutative_associative": stage.commutative_associative,
        "cost": {"s_per_mb": stage.cost.s_per_mb, "output_ratio": stage.cost.output_ratio,
                 "source_mb": stage.cost.source_mb},
    }  # fmt: skip
    return StagePlan(
        DAG_OP,
        stage.tasks,
        1 if final else stage.partitions,
        tuple(_dependency(dag, edge) for edge in stage.inputs),
        final=final,
        task_params=tuple(dict(own) for own in stage.task_args),
        shared_params={"dag": meta, "args": dict(stage.args)},
    )


def _dependency(dag: JobDag, edge: StageInput) -> Dependency:
    return Dependency(dag.index(edge.stage), KINDS[edge.dependency])  # type: ignore[arg-type]


# ------------------------------------------------------------------ task


class StageTask:
    """The ``testbed.api.DagTask`` a body gets in an agent's worker."""

    def __init__(self, ctx: TaskContext) -> None:
        params = ctx.params
        meta = params["dag"]
        self._ctx = ctx
        self._inputs: list[str] = list(meta["inputs"])
        self.stage: str = meta["stage"]
        self.index = ctx.spec.index
        self.tasks: int = meta["tasks"]
        self.partitions = ctx.spec.partitions
        self.args: dict[str, Any] = {
            **params["args"],
            **{k: v for k, v in params.items() if k not in RESERVED_PARAMS},
        }
        self.scratch: Path = ctx.scratch
        self.budget_bytes = ctx.budget_bytes
        self.final = ctx.spec.final
        self._spools: dict[int, BinaryIO] = {}
        self._pending: dict[int, list[Any]] = {}
        self._out: Any = None

    def inputs(self, stage: str) -> Iterator[Any]:
        if stage not in self._inputs:
            raise WorkloadError(f"stage {self.stage!r} has no input {stage!r}; its inputs are {self._inputs}")
        for frame in self._ctx.input_frames(self._inputs.index(stage)):
            records = msgpack.unpackb(frame, use_list=False)
            self._ctx.metrics.records_in += len(records)
            yield from records

    def lines(self) -> Iterator[str]:
        source = self.args.get("file")
        if source is None:
            raise WorkloadError(
                f"stage {self.stage!r}: task {self.index} has no split (task_args from JobInputs.splits)"
            )
        for chunk in self._ctx.through_input_cache(
            read_lines_range(source["path"], source["start"], source["end"])
        ):
            self._ctx.metrics.bytes_in += len(chunk)
            for line in chunk.decode("utf-8", errors="replace").split("\n"):
                if line:
                    self._ctx.metrics.records_in += 1
                    yield line

    def emit(self, record: Any, partition: int = 0) -> None:
        if self.final:
            raise WorkloadError(
                f"stage {self.stage!r} is the sink: it writes lines (write_line), not records"
            )
        if not 0 <= partition < self.partitions:
            raise WorkloadError(
                f"stage {self.stage!r}: partition {partition} is not in 0..{self.partitions - 1}"
            )
        pending = self._pending.setdefault(partition, [])
        pending.append(record)
        if len(pending) >= RECORDS_PER_FRAME:
            self._spool(partition)

    def write_line(self, line: str) -> None:
        if not self.final:
            raise WorkloadError(f"stage {self.stage!r} is not the sink: it emits records (emit), not lines")
        if self._out is None:
            self._out = open(self._ctx.final_path, "w", encoding="utf-8")  # noqa: SIM115 - closed in finish
        self._out.write(line + "\n")
        self._ctx.metrics.records_out += 1

    def _spool(self, partition: int) -> None:
        records = self._pending.pop(partition, [])
        if not records:
            return
        spool = self._spools.get(partition)
        if spool is None:
            spool = self._spools[partition] = open(self.scratch / f"spool-{partition}", "w+b")  # noqa: SIM115
        try:
            payload = msgpack.packb(records)
        except (TypeError, ValueError) as exc:
            raise WorkloadError(
                f"stage {self.stage!r} emitted a record msgpack cannot carry: {exc}"
            ) from None
        spool.write(len(payload).to_bytes(4, "big") + payload)
        self._ctx.metrics.records_out += len(records)

    def finish(self) -> None:
        """The task's output committed: the part file closed, or the spooled records as its block."""
        if self.final:
            if self._out is None:
                self._ctx.final_path.write_text("")
            else:
                self._out.close()
            return
        for partition in list(self._pending):
            self._spool(partition)
        writer = self._ctx.open_output()
        for partition in sorted(self._spools):
            spool = self._spools[partition]
            spool.seek(0)
            while header := spool.read(4):
                writer.write(partition, spool.read(int.from_bytes(header, "big")))
            spool.close()
        self._ctx.commit_output(writer)


def body_of(path: str) -> Callable[[Any], Any]:
    """The stage body named by its import path (``WorkloadError`` when it cannot be imported)."""
    module, _, name = path.partition(":")
    try:
        body = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise WorkloadError(
            f"stage body {path}: {exc}; is its directory on the agents' PYTHONPATH (policy.plugin_path)?"
        ) from None
    if not callable(body):
        raise WorkloadError(f"stage body {path} is not a function")
    return body


def dag_task(ctx: TaskContext) -> None:
    task = StageTask(ctx)
    body = body_of(ctx.params["dag"]["body"])
    try:
        body(task)
    except (MemoryError, FetchFailed, WorkloadError):
        raise
    except Exception as exc:
        raise WorkloadError(
            f"stage {task.stage!r}: {body.__name__}() raised {type(exc).__name__}: {exc}"
        ) from exc
    task.finish()


OPERATIONS: dict[str, TaskFunction] = {DAG_OP: dag_task}
"""Every stage of a stage-DAG job runs as ``dag.task``, which calls the stage's body."""
COMBINERS: dict[str, Combiner] = {}
"""A stage body declares no combiner (Pado's partial aggregation does not apply to DAG stages)."""
