"""Fixtures of the workflow tests: hand-built tables, TPC-H at scale 0.01, and a workflow
run in this process (``LocalJob``: the agents' task code, blocks in a local directory)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from testbed.workflows import reference, tpch
from testbed.workflows.lowering import Workflow, lower
from testbed.workflows.sql import Table
from testbed.workflows.types import Column, parse_type
from testbed.workloads.dag import plan_dag
from testbed.workloads.local import LocalJob
from testbed.workloads.sql import file_splits, job_dag

ORDERS = """1|10|3.50|2024-01-01|red|
2|10|1.25|2024-01-02|blue|
3|11|7.00|2024-01-03||
4|12||2024-01-03|red|
5|11|2.00|2024-01-05|green|
6|13|9.99|2024-01-06|red|
6|13|9.99|2024-01-06|red|
"""
CUSTOMERS = """10|Ann|3|
11|Bob|1|
14|Cy|2|
12|Di|5|
"""
SCHEMAS = {
    "orders": {
        "o_id": "int", "o_cust": "int", "o_price": "decimal(15,2)", "o_day": "date", "o_color": "string",
    },
    "customers": {"c_id": "int", "c_name": "string", "c_qty": "int"},
}


@pytest.fixture
def small_tables(tmp_path: Path) -> dict[str, Table]:
    """Two small tables with NULLs, duplicates, keys on one side only (one split each of
    orders in two, so a scan's splits meet)."""
    out = {}
    for name, text, splits in (("orders", ORDERS, 2), ("customers", CUSTOMERS, 1)):
        path = tmp_path / f"{name}.tbl"
        path.write_text(text)
        schema = tuple(Column(c, parse_type(t)) for c, t in SCHEMAS[name].items())
        out[name] = Table(str(path), "tbl", schema, splits)
    return out


@pytest.fixture(scope="session")
def tpch_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Table]:
    directory = tpch.generate(0.01, tmp_path_factory.mktemp("tpch"))
    return tpch.tables(directory, splits=3)


Runner = Callable[[Workflow], list[tuple[Any, ...]]]


@pytest.fixture
def run_workflow(tmp_path: Path) -> Runner:
    """A workflow's output rows, its every task run as an agent's worker runs it (the
    lowered stages declared as the job's DAG, as the sql workload plans them)."""
    runs = iter(range(1000))

    def run(workflow: Workflow) -> list[tuple[Any, ...]]:
        plan = plan_dag("sql", job_dag(lower(workflow, file_splits)))
        job = LocalJob(plan, tmp_path / f"run{next(runs)}").run(64 << 20)
        return reference.read_output(job.outputs, workflow.root.schema())

    return run
