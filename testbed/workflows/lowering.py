"""The IR lowered onto a job's stage DAG with Musketeer's merging rules (Gog's
dissertation, section 3.3.2, Table 3.1).

A stage runs a chain of operators on its partition. Map-side operators (SELECT, PROJECT,
MAP) fuse with whatever stage produces their input. A shuffle operator (JOIN, AGG,
DISTINCT, the set operators, SORT) starts a stage of its own, reading its inputs partitioned
on its key, unless its input's stage is already partitioned on that key (a subset of it:
rows of one group, or of one join key, are then in one partition), in which case it joins
that stage. An AGG or DISTINCT that starts a stage aggregates partially in the stage before
(map-side, before the shuffle), and a SORT with LIMIT keeps each producer's top rows.

``merge=False`` turns the rules off (Musketeer's unmerged baseline): every operator is a
stage of its own, a map-side one reading its parent one-to-one (a narrow stage), and no
partial aggregation."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from testbed.plan import Dependency, JobPlan, StagePlan
from testbed.workflows import ir
from testbed.workflows.exprs import column_index, parse_expr
from testbed.workflows.types import Schema, schema_to_json

STAGE_OP = "workflow.stage"
Splitter = Callable[[ir.Scan], list[dict[str, Any]]]
"""A table's tasks: one parameter dict (its ``split``) each (the workload reads the files)."""


@dataclass
class Workflow:
    """A workflow to run as one job: its operator tree and how it is cut into tasks."""

    root: ir.Op
    partitions: int = 4
    """Tasks of every shuffle stage (a keyless AGG and a SORT gather into one)."""
    merge: bool = True


@dataclass
class _Fragment:
    """A stage being built: its chain so far and the schema of the rows it ends with."""

    ops: list[dict[str, Any]]
    schema: Schema
    tasks: int
    deps: list[Dependency] = field(default_factory=list)
    splits: list[dict[str, Any]] | None = None
    keys: list[tuple[str, ...]] = field(default_factory=list)
    """The column lists the rows are hash-partitioned on (alternatives: a join's two sides)."""
    fused: list[str] = field(default_factory=list)


@dataclass
class _Lowering:
    workflow: Workflow
    splitter: Splitter
    stages: list[StagePlan] = field(default_factory=list)
    shared: dict[int, int] = field(default_factory=dict)
    """The stage of each operator read by several (a WHILE's state, a table read twice)."""
    readers: dict[int, int] = field(default_factory=dict)

    @property
    def merge(self) -> bool:
        return self.workflow.merge

    def close(self, f: _Fragment, out: dict[str, Any], partitions: int = 1, final: bool = False) -> int:
        params = {"ops": f.ops, "out": out, "fused": f.fused}
        task_params = tuple({"split": s} for s in f.splits) if f.splits else ()
        stage = StagePlan(
            STAGE_OP,
            f.tasks,
            partitions,
            tuple(f.deps),
            final=final,
            task_params=task_params,
            shared_params=params,
        )
        self.stages.append(stage)
        return len(self.stages) - 1

    def shuffled(self, f: _Fragment, keys: tuple[str, ...], partitions: int, **extra: Any) -> int:
        """Close ``f``, its rows partitioned on ``keys`` into ``partitions``."""
        indices = [column_index(f.schema, "", k) for k in keys]
        out = {"kind": "shuffle", "key": indices, "key_names": [f.schema[i].name for i in indices]}
        out.update(partitions=partitions, **{k: v for k, v in extra.items() if v is not None})
        if "combine" in out or "topk" in out:
            f.fused.append("partial " + ("AGG" if "combine" in out else "SORT"))
        return self.close(f, out, partitions)

    def reader(self, stage: int, schema: Schema, tasks: int, kind: str = "shuffle") -> _Fragment:
        return _Fragment([{"op": "read", "dep": 0}], schema, tasks, [Dependency(stage, kind)])  # type: ignore[arg-type]

    # ------------------------------------------------------------------ operators

    def lower(self, op: ir.Op) -> _Fragment:
        """``op``'s fragment; an operator several read is a stage of its own, its rows
        partitioned on all its columns, that each reader reads (computed once)."""
        if self.readers.get(id(op), 0) <= 1:
            return self.lower_one(op)
        every = tuple(c.name for c in op.schema())
        if id(op) not in self.shared:
            self.shared[id(op)] = self.shuffled(self.lower_one(op), every, self.workflow.partitions)
        f = self.reader(self.shared[id(op)], op.schema(), self.workflow.partitions)
        f.keys = [every]
        return f

    def lower_one(self, op: ir.Op) -> _Fragment:
        if isinstance(op, ir.Scan):
            return self.scan(op)
        if isinstance(op, ir.Select | ir.Project | ir.Map):
            return self.map_side(op)
        if isinstance(op, ir.Agg | ir.Distinct):
            return self.aggregate(op)
        if isinstance(op, ir.Join):
            return self.join(op)
        if isinstance(op, ir.SetOp):
            return self.set_operation(op)
        if isinstance(op, ir.Sort):
            return self.sort(op)
        if isinstance(op, ir.Choose):
            return self.choose(op)
        raise TypeError(f"no lowering for {type(op).__name__}")

    def scan(self, op: ir.Scan) -> _Fragment:
        splits = self.splitter(op)
        spec = {"op": "scan", "format": op.format, "columns": schema_to_json(op.columns), "keep": op.keep}
        return _Fragment([spec], op.schema(), len(splits), splits=splits, fused=[describe(op)])

    def map_side(self, op: ir.Select | ir.Project | ir.Map) -> _Fragment:
        f = self.lower(op.child)
        if not self.merge:
            keys = f.keys
            f = self.reader(self.close(f, {"kind": "narrow"}), f.schema, f.tasks, "narrow")
            f.keys = keys
        schema = schema_to_json(f.schema)
        if isinstance(op, ir.Select):
            f.ops.append({"op": "select", "schema": schema, "predicate": op.predicate})
        elif isinstance(op, ir.Project):
            f.ops.append({"op": "project", "schema": schema, "exprs": [sql for _, sql in op.exprs]})
            f.keys = _renamed_keys(f, op)
        else:
            f.ops.append({"op": "map", "udf": op.udf, "width": len(op.output)})
            f.keys = []
        f.schema = op.schema()
        f.fused.append(describe(op))
        return f

    def colocated(self, f: _Fragment, keys: tuple[str, ...]) -> bool:
        """Whether ``f``'s rows are already partitioned on (a subset of) ``keys``."""
        names = {f.schema[column_index(f.schema, "", k)].name for k in keys}
        return self.merge and any(alt and set(alt) <= names for alt in f.keys)

    def aggregate(self, op: ir.Agg | ir.Distinct) -> _Fragment:
        f = self.lower(op.child)
        agg = _agg_spec(op, f.schema)
        keys = tuple(c.name for c in f.schema) if isinstance(op, ir.Distinct) else op.keys
        if self.colocated(f, keys):
            f.ops.append({"op": "agg", "mode": "complete", "spec": agg})
        else:
            partitions = self.workflow.partitions if keys else 1
            combine = agg if self.merge else None
            stage = self.shuffled(f, keys, partitions, combine=combine)
            f = self.reader(stage, f.schema, partitions)
            f.ops.append({"op": "agg", "mode": "merge" if combine else "complete", "spec": agg})
            f.keys = [tuple(f.schema[column_index(f.schema, "", k)].name for k in keys)]
        f.schema = op.schema()
        f.fused.append(describe(op))
        return f

    def join(self, op: ir.Join) -> _Fragment:
        op.schema()  # the key types checked before anything is planned
        left, right = self.lower(op.left), self.lower(op.right)
        spec = {"kind": op.kind, "right_width": len(right.schema)}
        partitions = self.workflow.partitions
        if self.colocated(left, op.left_keys) and left.tasks == partitions:
            f, other, other_keys, current = left, right, op.right_keys, "left"
        elif op.kind == "inner" and self.colocated(right, op.right_keys) and right.tasks == partitions:
            f, other, other_keys, current = right, left, op.left_keys, "right"
        else:
            f = self.reader(self.shuffled(left, op.left_keys, partitions), left.schema, partitions)
            other, other_keys, current = right, op.right_keys, "left"
        f.deps.append(Dependency(self.shuffled(other, other_keys, partitions), "shuffle"))
        left_schema, right_schema = (f.schema, other.schema)
        if current == "right":
            left_schema, right_schema = right_schema, left_schema
        spec.update(
            dep=len(f.deps) - 1,
            current=current,
            left=[column_index(left_schema, "", k) for k in op.left_keys],
            right=[column_index(right_schema, "", k) for k in op.right_keys],
        )
        f.ops.append({"op": "join", "spec": spec})
        f.keys = [op.left_keys, op.right_keys] if op.kind == "inner" else [op.left_keys]
        f.schema = op.schema()
        f.fused.append(describe(op))
        return f

    def set_operation(self, op: ir.SetOp) -> _Fragment:
        schema = op.schema()
        left, right = self.lower(op.left), self.lower(op.right)
        partitions = self.workflow.partitions
        every = tuple(c.name for c in left.schema)
        f = self.reader(self.shuffled(left, every, partitions), left.schema, partitions)
        right_stage = self.shuffled(right, tuple(c.name for c in right.schema), partitions)
        f.deps.append(Dependency(right_stage, "shuffle"))
        f.ops.append({"op": "set", "kind": op.kind, "dep": 1})
        f.keys, f.schema = [every], schema
        f.fused.append(describe(op))
        return f

    def sort(self, op: ir.Sort) -> _Fragment:
        f = self.lower(op.child)
        spec = {"keys": [[column_index(f.schema, "", k), desc] for k, desc in op.keys], "limit": op.limit}
        topk = spec if self.merge and op.limit is not None else None
        f = self.reader(self.shuffled(f, (), 1, topk=topk), f.schema, 1)
        f.ops.append({"op": "sort", "spec": spec})
        f.schema = op.schema()
        f.fused.append(describe(op))
        return f


    def choose(self, op: ir.Choose) -> _Fragment:
        schema = op.schema()
        keep, change, flag = self.lower(op.keep), self.lower(op.change), self.lower(op.flag)
        partitions = self.workflow.partitions
        every = tuple(c.name for c in keep.schema)
        f = self.reader(self.shuffled(keep, every, partitions), keep.schema, partitions)
        changed = self.shuffled(change, tuple(c.name for c in change.schema), partitions)
        flagged = self.close(flag, {"kind": "narrow"})
        f.deps += [Dependency(changed, "shuffle"), Dependency(flagged, "broadcast")]
        flag_schema = schema_to_json(flag.schema)
        f.ops.append({"op": "choose", "dep": 1, "flag": 2, "predicate": op.predicate, "schema": flag_schema})
        f.keys, f.schema = [every], schema
        f.fused.append(describe(op))
        return f


def _renamed_keys(f: _Fragment, op: ir.Project) -> list[tuple[str, ...]]:
    """The partitioning keys that survive a projection (a key column kept, maybe renamed)."""
    renames: dict[str, str] = {}
    for name, sql in op.exprs:
        node = parse_expr(sql)
        if node.key == "column":
            renames.setdefault(f.schema[column_index(f.schema, node.table, node.name)].name, name)
    return [tuple(renames[k] for k in alt) for alt in f.keys if all(k in renames for k in alt)]


def _agg_spec(op: ir.Agg | ir.Distinct, schema: Schema) -> dict[str, Any]:
    if isinstance(op, ir.Distinct):
        return {"keys": list(range(len(schema))), "aggs": []}
    aggs = []
    for _, func, arg in op.aggs:
        index = None if arg is None else column_index(schema, "", arg)
        scale = schema[index].type.scale if index is not None else 0
        aggs.append([func, index, scale])
    return {"keys": [column_index(schema, "", k) for k in op.keys], "aggs": aggs}


def describe(op: ir.Op) -> str:
    """One operator as ``testbed plan`` shows it."""
    if op.label:
        return f"{op.name} {op.label}"
    if isinstance(op, ir.Scan):
        return f"SCAN {op.table}" + (f" AS {op.alias}" if op.alias != op.table else "")
    if isinstance(op, ir.Join):
        keys = ", ".join(f"{a} = {b}" for a, b in zip(op.left_keys, op.right_keys, strict=True))
        return f"{'LEFT ' if op.kind == 'left' else ''}JOIN on {keys}"
    if isinstance(op, ir.Choose):
        return f"WHILE-UNTIL {op.predicate}"
    if isinstance(op, ir.Agg):
        aggs = ", ".join(f"{func}({arg or '*'})" for _, func, arg in op.aggs)
        return f"AGG {aggs}" + (f" by {', '.join(op.keys)}" if op.keys else "")
    if isinstance(op, ir.Sort):
        keys = ", ".join(k + (" desc" if d else "") for k, d in op.keys)
        return f"SORT by {keys}" + (f" limit {op.limit}" if op.limit is not None else "")
    return op.name


def lower(workflow: Workflow, splitter: Splitter) -> JobPlan:
    """The workflow's stage DAG (types checked first: a PlanError names the mismatch)."""
    schema = ir.check(workflow.root)
    lowering = _Lowering(workflow, splitter, readers=ir.consumers(workflow.root))
    f = lowering.lower(workflow.root)
    lowering.close(f, {"kind": "final", "schema": schema_to_json(schema)}, final=True)
    return JobPlan("sql", tuple(lowering.stages))
