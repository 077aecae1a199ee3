"""DuckDB as the independent reference: the same SQL on the same files, and the comparison
of a workflow's output with its answer (integers, decimals, strings and dates exactly;
floats to ``FLOAT_TOLERANCE`` relative; row order only where the query orders)."""

from __future__ import annotations

import csv
import decimal
import math
from pathlib import Path
from typing import Any

from testbed.workflows.sql import Table
from testbed.workflows.types import ColType, Schema, parse_value, to_decimal

FLOAT_TOLERANCE = 1e-9
"""Relative: both sides sum the same doubles, in different orders."""


_DUCKDB_TYPES = {"int": "BIGINT", "float": "DOUBLE", "string": "VARCHAR", "date": "DATE", "bool": "BOOLEAN"}
INSTALL = "pip install 'transient-testbed[sql]'"


class DuckdbMissing(RuntimeError):
    pass


def _duckdb_type(kind: ColType) -> str:
    if kind.kind == "decimal":
        return f"DECIMAL(18,{kind.scale})"
    return _DUCKDB_TYPES[kind.kind]


def duckdb_answer(query: str, tables: dict[str, Table]) -> list[tuple[Any, ...]]:
    try:
        import duckdb
    except ImportError:
        raise DuckdbMissing(f"the DuckDB reference needs duckdb: {INSTALL}") from None
    con = duckdb.connect()
    try:
        for name, table in tables.items():
            columns = "{" + ", ".join(f"'{c.name}': '{_duckdb_type(c.type)}'" for c in table.schema) + "}"
            delim, header = ("|", "false") if table.format == "tbl" else (",", "true")
            con.execute(
                f"CREATE VIEW {name} AS SELECT * FROM read_csv('{table.input}', delim='{delim}', "
                f"header={header}, columns={columns}, auto_detect=false, null_padding=true)"
            )
        return con.execute(query).fetchall()
    finally:
        con.close()


def read_output(directory: Path, schema: Schema) -> list[tuple[Any, ...]]:
    """A workflow's part files, in part order, as typed rows."""
    rows = []
    for part in sorted(directory.glob("part-*")):
        with open(part, encoding="utf-8", newline="") as handle:
            for fields in csv.reader(handle, delimiter="|"):
                rows.append(tuple(_typed(f, c.type) for f, c in zip(fields, schema, strict=True)))
    return rows


def _typed(text: str, kind: ColType) -> Any:
    if text == "":
        return None
    if kind.kind == "decimal":
        return to_decimal(parse_value(text, kind), kind.scale)
    if kind.kind == "bool":
        return text == "true"
    return parse_value(text, kind)


def _normal(value: Any) -> Any:
    """DuckDB's values as ours: dates as ISO text, decimals as Decimal."""
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _same(ours: Any, theirs: Any) -> bool:
    theirs = _normal(theirs)
    if ours is None or theirs is None:
        return ours is None and theirs is None
    if isinstance(ours, float) or isinstance(theirs, float):
        return math.isclose(float(ours), float(theirs), rel_tol=FLOAT_TOLERANCE, abs_tol=1e-12)
    if isinstance(ours, decimal.Decimal) or isinstance(theirs, decimal.Decimal):
        return decimal.Decimal(ours) == decimal.Decimal(theirs)
    return ours == theirs


def compare(ours: list[tuple[Any, ...]], theirs: list[tuple[Any, ...]], ordered: bool) -> list[str]:
    """What differs (empty when the answers agree). Unordered answers are matched as
    multisets: each row with its floats rounded for the match, then checked to tolerance."""
    if len(ours) != len(theirs):
        return [f"{len(ours)} rows, DuckDB's answer has {len(theirs)}"]
    if not ordered:
        ours, theirs = sorted(ours, key=_sort_key), sorted(theirs, key=_sort_key)
    problems = []
    for n, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        if len(a) != len(b) or not all(_same(x, y) for x, y in zip(a, b, strict=True)):
            problems.append(f"row {n}: {a!r} != DuckDB's {tuple(_normal(v) for v in b)!r}")
    return problems[:10]


def _sort_key(row: tuple[Any, ...]) -> tuple[Any, ...]:
    out = []
    for value in row:
        value = _normal(value)
        if isinstance(value, float | decimal.Decimal):
            value = float(f"{float(value):.6g}")
        out.append((value is None, str(type(value).__name__ if value is None else ""), value))
    return tuple(out)
