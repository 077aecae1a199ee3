"""The ``sql`` workload: a job's workflow lowered onto its stage DAG (``plan``), and the
task code of a lowered stage (``stage_task``, op ``workflow.stage``): read the stage's
inputs, run its fused operator chain on the partition's rows, and write them out,
partitioned on the next stage's key (aggregated or cut to the top rows first where the
lowering fused that in), to the next stage one-to-one, or as the job's output
(pipe-delimited text, one part file per final task).

The expression compiler (sqlglot) is imported by the first task that needs it, not by
every worker that preloads the workloads."""

from __future__ import annotations

import csv
import importlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack

from testbed.plan import JobPlan
from testbed.scenario.inputs import resolve_inputs
from testbed.scenario.splitting import byte_ranges
from testbed.workflows import ir
from testbed.workflows import rows as R
from testbed.workflows.types import parse_value, render, schema_from_json
from testbed.workloads.base import InputDataError, TaskContext, WorkloadError
from testbed.workloads.splits import read_lines_range

ROWS_PER_FRAME = 4096
SPLIT_MB = 16.0
"""A table is read by one task per this many MB of its files (``splits`` overrides)."""
Rows = list[R.Row]


def file_splits(scan: ir.Scan) -> list[dict[str, Any]]:
    """A table's byte ranges (lines cut as Hadoop's text input does), one task each."""
    paths = resolve_inputs(scan.input)
    total_mb = sum(p.stat().st_size for p in paths) / 2**20
    return byte_ranges(paths, scan.splits or max(1, round(total_mb / SPLIT_MB)))


def plan(job: Any) -> JobPlan:
    from testbed.workflows.lowering import lower
    from testbed.workflows.sql_tables import workflow_of

    return lower(workflow_of(job), file_splits)


def check_sql(job: Any, seed: int, directory: Path) -> list[str]:
    """The job's output against DuckDB's answer (``testbed.workflows.reference``)."""
    from testbed.workflows.reference import DuckdbMissing, compare, duckdb_answer, read_output
    from testbed.workflows.sql_tables import tables_of, workflow_of

    if job.query is None:
        return [f"no SQL reference for the builder workflow {job.builder}: check it in its tests"]
    root = workflow_of(job).root
    try:
        theirs = duckdb_answer(job.query, tables_of(job))
    except DuckdbMissing as err:
        return [str(err)]
    ordered = isinstance(root, ir.Sort) and bool(root.keys)
    return compare(read_output(directory, root.schema()), theirs, ordered)


def compile_expr(sql: str, schema: Any) -> Any:
    from testbed.workflows.exprs import compile_expr as compiled

    return compiled(sql, schema)


def stage_task(ctx: TaskContext) -> None:
    rows: Rows = []
    for op in ctx.params["ops"]:
        rows = OPERATORS[op["op"]](ctx, op, rows)
    ctx.metrics.records_out += len(rows)
    _write(ctx, ctx.params["out"], rows)


def _dep_rows(ctx: TaskContext, dep: int) -> Rows:
    out: Rows = []
    for frame in ctx.input_frames(dep):
        out.extend(msgpack.unpackb(frame, use_list=False))
    ctx.metrics.records_in += len(out)
    return out


# ------------------------------------------------------------------ sources


def _scan(ctx: TaskContext, op: dict[str, Any], _: Rows) -> Rows:
    split = ctx.params["split"]
    columns = schema_from_json(op["columns"])
    keep = op["keep"] if op["keep"] is not None else list(range(len(columns)))
    out: Rows = []
    for number, fields in _records(split, op["format"]):
        if len(fields) != len(columns):
            _bad(split, number, f"{len(fields)} fields, the schema has {len(columns)}")
        try:
            out.append(tuple(parse_value(fields[i], columns[i].type) for i in keep))
        except ValueError as err:
            _bad(split, number, str(err))
    ctx.metrics.records_in += len(out)
    return out


def _records(split: dict[str, Any], fmt: str) -> Iterator[tuple[int, list[str]]]:
    """(offset of the line in the file, its fields) for each line of the split; a csv
    file's first line is its header."""
    offset = split["start"]
    header = fmt == "csv" and offset == 0
    for chunk in read_lines_range(split["path"], split["start"], split["end"]):
        lines = chunk.decode("utf-8").split("\n")
        if lines[-1] == "":
            lines.pop()
        fields_of = csv.reader(lines) if fmt == "csv" else (_tbl_fields(line) for line in lines)
        for line, fields in zip(lines, fields_of, strict=True):
            if not header:
                yield offset, fields
            header = False
            offset += len(line.encode()) + 1


def _tbl_fields(line: str) -> list[str]:
    """A pipe-delimited line's fields (dbgen's lines end with a ``|``)."""
    fields = line.split("|")
    if len(fields) > 1 and fields[-1] == "":
        fields.pop()
    return fields


def _bad(split: dict[str, Any], offset: int, what: str) -> None:
    with open(split["path"], "rb") as handle:
        line = handle.read(offset).count(b"\n") + 1
    raise InputDataError(f"{split['path']}:{line}: {what}")


# ------------------------------------------------------------------ operators


def _read(ctx: TaskContext, op: dict[str, Any], _: Rows) -> Rows:
    return _dep_rows(ctx, op["dep"])


def _select(ctx: TaskContext, op: dict[str, Any], rows: Rows) -> Rows:
    keep, _ = compile_expr(op["predicate"], schema_from_json(op["schema"]))
    return [row for row in rows if keep(row)]


def _project(ctx: TaskContext, op: dict[str, Any], rows: Rows) -> Rows:
    schema = schema_from_json(op["schema"])
    fns = [compile_expr(sql, schema)[0] for sql in op["exprs"]]
    return [tuple(fn(row) for fn in fns) for row in rows]


def _map(ctx: TaskContext, op: dict[str, Any], rows: Rows) -> Rows:
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


def _join(ctx: TaskContext, op: dict[str, Any], rows: Rows) -> Rows:
    spec = op["spec"]
    other = _dep_rows(ctx, spec["dep"])
    left, right = (rows, other) if spec["current"] == "left" else (other, rows)
    return R.hash_join(left, right, spec)


def _agg(ctx: TaskContext, op: dict[str, Any], rows: Rows) -> Rows:
    return R.aggregate(op["spec"], rows, op["mode"])


def _set(ctx: TaskContext, op: dict[str, Any], rows: Rows) -> Rows:
    return R.set_operation(op["kind"], rows, _dep_rows(ctx, op["dep"]))


def _sort(ctx: TaskContext, op: dict[str, Any], rows: Rows) -> Rows:
    return R.sort_rows(rows, op["spec"]["keys"], op["spec"]["limit"])


def _choose(ctx: TaskContext, op: dict[str, Any], rows: Rows) -> Rows:
    """A WHILE round: the state kept once the condition holds on the flag's row."""
    (flag,) = _dep_rows(ctx, op["flag"])
    holds, _ = compile_expr(op["predicate"], schema_from_json(op["schema"]))
    changed = _dep_rows(ctx, op["dep"])
    return rows if holds(flag) else changed


OPERATORS: dict[str, Callable[[TaskContext, dict[str, Any], Rows], Rows]] = {
    "scan": _scan, "read": _read, "select": _select, "project": _project, "map": _map,
    "join": _join, "agg": _agg, "set": _set, "sort": _sort, "choose": _choose,
}


# ------------------------------------------------------------------ output


def _write(ctx: TaskContext, out: dict[str, Any], rows: Rows) -> None:
    if out["kind"] == "final":
        schema = schema_from_json(out["schema"])
        with open(ctx.final_path, "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle, delimiter="|", lineterminator="\n")
            for row in rows:
                writer.writerow([render(v, c.type) for v, c in zip(row, schema, strict=True)])
        return
    key_columns = out.get("key", [])
    if "combine" in out:
        rows = R.aggregate(out["combine"], rows, "partial")
        key_columns = list(range(len(out["combine"]["keys"])))  # the partial rows start with the keys
    if "topk" in out:
        rows = R.sort_rows(rows, out["topk"]["keys"], out["topk"]["limit"])
    partitions = ctx.spec.partitions
    parts: list[Rows] = [[] for _ in range(partitions)]
    if out["kind"] == "narrow" or partitions == 1:
        parts[0] = rows
    else:
        key = R.key_getter(key_columns)
        for row in rows:
            parts[R.partition_of(key(row), partitions)].append(row)
    writer = ctx.open_output()
    for partition, part in enumerate(parts):
        for start in range(0, len(part), ROWS_PER_FRAME):
            writer.write(partition, msgpack.packb(part[start : start + ROWS_PER_FRAME]))
    ctx.commit_output(writer)
