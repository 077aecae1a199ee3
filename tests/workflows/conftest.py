"""Fixtures of the workflow tests: hand-built tables, TPC-H at scale 0.01, and a workflow
run in this process (``LocalJob``: the agents' task code, blocks in a local directory)."""

from __future__ import annotations

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
from tests.support.workflows import CUSTOMERS, ORDERS, SCHEMAS, Runner


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
