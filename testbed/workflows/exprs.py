"""Scalar expressions (SQL text, parsed by sqlglot) compiled into functions of a row.

An expression is compiled against its input's schema; ``compile_expr`` returns the
function and the value's type. Decimals are scaled ints, so ``+``/``-`` align scales,
``*`` adds them, and ``/`` gives a float (as DuckDB's decimal division does)."""

from __future__ import annotations

import datetime
import decimal
import operator
import re
from collections.abc import Callable
from functools import cache
from typing import Any

import sqlglot
from sqlglot import exp

from testbed.workflows.types import BOOL, DATE, FLOAT, INT, STRING, ColType, Schema, decimal_type, scaled

Fn = Callable[[tuple[Any, ...]], Any]


class PlanError(ValueError):
    """A workflow cannot be planned (a type mismatch, an unknown column, an unsupported
    construct); the message names what and where."""


@cache
def parse_expr(sql: str) -> exp.Expression:
    try:
        return sqlglot.parse_one(sql, dialect="duckdb")
    except sqlglot.errors.ParseError as err:
        raise PlanError(f"expression {sql!r} does not parse: {err}") from None


def column_index(schema: Schema, table: str, name: str) -> int:
    """Where ``table.name`` (or ``name``, unqualified) is in the schema."""
    names = [c.name for c in schema]
    wanted = f"{table}.{name}" if table else name
    if wanted in names:
        return names.index(wanted)
    matches = [i for i, n in enumerate(names) if n.rsplit(".", 1)[-1] == name]
    if len(matches) == 1 and (not table or "." not in names[matches[0]]):
        return matches[0]
    if len(matches) == 1 and not table:
        return matches[0]
    what = "ambiguous" if matches else "unknown"
    raise PlanError(f"{what} column {wanted!r} (columns: {', '.join(names)})")


def compile_expr(sql: str | exp.Expression, schema: Schema) -> tuple[Fn, ColType]:
    node = parse_expr(sql) if isinstance(sql, str) else sql
    return _compile(node, schema)


def _compile(node: exp.Expression, schema: Schema) -> tuple[Fn, ColType]:
    for kinds, build in _BUILDERS:
        if isinstance(node, kinds):
            return build(node, schema)
    raise PlanError(f"unsupported expression {node.sql(dialect='duckdb')!r} ({type(node).__name__})")


def _column(node: exp.Column, schema: Schema) -> tuple[Fn, ColType]:
    i = column_index(schema, node.table, node.name)
    return operator.itemgetter(i), schema[i].type


def _literal(node: exp.Literal, schema: Schema) -> tuple[Fn, ColType]:
    text = node.this
    if node.is_string:
        return _const(text), STRING
    if re.fullmatch(r"-?\d+", text):
        return _const(int(text)), INT
    if re.fullmatch(r"-?\d*\.\d+", text):
        digits = len(text.split(".")[1])
        return _const(scaled(decimal.Decimal(text), digits)), decimal_type(digits)
    return _const(float(text)), FLOAT


def _const(value: Any) -> Fn:
    return lambda row: value


def _null(node: exp.Null, schema: Schema) -> tuple[Fn, ColType]:
    return _const(None), INT


def _boolean(node: exp.Boolean, schema: Schema) -> tuple[Fn, ColType]:
    return _const(bool(node.this)), BOOL


def _paren(node: exp.Paren, schema: Schema) -> tuple[Fn, ColType]:
    return _compile(node.this, schema)


def _cast(node: exp.Cast, schema: Schema) -> tuple[Fn, ColType]:
    inner, kind = _compile(node.this, schema)
    target = node.to.this
    if target == exp.DataType.Type.DATE:
        if kind not in (STRING, DATE):
            raise PlanError(f"cannot cast a {kind} to a date: {node.sql()}")
        return (lambda row: _date(inner(row))), DATE
    if target in (exp.DataType.Type.DOUBLE, exp.DataType.Type.FLOAT):
        return _as_float(inner, kind), FLOAT
    if target in exp.DataType.INTEGER_TYPES:
        return (lambda row: None if (v := _as_float(inner, kind)(row)) is None else int(v)), INT
    if target == exp.DataType.Type.DECIMAL:
        scale = int(node.to.expressions[1].this.this) if len(node.to.expressions) == 2 else 0
        return _rescale(inner, kind, scale), decimal_type(scale)
    if target in exp.DataType.TEXT_TYPES:
        return (lambda row: None if (v := inner(row)) is None else str(v)), STRING
    raise PlanError(f"unsupported cast {node.sql()}")


def _date(value: Any) -> Any:
    if value is not None:
        datetime.date.fromisoformat(value)
    return value


def _as_float(fn: Fn, kind: ColType) -> Fn:
    if kind.kind == "decimal":
        factor = 10.0**kind.scale
        return lambda row: None if (v := fn(row)) is None else v / factor
    return lambda row: None if (v := fn(row)) is None else float(v)


def _rescale(fn: Fn, kind: ColType, scale: int) -> Fn:
    """A decimal or int value as a decimal of a scale at least its own."""
    if kind.kind == "float":
        return lambda row: None if (v := fn(row)) is None else round(v * 10**scale)
    shift = 10 ** (scale - kind.scale)
    if shift == 1:
        return fn
    return lambda row: None if (v := fn(row)) is None else v * shift


def numeric_pair(a: ColType, b: ColType, where: str) -> ColType:
    """The common type two numbers are compared or added in."""
    if not (a.numeric and b.numeric):
        if a.kind == b.kind or {a.kind, b.kind} <= {"string", "date"}:
            return a if a.kind != "string" else b
        raise PlanError(f"{where}: cannot combine a {a} with a {b}")
    if "float" in (a.kind, b.kind):
        return FLOAT
    if "decimal" in (a.kind, b.kind):
        return decimal_type(max(a.scale, b.scale))
    return INT


def coerce(fn: Fn, kind: ColType, to: ColType) -> Fn:
    if to.kind == "float" and kind.kind != "float":
        return _as_float(fn, kind)
    if to.kind == "decimal":
        return _rescale(fn, kind, to.scale)
    return fn


_ARITH = {exp.Add: operator.add, exp.Sub: operator.sub, exp.Mul: operator.mul}


def _arith(node: exp.Binary, schema: Schema) -> tuple[Fn, ColType]:
    (left, lt), (right, rt) = _compile(node.this, schema), _compile(node.expression, schema)
    where = node.sql(dialect="duckdb")
    if isinstance(node, exp.Div):
        lf, rf = _as_float(left, lt), _as_float(right, rt)
        return _binary(lf, rf, lambda a, b: None if b == 0 else a / b), FLOAT
    if lt.kind == "date" and rt.kind == "date" and isinstance(node, exp.Sub):
        return _binary(left, right, _days_between), INT
    common = numeric_pair(lt, rt, where)
    if not common.numeric:
        raise PlanError(f"{where}: arithmetic on a {lt} and a {rt}")
    op = _ARITH[type(node)]
    if isinstance(node, exp.Mul) and common.kind == "decimal":
        return _binary(left, right, op), decimal_type(lt.scale + rt.scale)
    return _binary(coerce(left, lt, common), coerce(right, rt, common), op), common


def _days_between(a: str, b: str) -> int:
    return (datetime.date.fromisoformat(a) - datetime.date.fromisoformat(b)).days


def _binary(left: Fn, right: Fn, op: Callable[[Any, Any], Any]) -> Fn:
    return lambda row: None if (a := left(row)) is None or (b := right(row)) is None else op(a, b)


_COMPARE = {
    exp.EQ: operator.eq, exp.NEQ: operator.ne, exp.LT: operator.lt,
    exp.LTE: operator.le, exp.GT: operator.gt, exp.GTE: operator.ge,
}


def _compare(node: exp.Binary, schema: Schema) -> tuple[Fn, ColType]:
    (left, lt), (right, rt) = _compile(node.this, schema), _compile(node.expression, schema)
    common = numeric_pair(lt, rt, node.sql(dialect="duckdb"))
    return _binary(coerce(left, lt, common), coerce(right, rt, common), _COMPARE[type(node)]), BOOL


def _between(node: exp.Between, schema: Schema) -> tuple[Fn, ColType]:
    low = exp.GTE(this=node.this, expression=node.args["low"])
    high = exp.LTE(this=node.this, expression=node.args["high"])
    return _logic(exp.And(this=low, expression=high), schema)


def _logic(node: exp.Connector, schema: Schema) -> tuple[Fn, ColType]:
    left, _ = _compile(node.this, schema)
    right, _ = _compile(node.expression, schema)
    if isinstance(node, exp.And):
        return (lambda row: bool(left(row)) and bool(right(row))), BOOL
    return (lambda row: bool(left(row)) or bool(right(row))), BOOL


def _not(node: exp.Not, schema: Schema) -> tuple[Fn, ColType]:
    inner, _ = _compile(node.this, schema)
    return (lambda row: None if (v := inner(row)) is None else not v), BOOL


def _in(node: exp.In, schema: Schema) -> tuple[Fn, ColType]:
    if node.args.get("query") or not node.expressions:
        raise PlanError(f"unsupported IN (a subquery the optimiser did not unnest): {node.sql()}")
    value, kind = _compile(node.this, schema)
    items = [_compile(e, schema) for e in node.expressions]
    common = kind
    for _, t in items:
        common = numeric_pair(common, t, node.sql(dialect="duckdb"))
    options = frozenset(coerce(f, t, common)(()) for f, t in items)
    probe = coerce(value, kind, common)
    return (lambda row: probe(row) in options), BOOL


def _like(node: exp.Like, schema: Schema) -> tuple[Fn, ColType]:
    value, _ = _compile(node.this, schema)
    pattern = node.expression
    if not (isinstance(pattern, exp.Literal) and pattern.is_string):
        raise PlanError(f"LIKE needs a constant pattern: {node.sql()}")
    regex = re.compile(
        "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in pattern.this), re.DOTALL
    )
    return (lambda row: None if (v := value(row)) is None else regex.fullmatch(v) is not None), BOOL


def _case(node: exp.Case, schema: Schema) -> tuple[Fn, ColType]:
    if node.this is not None:
        raise PlanError(f"only searched CASE (CASE WHEN ...) is supported: {node.sql()}")
    branches = [(_compile(i.this, schema)[0], _compile(i.args["true"], schema)) for i in node.args["ifs"]]
    default = _compile(node.args["default"], schema) if node.args.get("default") else (_const(None), INT)
    common = default[1] if node.args.get("default") else branches[0][1][1]
    for _, (_, t) in branches:
        common = numeric_pair(common, t, node.sql(dialect="duckdb"))
    arms = [(cond, coerce(f, t, common)) for cond, (f, t) in branches]
    otherwise = coerce(default[0], default[1], common)

    def case(row: tuple[Any, ...]) -> Any:
        for cond, value in arms:
            if cond(row):
                return value(row)
        return otherwise(row)

    return case, common


def _extract(node: exp.Extract, schema: Schema) -> tuple[Fn, ColType]:
    part = node.this.name.lower()
    value, kind = _compile(node.expression, schema)
    if kind != DATE or part not in ("year", "month", "day"):
        raise PlanError(f"EXTRACT of year, month or day from a date only: {node.sql()}")
    cut = {"year": slice(0, 4), "month": slice(5, 7), "day": slice(8, 10)}[part]
    return (lambda row: None if (v := value(row)) is None else int(v[cut])), INT


def _substring(node: exp.Substring, schema: Schema) -> tuple[Fn, ColType]:
    value, _ = _compile(node.this, schema)
    start = int(node.args["start"].this) - 1
    length = node.args.get("length")
    end = start + int(length.this) if length is not None else None
    return (lambda row: None if (v := value(row)) is None else v[start:end]), STRING


def _neg(node: exp.Neg, schema: Schema) -> tuple[Fn, ColType]:
    value, kind = _compile(node.this, schema)
    return (lambda row: None if (v := value(row)) is None else -v), kind


def _is(node: exp.Is, schema: Schema) -> tuple[Fn, ColType]:
    if not isinstance(node.expression, exp.Null):
        raise PlanError(f"only IS NULL is supported: {node.sql()}")
    value, _ = _compile(node.this, schema)
    return (lambda row: value(row) is None), BOOL


_BUILDERS: list[tuple[type | tuple[type, ...], Callable[[Any, Schema], tuple[Fn, ColType]]]] = [
    (exp.Column, _column),
    (exp.Literal, _literal),
    (exp.Null, _null),
    (exp.Boolean, _boolean),
    (exp.Paren, _paren),
    (exp.Cast, _cast),
    ((exp.Add, exp.Sub, exp.Mul, exp.Div), _arith),
    (tuple(_COMPARE), _compare),
    (exp.Between, _between),
    ((exp.And, exp.Or), _logic),
    (exp.Not, _not),
    (exp.In, _in),
    (exp.Like, _like),
    (exp.Case, _case),
    (exp.Extract, _extract),
    (exp.Substring, _substring),
    (exp.Neg, _neg),
    (exp.Is, _is),
]
