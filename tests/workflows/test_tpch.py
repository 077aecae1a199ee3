"""The shipped TPC-H queries: each one's stage DAG (what Musketeer's rules merge), and each
one's output at scale factor 0.01, merged and unmerged, against DuckDB's answer to the same
SQL on the same tpchgen-cli files."""

from __future__ import annotations

import pytest

from testbed.workflows import sql, tpch
from testbed.workflows.lowering import Workflow, lower
from testbed.workflows.reference import compare, duckdb_answer
from testbed.workflows.sql import Table
from testbed.workloads.sql import file_splits
from tests.support.workflows import Runner

STAGES = {
    "q1": (3, 6),
    "q3": (6, 12),
    "q5": (13, 17),
    "q6": (2, 5),
    "q10": (9, 13),
    "q12": (5, 8),
    "q14": (4, 7),
    "q17": (6, 14),
}
"""(merged, unmerged) stages of each query at partitions 3."""


def plan_of(tables: dict[str, Table], query: str, merge: bool) -> list[list[str]]:
    root = sql.from_sql(tpch.query(query), tables)
    plan = lower(Workflow(root, partitions=3, merge=merge), file_splits)
    return [stage.shared_params["fused"] for stage in plan.stages]


@pytest.mark.parametrize("query", tpch.SHIPPED)
def test_merging_cuts_the_stages(tpch_tables: dict[str, Table], query: str) -> None:
    merged, unmerged = plan_of(tpch_tables, query, True), plan_of(tpch_tables, query, False)
    assert (len(merged), len(unmerged)) == STAGES[query]
    assert all(len([op for op in ops if not op.startswith("partial")]) == 1 for ops in unmerged)


def test_q3_aggregates_in_its_join_stage(tpch_tables: dict[str, Table]) -> None:
    """GROUP BY l_orderkey, o_orderdate, o_shippriority after the join on the order key: the
    join's partitions already hold every group whole, so the AGG shares the join's stage."""
    stages = plan_of(tpch_tables, "q3", True)
    (joined,) = [ops for ops in stages if any("l_orderkey" in op for op in ops)]
    assert joined[0].startswith("JOIN on orders.o_orderkey") and any(op.startswith("AGG") for op in joined)


def test_q17_joins_twice_in_one_stage(tpch_tables: dict[str, Table]) -> None:
    """Musketeer's Q17: the decorrelated subquery's aggregate joins on the part key, the key
    the first join is partitioned on, so both joins run in one stage."""
    stages = plan_of(tpch_tables, "q17", True)
    (both,) = [ops for ops in stages if any(op.startswith("LEFT JOIN") for op in ops)]
    assert both[0].startswith("JOIN on lineitem.l_partkey = part.p_partkey")


@pytest.mark.parametrize("merge", [True, False], ids=["merged", "unmerged"])
@pytest.mark.parametrize("query", tpch.SHIPPED)
def test_query_equals_duckdb(
    tpch_tables: dict[str, Table], run_workflow: Runner, query: str, merge: bool
) -> None:
    text = tpch.query(query)
    root = sql.from_sql(text, tpch_tables)
    ours = run_workflow(Workflow(root, partitions=3, merge=merge))
    theirs = duckdb_answer(text, tpch_tables)
    assert theirs and theirs != [(None,)], "an empty answer checks nothing"
    assert compare(ours, theirs, ordered="order by" in text) == []
