"""The SQL front-end: a query parsed and optimised by sqlglot (predicate pushdown,
projection pruning, subqueries unnested into joins) and translated into the operator IR.

Supported: SELECT with FROM, inner and left equi-JOINs, WHERE, GROUP BY with sum, count,
min, max, avg, HAVING, DISTINCT, ORDER BY, LIMIT, WITH, UNION [ALL], INTERSECT, EXCEPT, and
subqueries sqlglot unnests (TPC-H Q17's correlated one among them). Refused (``SqlError``,
naming the construct and its line and column): window functions, a subquery left
correlated, a join without an equality, COUNT(DISTINCT ...)."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Literal

import sqlglot
from sqlglot import exp
from sqlglot.optimizer import optimize

from testbed.workflows import ir
from testbed.workflows.exprs import PlanError
from testbed.workflows.types import ColType, Schema

_AGGS: dict[type, ir.AggFunc] = {
    exp.Sum: "sum",
    exp.Count: "count",
    exp.Min: "min",
    exp.Max: "max",
    exp.Avg: "avg",
}


class SqlError(PlanError):
    """SQL the front-end does not take; the message names the construct and where it is."""


@dataclass(frozen=True)
class Table:
    input: str
    format: Literal["tbl", "csv"]
    schema: Schema
    splits: int | None = None


_QUERY: contextvars.ContextVar[str] = contextvars.ContextVar("query", default="")
"""The text being translated, for the line and column where a construct starts."""


def position(node: exp.Expression) -> str:
    """Where the node's first token starts in the query (sqlglot's meta has its end)."""
    text = _QUERY.get()
    for part in node.walk():
        meta = part.meta
        if "start" in meta and text:
            start = meta["start"]
            return f"line {text.count(chr(10), 0, start) + 1}, column {start - text.rfind(chr(10), 0, start)}"
    return "somewhere in the query"


def _sqlglot_type(kind: ColType) -> str:
    if kind.kind == "decimal":
        return f"decimal(18,{kind.scale})"
    return {"int": "bigint", "float": "double", "string": "varchar", "date": "date", "bool": "boolean"}[
        kind.kind
    ]


def parse(query: str, tables: dict[str, Table]) -> exp.Expression:
    """The query parsed, checked for what the front-end refuses, and optimised."""
    try:
        tree = sqlglot.parse_one(query, dialect="duckdb")
    except sqlglot.errors.ParseError as err:
        first = err.errors[0] if err.errors else {}
        raise SqlError(
            f"the query does not parse at line {first.get('line')}, column {first.get('col')}: "
            f"{str(first.get('description', err)).split(' but got ')[0]}"
        ) from None
    for window in tree.find_all(exp.Window):
        raise SqlError(
            f"window functions are not supported ({window.sql(dialect='duckdb')[:60]}, {position(window)})"
        )
    unknown = sorted({t.name for t in tree.find_all(exp.Table)} - set(tables) - _cte_names(tree))
    if unknown:
        raise SqlError(f"the query reads {', '.join(unknown)}, which tables: does not define")
    schema = {name: {c.name: _sqlglot_type(c.type) for c in t.schema} for name, t in tables.items()}
    try:
        return optimize(tree, schema=schema, dialect="duckdb")
    except sqlglot.errors.OptimizeError as err:
        raise SqlError(f"the query does not resolve: {err}") from None


def _cte_names(tree: exp.Expression) -> set[str]:
    return {cte.alias for cte in tree.find_all(exp.CTE)}


def from_sql(query: str, tables: dict[str, Table]) -> ir.Op:
    """The query's operator tree (SqlError: not supported; PlanError: types do not match)."""
    token = _QUERY.set(query)
    try:
        return _Translator(tables).query(parse(query, tables))
    finally:
        _QUERY.reset(token)


class _Translator:
    def __init__(self, tables: dict[str, Table]) -> None:
        self.tables = tables
        self.ctes: dict[str, ir.Op] = {}

    def query(self, node: exp.Expression) -> ir.Op:
        with_ = node.args.get("with_") or node.args.get("with")
        if with_ is not None:
            for cte in with_.expressions:
                self.ctes[cte.alias] = self.query(cte.this)
        if isinstance(node, exp.Union | exp.Intersect | exp.Except):
            return self.set_operation(node)
        if isinstance(node, exp.Subquery):
            return self.query(node.this)
        if not isinstance(node, exp.Select):
            raise SqlError(f"{type(node).__name__} is not supported ({position(node)})")
        return _SelectTranslator(self, node).build()

    def set_operation(self, node: exp.Union | exp.Intersect | exp.Except) -> ir.Op:
        left, right = self.query(node.this), self.query(node.expression)
        distinct = node.args.get("distinct", True)
        kind: ir.SetKind
        if isinstance(node, exp.Union):
            kind = "union" if distinct else "union_all"
        else:
            kind = "intersect" if isinstance(node, exp.Intersect) else "difference"
        names = [c.name for c in left.schema()]
        right = ir.Project(
            right, tuple((n, _col(c.name)) for n, c in zip(names, right.schema(), strict=True))
        )
        op: ir.Op = ir.SetOp(left, right, kind)
        return _order_limit(op, node)

    def source(self, node: exp.Expression, needed: dict[str, list[str]]) -> ir.Op:
        alias = node.alias_or_name
        if (isinstance(node, exp.Table) and node.name in self.ctes) or isinstance(node, exp.Subquery):
            inner = self.ctes[node.name] if isinstance(node, exp.Table) else self.query(node.this)
            return ir.Project(inner, tuple((f"{alias}.{c.name}", _col(c.name)) for c in inner.schema()))
        if not isinstance(node, exp.Table):
            raise SqlError(f"{type(node).__name__} in FROM is not supported ({position(node)})")
        table = self.tables[node.name]
        names = [c.name for c in table.schema]
        keep = tuple(sorted({names.index(n) for n in needed.get(alias, []) if n in names})) or (0,)
        return ir.Scan(node.name, alias, table.input, table.format, table.schema, keep, table.splits)


def _col(name: str, table: str = "") -> str:
    return exp.column(name, table=table or None, quoted=True).sql(dialect="duckdb")


def _conjuncts(node: exp.Expression | None) -> list[exp.Expression]:
    if node is None:
        return []
    return list(node.flatten()) if isinstance(node, exp.And) else [node]


def _aliases(node: exp.Expression) -> set[str]:
    return {c.table for c in node.find_all(exp.Column)}


class _SelectTranslator:
    def __init__(self, outer: _Translator, select: exp.Select) -> None:
        self.outer, self.select = outer, select

    def build(self) -> ir.Op:
        select = self.select
        for sub in select.find_all(exp.Subquery, exp.Exists):
            if sub is not select:
                raise SqlError(f"a correlated subquery is not supported ({position(sub)})")
        op = self.joins()
        op = self.aggregate(op)
        if select.args.get("distinct"):
            op = ir.Distinct(op)
        return _order_limit(op, select)

    def needed(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for column in self.select.find_all(exp.Column):
            out.setdefault(column.table, []).append(column.name)
        return out

    def joins(self) -> ir.Op:
        select, needed = self.select, self.needed()
        from_ = select.args.get("from_") or select.args.get("from")
        clause = select.args.get("where")
        where = _conjuncts(clause.this if clause is not None else None)
        first = from_.this
        acc, seen = self._filtered(first, needed, where, pushable=True), {first.alias_or_name}
        for join in select.args.get("joins") or []:
            acc, residual = self._join(acc, seen, join, needed, where)
            seen.add(join.this.alias_or_name)
            acc = _filter(acc, residual)
        return _filter(acc, where)

    def _filtered(
        self, node: exp.Expression, needed: dict[str, list[str]], where: list[exp.Expression], pushable: bool
    ) -> ir.Op:
        """A source with the WHERE conjuncts that read only it pushed onto it."""
        alias = node.alias_or_name
        op = self.outer.source(node, needed)
        if not pushable:
            return op
        mine = [c for c in where if _aliases(c) == {alias}]
        for c in mine:
            where.remove(c)
        return _filter(op, mine)

    def _join(
        self,
        acc: ir.Op,
        seen: set[str],
        join: exp.Join,
        needed: dict[str, list[str]],
        where: list[exp.Expression],
    ) -> tuple[ir.Op, list[exp.Expression]]:
        side = (join.side or "").lower()
        if side not in ("", "left") or (
            (join.kind or "").lower() in ("cross", "full", "outer") and side != "left"
        ):
            raise SqlError(f"{(side or join.kind).upper()} JOIN is not supported ({position(join)})")
        kind: Literal["inner", "left"] = "left" if side == "left" else "inner"
        alias = join.this.alias_or_name
        right = self._filtered(join.this, needed, where, pushable=kind == "inner")
        left_keys, right_keys, residual, right_only = [], [], [], []
        for c in _conjuncts(join.args.get("on")):
            refs = _aliases(c)
            if (
                isinstance(c, exp.EQ)
                and all(isinstance(s, exp.Column) for s in (c.this, c.expression))
                and (
                    {c.this.table, c.expression.table} & {alias} and len(refs) == 2 and refs - {alias} <= seen
                )
            ):
                mine, theirs = (c.this, c.expression) if c.this.table == alias else (c.expression, c.this)
                left_keys.append(f"{theirs.table}.{theirs.name}")
                right_keys.append(f"{alias}.{mine.name}")
            elif refs == {alias}:
                right_only.append(c)
            elif kind == "inner":
                residual.append(c)
            else:
                raise SqlError(
                    f"a LEFT JOIN's ON may hold only equalities and the right side's filters ({position(c)})"
                )
        if not left_keys:
            raise SqlError(
                f"a join without an equality between its two sides is not supported ({position(join)})"
            )
        right = _filter(right, right_only)
        return ir.Join(acc, right, tuple(left_keys), tuple(right_keys), kind), residual

    def aggregate(self, op: ir.Op) -> ir.Op:
        select = self.select
        group = select.args.get("group")
        keys = list(group.expressions) if group else []
        outputs = list(select.expressions)
        having = select.args.get("having")
        calls = [
            a
            for e in [*outputs, having.this if having else None]
            if e is not None
            for a in e.find_all(exp.AggFunc)
        ]
        if not keys and not calls:
            return ir.Project(
                op, tuple((e.alias_or_name, e.unalias().sql(dialect="duckdb")) for e in outputs)
            )
        pre, aggs, replace = [], [], {}
        for i, key in enumerate(keys):
            pre.append((f"_k{i}", key.sql(dialect="duckdb")))
            replace[key] = f"_k{i}"
        for call in calls:
            if call in replace:
                continue
            func = _AGGS.get(type(call))
            if func is None or isinstance(call.this, exp.Distinct):
                raise SqlError(
                    f"the aggregate {call.sql(dialect='duckdb')} is not supported ({position(call)})"
                )
            j = len(aggs)
            arg = None
            if not isinstance(call.this, exp.Star):
                pre.append((f"_a{j}", call.this.sql(dialect="duckdb")))
                arg = f"_a{j}"
            aggs.append((f"_g{j}", func, arg))
            replace[call] = f"_g{j}"
        agg: ir.Op = ir.Agg(
            ir.Project(op, tuple(pre)), tuple(f"_k{i}" for i in range(len(keys))), tuple(aggs)
        )
        if having is not None:
            agg = ir.Select(agg, _substitute(having.this, replace))
        return ir.Project(agg, tuple((e.alias_or_name, _substitute(e.unalias(), replace)) for e in outputs))


def _substitute(node: exp.Expression, replace: dict[exp.Expression, str]) -> str:
    def swap(n: exp.Expression) -> exp.Expression:
        return exp.column(replace[n], quoted=True) if n in replace else n

    return node.copy().transform(swap).sql(dialect="duckdb")


def _filter(op: ir.Op, conjuncts: list[exp.Expression]) -> ir.Op:
    if not conjuncts:
        return op
    predicate = exp.and_(*conjuncts) if len(conjuncts) > 1 else conjuncts[0]
    return ir.Select(op, predicate.sql(dialect="duckdb"))


def _order_limit(op: ir.Op, node: exp.Expression) -> ir.Op:
    order = node.args.get("order")
    limit = node.args.get("limit")
    if order is None and limit is None:
        return op
    names = [c.name for c in op.schema()]
    keys = []
    for item in order.expressions if order else []:
        target = item.this
        if not (isinstance(target, exp.Column) and target.name in names):
            raise SqlError(f"ORDER BY what the SELECT list does not name is not supported ({position(item)})")
        keys.append((target.name, bool(item.args.get("desc"))))
    count = int(limit.expression.this) if limit is not None else None
    return ir.Sort(op, tuple(keys), count)
