"""What a stage's task does to rows: the operators' row-level work (hash join, partial and
final aggregation, set operations, sort with limit) and the key partitioning of a shuffle.

Every function takes and returns lists of tuples; the specs are the plain dicts the lowering
puts in a stage's parameters (column indices into the operator's input)."""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from typing import Any

import msgpack

Row = tuple[Any, ...]


def partition_of(key: Row, partitions: int) -> int:
    """The shuffle partition of a key: the same in every process (no salted ``hash``)."""
    return zlib.crc32(msgpack.packb(list(key))) % partitions if partitions > 1 else 0


def key_getter(indices: list[int]) -> Callable[[Row], Row]:
    return lambda row: tuple(row[i] for i in indices)


# ------------------------------------------------------------------ aggregation


def _initial(func: str, value: Any) -> Any:
    if func == "count":
        return 0 if value is None else 1
    if func == "avg":
        return None if value is None else [value, 1]
    return value


def _merge(func: str, a: Any, b: Any) -> Any:
    if func == "count":
        return a + b
    if a is None or b is None:
        return b if a is None else a
    if func == "sum":
        return a + b
    if func == "avg":
        return [a[0] + b[0], a[1] + b[1]]
    return min(a, b) if func == "min" else max(a, b)


def _states(spec: dict[str, Any], row: Row) -> list[Any]:
    return [_initial(func, 1 if arg is None else row[arg]) for func, arg, _ in spec["aggs"]]


def aggregate(spec: dict[str, Any], rows: Iterable[Row], mode: str) -> list[Row]:
    """GROUP BY: ``partial`` (raw rows to keys + states), ``merge`` (states to results) or
    ``complete`` (raw rows to results). A keyless ``merge``/``complete`` of no rows is one
    row (count 0, the rest NULL), as SQL's is."""
    width = len(spec["keys"])
    key = key_getter(spec["keys"]) if mode != "merge" else (lambda row: tuple(row[:width]))
    funcs = [func for func, _, _ in spec["aggs"]]
    groups: dict[Row, list[Any]] = {}
    for row in rows:
        states = list(row[width:]) if mode == "merge" else _states(spec, row)
        k = key(row)
        held = groups.get(k)
        if held is None:
            groups[k] = states
        else:
            groups[k] = [_merge(f, a, b) for f, a, b in zip(funcs, held, states, strict=True)]
    if mode == "partial":
        return [k + tuple(states) for k, states in groups.items()]
    if not groups and not spec["keys"]:
        groups[()] = [0 if f == "count" else None for f in funcs]
    aggs = spec["aggs"]
    return [k + tuple(_final(a, s) for a, s in zip(aggs, st, strict=True)) for k, st in groups.items()]


def _final(agg: list[Any], state: Any) -> Any:
    func, _, scale = agg
    if func != "avg" or state is None:
        return state
    return state[0] / 10**scale / state[1]


# ------------------------------------------------------------------ joins and sets


def hash_join(left: list[Row], right: list[Row], spec: dict[str, Any]) -> list[Row]:
    """Inner or left equi-join; the right side is built into a table (NULL keys never match)."""
    left_key, right_key = key_getter(spec["left"]), key_getter(spec["right"])
    table: dict[Row, list[Row]] = {}
    for row in right:
        k = right_key(row)
        if None not in k:
            table.setdefault(k, []).append(row)
    missing = [(None,) * spec["right_width"]] if spec["kind"] == "left" else []
    out = []
    for row in left:
        for match in table.get(left_key(row), missing):
            out.append(row + match)
    return out


def set_operation(kind: str, left: list[Row], right: list[Row]) -> list[Row]:
    if kind == "union_all":
        return left + right
    if kind == "union":
        return list(dict.fromkeys(left + right))
    other = set(right)
    if kind == "intersect":
        return [row for row in dict.fromkeys(left) if row in other]
    return [row for row in dict.fromkeys(left) if row not in other]


def sort_rows(rows: list[Row], keys: list[list[Any]], limit: int | None) -> list[Row]:
    """ORDER BY (NULLs last either way, as DuckDB's default), then LIMIT."""
    ordered = list(rows)
    for index, descending in reversed(keys):
        if descending:
            ordered.sort(key=lambda r, i=index: (r[i] is not None, r[i]), reverse=True)
        else:
            ordered.sort(key=lambda r, i=index: (r[i] is None, r[i]))
    return ordered if limit is None else ordered[:limit]
