"""The Python builder of workflows, for what SQL cannot say: row UDFs (MAP) and WHILE.

>>> edges = table("edges", "edges.tbl", {"src": "int", "dst": "int"})
>>> out = edges.group_by("edges.src").agg(n=("count", None)).sort("-n", limit=10)

Column names are the SQL expressions' (a table's columns are ``<table>.<column>``, what
``select``, ``agg`` and ``map`` name are bare); expressions are SQL text. A UDF is a
top-level function (``module:function`` or the function itself) that the agents' workers
import: it takes a row tuple and returns one, of the declared columns."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, Literal

from testbed.workflows import ir
from testbed.workflows.lowering import Workflow
from testbed.workflows.types import Column, parse_type


def table(
    name: str,
    input: str,
    schema: dict[str, str],
    format: Literal["tbl", "csv"] = "tbl",
    splits: int | None = None,
) -> Flow:
    """A table's files (a path or a glob) with its columns' types, in the files' order."""
    columns = tuple(Column(column, parse_type(kind)) for column, kind in schema.items())
    return Flow(ir.Scan(name, name, input, format, columns, None, splits))


class Flow:
    """A workflow under construction: each method returns the flow after one more operator."""

    def __init__(self, op: ir.Op) -> None:
        self.op = op

    @property
    def columns(self) -> list[str]:
        return [c.name for c in self.op.schema()]

    def where(self, predicate: str) -> Flow:
        return Flow(ir.Select(self.op, predicate))

    def select(self, *columns: str, **exprs: str) -> Flow:
        """Keep ``columns`` (named as they are) and compute ``exprs`` (name = SQL)."""
        kept = tuple((c.rsplit(".", 1)[-1], _quoted(c)) for c in columns)
        return Flow(ir.Project(self.op, kept + tuple(exprs.items())))

    def map(self, udf: str | Callable[..., Any], output: dict[str, str]) -> Flow:
        name = udf if isinstance(udf, str) else f"{udf.__module__}:{udf.__qualname__}"
        schema = tuple(Column(column, parse_type(kind)) for column, kind in output.items())
        return Flow(ir.Map(self.op, name, schema))

    def join(self, other: Flow, on: dict[str, str], how: Literal["inner", "left"] = "inner") -> Flow:
        """Rows whose ``on`` columns (this flow's: other's) are equal."""
        return Flow(ir.Join(self.op, other.op, tuple(on), tuple(on.values()), how))

    def group_by(self, *keys: str) -> _Grouped:
        return _Grouped(self, keys)

    def agg(self, **aggs: tuple[ir.AggFunc, str | None]) -> Flow:
        """A keyless aggregate (one row)."""
        return _Grouped(self, ()).agg(**aggs)

    def distinct(self) -> Flow:
        return Flow(ir.Distinct(self.op))

    def union(self, other: Flow, all: bool = False) -> Flow:
        return Flow(ir.SetOp(self.op, other.op, "union_all" if all else "union"))

    def intersect(self, other: Flow) -> Flow:
        return Flow(ir.SetOp(self.op, other.op, "intersect"))

    def difference(self, other: Flow) -> Flow:
        return Flow(ir.SetOp(self.op, other.op, "difference"))

    def sort(self, *keys: str, limit: int | None = None) -> Flow:
        """ORDER BY ``keys`` (``-name`` descending), then at most ``limit`` rows."""
        return Flow(ir.Sort(self.op, tuple((k.lstrip("-"), k.startswith("-")) for k in keys), limit))

    def loop(
        self,
        body: Callable[[Flow], Flow],
        rounds: int,
        until: tuple[dict[str, tuple[ir.AggFunc, str | None]], str] | None = None,
    ) -> Flow:
        """WHILE: ``body`` applied ``rounds`` times, or, with ``until = (aggregates, predicate)``,
        at most ``rounds`` times, stopping once ``predicate`` holds on the aggregates of the
        state a round produced (e.g. ``({"delta": ("max", "change")}, "delta < 0.001")``)."""
        if rounds < 1:
            raise ValueError("a loop needs at least one round")
        state = self
        for number in range(rounds):
            step = body(state)
            if until is None or number == 0:
                state = Flow(dataclasses.replace(step.op, label=step.op.label or f"round {number + 1}"))
                continue
            aggs, predicate = until
            flag = state.agg(**aggs)
            state = Flow(ir.Choose(state.op, step.op, flag.op, predicate, label=f"round {number + 1}"))
        return state

    def workflow(self, partitions: int = 4, merge: bool = True) -> Workflow:
        return Workflow(self.op, partitions, merge)


class _Grouped:
    def __init__(self, flow: Flow, keys: tuple[str, ...]) -> None:
        self.flow, self.keys = flow, keys

    def agg(self, **aggs: tuple[ir.AggFunc, str | None]) -> Flow:
        """``name=(func, column)``: func one of sum, count, min, max, avg; column None for
        count(*)."""
        for name, (func, _) in aggs.items():
            if func not in ir.AGG_FUNCS:
                raise ValueError(f"{name}: {func!r} is not one of {', '.join(ir.AGG_FUNCS)}")
        return Flow(ir.Agg(self.flow.op, self.keys, tuple((n, f, c) for n, (f, c) in aggs.items())))


def _quoted(name: str) -> str:
    return ".".join(f'"{part}"' for part in name.split("."))
