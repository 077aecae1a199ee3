"""Musketeer's intermediate representation (Gog's dissertation, section 3.3): a workflow is
a tree of dataflow operators, each with the schema of the rows it produces.

Map-side operators (SELECT, PROJECT, MAP) work row by row; the others shuffle on a key
(``testbed.workflows.lowering`` says which). Scalar expressions are SQL text (``testbed.workflows.exprs``);
WHILE is unrolled when built (``Workflow.loop``), so the tree holds its rounds."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from testbed.workflows.exprs import PlanError, column_index, compile_expr
from testbed.workflows.types import FLOAT, INT, ColType, Column, Schema

AggFunc = Literal["sum", "count", "min", "max", "avg"]
AGG_FUNCS: tuple[AggFunc, ...] = ("sum", "count", "min", "max", "avg")
SetKind = Literal["union", "union_all", "intersect", "difference"]


@dataclass(frozen=True, eq=False)
class Op:
    label: str = field(default="", kw_only=True)
    """Where the operator came from (a SQL clause, a loop's round), shown by ``testbed plan``."""

    @property
    def children(self) -> tuple[Op, ...]:
        return ()

    @property
    def name(self) -> str:
        return type(self).__name__.upper()

    def schema(self) -> Schema:
        """The rows' columns (computed once: a WHILE's rounds share their input)."""
        cached = self.__dict__.get("_schema")
        if cached is None:
            cached = self._schema()
            object.__setattr__(self, "_schema", cached)
        return cached

    def _schema(self) -> Schema:
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class Scan(Op):
    """A table's rows (its files, split by bytes into tasks), ``keep`` of its columns."""

    table: str
    alias: str
    input: str
    format: Literal["tbl", "csv"]
    columns: Schema
    keep: tuple[int, ...] | None = None
    splits: int | None = None

    def _schema(self) -> Schema:
        kept = range(len(self.columns)) if self.keep is None else self.keep
        return tuple(Column(f"{self.alias}.{self.columns[i].name}", self.columns[i].type) for i in kept)


@dataclass(frozen=True, eq=False)
class Select(Op):
    child: Op
    predicate: str

    @property
    def children(self) -> tuple[Op, ...]:
        return (self.child,)

    def _schema(self) -> Schema:
        compile_expr(self.predicate, self.child.schema())
        return self.child.schema()


@dataclass(frozen=True, eq=False)
class Project(Op):
    child: Op
    exprs: tuple[tuple[str, str], ...]
    """(output name, SQL expression over the child's columns)."""

    @property
    def children(self) -> tuple[Op, ...]:
        return (self.child,)

    def _schema(self) -> Schema:
        child = self.child.schema()
        return tuple(Column(name, compile_expr(sql, child)[1]) for name, sql in self.exprs)


@dataclass(frozen=True, eq=False)
class Map(Op):
    """A row UDF (``module:function``, taking and returning a tuple) with a declared output."""

    child: Op
    udf: str
    output: Schema

    @property
    def children(self) -> tuple[Op, ...]:
        return (self.child,)

    def _schema(self) -> Schema:
        return self.output


@dataclass(frozen=True, eq=False)
class Join(Op):
    """An equi-join: ``left_keys[i]`` of the left equals ``right_keys[i]`` of the right."""

    left: Op
    right: Op
    left_keys: tuple[str, ...]
    right_keys: tuple[str, ...]
    kind: Literal["inner", "left"] = "inner"

    @property
    def children(self) -> tuple[Op, ...]:
        return (self.left, self.right)

    def _schema(self) -> Schema:
        left, right = self.left.schema(), self.right.schema()
        for lk, rk in zip(self.left_keys, self.right_keys, strict=True):
            lt, rt = left[column_index(left, "", lk)].type, right[column_index(right, "", rk)].type
            if lt != rt:
                raise PlanError(
                    f"join key {lk} is {_a(lt)} but {rk} is {_a(rt)}: cast one side to the other's type"
                )
        names = {c.name for c in left}
        clash = [c.name for c in right if c.name in names]
        if clash:
            raise PlanError(f"both sides of the join have the columns {', '.join(clash)}: project one side")
        return left + right


@dataclass(frozen=True, eq=False)
class Agg(Op):
    """GROUP BY ``keys`` (columns of the child); each aggregate ``(name, func, column)``
    (``column`` None for count(*))."""

    child: Op
    keys: tuple[str, ...]
    aggs: tuple[tuple[str, AggFunc, str | None], ...]

    @property
    def children(self) -> tuple[Op, ...]:
        return (self.child,)

    @property
    def name(self) -> str:
        return "AGG"

    def _schema(self) -> Schema:
        child = self.child.schema()
        keys = tuple(child[column_index(child, "", k)] for k in self.keys)
        return keys + tuple(Column(name, agg_type(func, child, arg)) for name, func, arg in self.aggs)


def agg_type(func: AggFunc, schema: Schema, arg: str | None) -> ColType:
    if func == "count":
        return INT
    if arg is None:
        raise PlanError(f"{func}() needs a column")
    kind = schema[column_index(schema, "", arg)].type
    if func == "avg":
        return FLOAT
    if func == "sum" and not kind.numeric:
        raise PlanError(f"sum({arg}) of a {kind}")
    return kind


@dataclass(frozen=True, eq=False)
class Distinct(Op):
    child: Op

    @property
    def children(self) -> tuple[Op, ...]:
        return (self.child,)

    def _schema(self) -> Schema:
        return self.child.schema()


@dataclass(frozen=True, eq=False)
class SetOp(Op):
    """UNION (ALL), INTERSECT, DIFFERENCE of two inputs of the same column types."""

    left: Op
    right: Op
    kind: SetKind

    @property
    def children(self) -> tuple[Op, ...]:
        return (self.left, self.right)

    @property
    def name(self) -> str:
        return self.kind.upper()

    def _schema(self) -> Schema:
        left, right = self.left.schema(), self.right.schema()
        if [c.type for c in left] != [c.type for c in right]:
            raise PlanError(
                f"{self.kind}: the inputs' column types differ ({', '.join(str(c.type) for c in left)} "
                f"vs {', '.join(str(c.type) for c in right)})"
            )
        return left


@dataclass(frozen=True, eq=False)
class Sort(Op):
    """ORDER BY ``keys`` ((column, descending)), then at most ``limit`` rows."""

    child: Op
    keys: tuple[tuple[str, bool], ...]
    limit: int | None = None

    @property
    def children(self) -> tuple[Op, ...]:
        return (self.child,)

    def _schema(self) -> Schema:
        child = self.child.schema()
        for key, _ in self.keys:
            column_index(child, "", key)
        return child


@dataclass(frozen=True, eq=False)
class Choose(Op):
    """A WHILE round with a stopping condition: ``keep`` (the state before the round) where
    ``predicate`` holds on the one row of ``flag`` (a keyless AGG of that state), else
    ``change`` (the round's output). The DAG is static, so a round after the condition held
    still runs its body; its output is dropped and the state passes through unchanged."""

    keep: Op
    change: Op
    flag: Op
    predicate: str

    @property
    def children(self) -> tuple[Op, ...]:
        return (self.keep, self.change, self.flag)

    def _schema(self) -> Schema:
        keep, change = self.keep.schema(), self.change.schema()
        if [c.type for c in keep] != [c.type for c in change]:
            raise PlanError("WHILE: a round's output has other column types than its input")
        if not isinstance(self.flag, Agg) or self.flag.keys:
            raise PlanError("WHILE until: the condition must be on a keyless aggregate of the state")
        compile_expr(self.predicate, self.flag.schema())
        return keep


def _a(kind: ColType) -> str:
    return f"{'an' if str(kind)[0] in 'aeiou' else 'a'} {kind}"


def walk(op: Op, seen: set[int] | None = None) -> Iterator[Op]:
    """Every operator of the DAG once, children first."""
    seen = set() if seen is None else seen
    if id(op) in seen:
        return
    seen.add(id(op))
    for child in op.children:
        yield from walk(child, seen)
    yield op


def consumers(root: Op) -> dict[int, int]:
    """How many operators read each operator (by ``id``): more than one is a shared input."""
    counts: dict[int, int] = {}
    for op in walk(root):
        for child in op.children:
            counts[id(child)] = counts.get(id(child), 0) + 1
    return counts


def check(op: Op) -> Schema:
    """The workflow's output schema, every operator's types checked (PlanError otherwise)."""
    for node in walk(op):
        node.schema()
    return op.schema()
