"""A ``workload: sql`` job's workflow: its tables' schemas read, its query translated."""

from __future__ import annotations

import importlib
from typing import Any

from testbed.workflows import ir
from testbed.workflows.exprs import PlanError
from testbed.workflows.lowering import Workflow
from testbed.workflows.sql import Table, from_sql
from testbed.workflows.types import Column, parse_type


def tables_of(job: Any) -> dict[str, Table]:
    """The job's tables (``SqlJob.tables``) as the front-end takes them (ValueError names a
    column whose type is not one)."""
    out = {}
    for name, table in job.tables.items():
        columns = []
        for column, kind in table.columns.items():
            try:
                columns.append(Column(column, parse_type(kind)))
            except ValueError as err:
                raise ValueError(f"tables.{name}.schema.{column}: {err}") from None
        out[name] = Table(table.input, table.format, tuple(columns), table.splits)
    return out


def workflow_of(job: Any) -> Workflow:
    """The job's workflow, its query checked (ValueError: one line naming what and where);
    ``merge: auto`` is merged until ``testbed.workflows.cost.planned`` chooses."""
    if job.builder is not None:
        return Workflow(_built(job.builder), partitions=job.reduces, merge=job.merge is not False)
    try:
        root = from_sql(job.query, tables_of(job))
        ir.check(root)
    except PlanError as err:
        raise ValueError(f"query: {err}") from None
    return Workflow(root, partitions=job.reduces, merge=job.merge is not False)


def _built(name: str) -> ir.Op:
    """The operator tree a builder function (``module:function``, no arguments) returns."""
    module, _, function = name.partition(":")
    try:
        build = getattr(importlib.import_module(module), function or "build")
        flow = build()
        ir.check(flow.op)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"builder: cannot import {name} ({err}): put its module on the path") from None
    except PlanError as err:
        raise ValueError(f"builder: {name}: {err}") from None
    return flow.op
