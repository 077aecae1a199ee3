"""Typed columns: int, float, decimal (a scaled int), string, date (ISO text), bool.

Rows are tuples of plain values so they travel as msgpack: a decimal of scale s is the
int ``round(x * 10**s)``, a date its ``YYYY-MM-DD`` text (ordered as the dates are), NULL
``None``."""

from __future__ import annotations

import datetime
import decimal
from dataclasses import dataclass
from typing import Any, Literal

Kind = Literal["int", "float", "decimal", "string", "date", "bool"]


@dataclass(frozen=True, slots=True)
class ColType:
    kind: Kind
    scale: int = 0
    """Digits after the point (decimals only)."""

    def __str__(self) -> str:
        return f"decimal({self.scale})" if self.kind == "decimal" else self.kind

    @property
    def numeric(self) -> bool:
        return self.kind in ("int", "float", "decimal")


INT, FLOAT, STRING = ColType("int"), ColType("float"), ColType("string")
DATE, BOOL = ColType("date"), ColType("bool")


def decimal_type(scale: int) -> ColType:
    return ColType("decimal", scale)


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: ColType

    def to_json(self) -> list[Any]:
        return [self.name, self.type.kind, self.type.scale]


Schema = tuple[Column, ...]


def schema_from_json(items: list[list[Any]]) -> Schema:
    return tuple(Column(name, ColType(kind, scale)) for name, kind, scale in items)


def schema_to_json(schema: Schema) -> list[list[Any]]:
    return [column.to_json() for column in schema]


def parse_type(text: str) -> ColType:
    """A schema's type as people write it: int, bigint, float, double, decimal(15,2), string,
    varchar(25), char(10), text, date (ValueError otherwise)."""
    name = text.strip().lower()
    base, _, args = name.partition("(")
    base = base.strip()
    if base in ("int", "integer", "bigint", "smallint", "tinyint"):
        return INT
    if base in ("float", "double", "real"):
        return FLOAT
    if base in ("decimal", "numeric"):
        parts = [p.strip() for p in args.rstrip(")").split(",")] if args else []
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValueError(f"{text!r}: a decimal needs its precision and scale, e.g. decimal(15,2)")
        return decimal_type(int(parts[1]))
    if base in ("string", "varchar", "char", "text"):
        return STRING
    if base == "date":
        return DATE
    raise ValueError(f"{text!r} is not a column type (int, float, decimal(p,s), string, date)")


def parse_value(text: str, kind: ColType) -> Any:
    """A field of a text table (ValueError when it does not match its type); an empty field
    is NULL, of any type (as DuckDB and Spark read delimited text)."""
    if text == "":
        return None
    if kind.kind == "string":
        return text
    if kind.kind == "int":
        return int(text)
    if kind.kind == "float":
        return float(text)
    if kind.kind == "decimal":
        try:
            return scaled(decimal.Decimal(text), kind.scale)
        except decimal.InvalidOperation:
            raise ValueError(f"{text!r} is not a decimal") from None
    if kind.kind == "date":
        datetime.date.fromisoformat(text)
        return text
    raise ValueError(f"cannot read a {kind} from text")


def scaled(value: decimal.Decimal | int, scale: int) -> int:
    """A number as the int of a decimal of this scale (exact when it has no more digits)."""
    quantum = decimal.Decimal(value).scaleb(scale)
    return int(quantum.to_integral_value(rounding=decimal.ROUND_HALF_EVEN))


def to_decimal(value: int, scale: int) -> decimal.Decimal:
    return decimal.Decimal(value).scaleb(-scale)


def render(value: Any, kind: ColType) -> str:
    """A value as the output files write it (NULL is empty)."""
    if value is None:
        return ""
    if kind.kind == "decimal":
        return f"{to_decimal(value, kind.scale):f}"
    if kind.kind == "float":
        return repr(float(value))
    if kind.kind == "bool":
        return "true" if value else "false"
    return str(value)
