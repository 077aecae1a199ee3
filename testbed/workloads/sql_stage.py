"""The body of a ``workload: sql`` stage (``stage_body``, run as a ``dag.task`` by the
agents' workers): read the stage's inputs, run its fused operator chain (``ops``, as the
lowering wrote it) on the partition's rows, and write them out: partitioned on the next
stage's key (aggregated or cut to the top rows first where the lowering fused that in), to
the next stage whole, or as the job's output (pipe-delimited lines, one part file per task).

The expression compiler (sqlglot) is imported by the first task that needs it, not by
every worker that preloads the workloads."""

from __future__ import annotations

import csv
import importlib
import io
from collections.abc import Callable
from typing import Any

from testbed.api.dag import DagTask
from testbed.workflows import rows as R
from testbed.workflows.types import parse_value, render, schema_from_json
from testbed.workloads.base import InputDataError, WorkloadError

Rows = list[R.Row]


def stage_body(task: DagTask) -> None:
    rows: Rows = []
    for op in task.args["ops"]:
        rows = OPERATORS[op["op"]](task, op, rows)
    _write(task, task.args["out"], rows)


def compile_expr(sql: str, schema: Any) -> Any:
    from testbed.workflows.exprs import compile_expr as compiled

    return compiled(sql, schema)


def _dep_rows(task: DagTask, dep: int) -> Rows:
    return list(task.inputs(task.args["deps"][dep]))


# ------------------------------------------------------------------ sources


def _scan(task: DagTask, op: dict[str, Any], _: Rows) -> Rows:
    split = task.args["file"]
    columns = schema_from_json(op["columns"])
    keep = op["keep"] if op["keep"] is not None else list(range(len(columns)))
    fields_of = _csv_fields if op["format"] == "csv" else _tbl_fields
    out: Rows = []
    for number, line in enumerate(task.lines()):
        if number == 0 and op["format"] == "csv" and split["start"] == 0:
            continue  # the header
        fields = fields_of(line)
        if len(fields) != len(columns):
            _bad(split, number, f"{len(fields)} fields, the schema has {len(columns)}")
        try:
            out.append(tuple(parse_value(fields[i], columns[i].type) for i in keep))
        except ValueError as err:
            _bad(split, number, str(err))
    return out


def _tbl_fields(line: str) -> list[str]:
    """A pipe-delimited line's fields (dbgen's lines end with a ``|``)."""
    fields = line.split("|")
    if len(fields) > 1 and fields[-1] == "":
        fields.pop()
    return fields


def _csv_fields(line: str) -> list[str]:
    return next(csv.reader([line]), [])


def _bad(split: dict[str, Any], number: int, what: str) -> None:
    """A data failure naming the file and the line (the split's ``number``-th, counted from
    its first whole line; empty lines are skipped as the line reader skips them)."""
    with open(split["path"], "rb") as handle:
        before = handle.read(split["start"])
    first = before.count(b"\n") + 1 + (1 if before and not before.endswith(b"\n") else 0)
    raise InputDataError(f"{split['path']}:{first + number}: {what}")


# ------------------------------------------------------------------ operators


def _read(task: DagTask, op: dict[str, Any], _: Rows) -> Rows:
    return _dep_rows(task, op["dep"])


def _select(task: DagTask, op: dict[str, Any], rows: Rows) -> Rows:
    keep, _ = compile_expr(op["predicate"], schema_from_json(op["schema"]))
    return [row for row in rows if keep(row)]


def _project(task: DagTask, op: dict[str, Any], rows: Rows) -> Rows:
    schema = schema_from_json(op["schema"])
    fns = [compile_expr(sql, schema)[0] for sql in op["exprs"]]
    return [tuple(fn(row) for fn in fns) for row in rows]


def _map(task: DagTask, op: dict[str, Any], rows: Rows) -> Rows:
    module, _, name = op["udf"].partition(":")
    udf: Callable[[R.Row], R.Row] = getattr(importlib.import_module(module), name)
    out = []
    for row in rows:
        try:
            result = tuple(udf(row))
        except Exception as err:
            raise WorkloadError(f"MAP {op['udf']} failed on {row!r}: {err!r}") from err
        if len(result) != op["width"]:
            raise WorkloadError(f"MAP {op['udf']} returned {len(result)} values, declared {op['width']}")
        out.append(result)
    return out


def _join(task: DagTask, op: dict[str, Any], rows: Rows) -> Rows:
    spec = op["spec"]
    other = _dep_rows(task, spec["dep"])
    left, right = (rows, other) if spec["current"] == "left" else (other, rows)
    return R.hash_join(left, right, spec)


def _agg(task: DagTask, op: dict[str, Any], rows: Rows) -> Rows:
    return R.aggregate(op["spec"], rows, op["mode"])


def _set(task: DagTask, op: dict[str, Any], rows: Rows) -> Rows:
    return R.set_operation(op["kind"], rows, _dep_rows(task, op["dep"]))


def _sort(task: DagTask, op: dict[str, Any], rows: Rows) -> Rows:
    return R.sort_rows(rows, op["spec"]["keys"], op["spec"]["limit"])


def _choose(task: DagTask, op: dict[str, Any], rows: Rows) -> Rows:
    """A WHILE round: the state kept once the condition holds on the flag's row."""
    (flag,) = _dep_rows(task, op["flag"])
    holds, _ = compile_expr(op["predicate"], schema_from_json(op["schema"]))
    changed = _dep_rows(task, op["dep"])
    return rows if holds(flag) else changed


OPERATORS: dict[str, Callable[[DagTask, dict[str, Any], Rows], Rows]] = {
    "scan": _scan, "read": _read, "select": _select, "project": _project, "map": _map,
    "join": _join, "agg": _agg, "set": _set, "sort": _sort, "choose": _choose,
}


# ------------------------------------------------------------------ output


def _write(task: DagTask, out: dict[str, Any], rows: Rows) -> None:
    if out["kind"] == "final":
        schema = schema_from_json(out["schema"])
        for row in rows:
            task.write_line(_line([render(v, c.type) for v, c in zip(row, schema, strict=True)]))
        return
    key_columns = out.get("key", [])
    if "combine" in out:
        rows = R.aggregate(out["combine"], rows, "partial")
        key_columns = list(range(len(out["combine"]["keys"])))  # the partial rows start with the keys
    if "topk" in out:
        rows = R.sort_rows(rows, out["topk"]["keys"], out["topk"]["limit"])
    if out["kind"] == "narrow" or task.partitions == 1:
        for row in rows:
            task.emit(row)
        return
    key = R.key_getter(key_columns)
    for row in rows:
        task.emit(row, R.partition_of(key(row), task.partitions))


def _line(fields: list[str]) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, delimiter="|", lineterminator="").writerow(fields)
    return buffer.getvalue()
