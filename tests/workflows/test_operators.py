"""Each operator of the IR on hand-built rows (NULLs, duplicates, unmatched keys), run as
the agents run a stage, against DuckDB running the same operation as SQL on the same files;
merged and unmerged."""

from __future__ import annotations

from typing import Any

import pytest

from testbed.api.workflows import Flow, table
from testbed.workflows.reference import compare, duckdb_answer
from testbed.workflows.sql import Table
from tests.support.workflows import SCHEMAS, Runner
from tests.workflows import udfs


def flows(tables: dict[str, Table]) -> tuple[Flow, Flow]:
    orders, customers = tables["orders"], tables["customers"]
    return (
        table("orders", orders.input, SCHEMAS["orders"], splits=orders.splits),
        table("customers", customers.input, SCHEMAS["customers"]),
    )


CASES: dict[str, tuple[Any, str, bool]] = {
    "select": (
        lambda o, c: o.where("o_price > 2 and o_day >= CAST('2024-01-03' AS DATE)"),
        "select * from orders where o_price > 2 and o_day >= date '2024-01-03'",
        False,
    ),
    "project": (
        lambda o, c: o.select("orders.o_id", total="o_price * 3 - 1", y="extract(year from o_day)"),
        "select o_id, o_price * 3 - 1 as total, extract(year from o_day) as y from orders",
        False,
    ),
    "map": (
        lambda o, c: o.select(k="o_id", q="o_cust - 10").map(
            udfs.label, {"k": "int", "size": "string", "q3": "int"}
        ),
        "select o_id, case when o_cust - 10 >= 3 then 'big' else 'small' end, (o_cust - 10) * 3 from orders",
        False,
    ),
    "inner join": (
        lambda o, c: o.join(c, {"orders.o_cust": "customers.c_id"}),
        "select * from orders join customers on o_cust = c_id",
        False,
    ),
    "left join": (
        lambda o, c: c.join(o, {"customers.c_id": "orders.o_cust"}, how="left"),
        "select * from customers left join orders on c_id = o_cust",
        False,
    ),
    "agg by key": (
        lambda o, c: o.group_by("orders.o_color").agg(
            n=("count", None),
            nprice=("count", "orders.o_price"),
            s=("sum", "orders.o_price"),
            lo=("min", "orders.o_day"),
            hi=("max", "orders.o_price"),
            mean=("avg", "orders.o_price"),
        ),
        "select o_color, count(*), count(o_price), sum(o_price), min(o_day), max(o_price), avg(o_price) "
        "from orders group by o_color",
        False,
    ),
    "keyless agg of nothing": (
        lambda o, c: o.where("o_id > 100").agg(n=("count", None), s=("sum", "orders.o_price")),
        "select count(*), sum(o_price) from orders where o_id > 100",
        False,
    ),
    "distinct": (
        lambda o, c: o.select("orders.o_cust", "orders.o_color").distinct(),
        "select distinct o_cust, o_color from orders",
        False,
    ),
    "union": (
        lambda o, c: o.select(k="o_cust").union(c.select(k="c_id")),
        "select o_cust from orders union select c_id from customers",
        False,
    ),
    "union all": (
        lambda o, c: o.select(k="o_cust").union(c.select(k="c_id"), all=True),
        "select o_cust from orders union all select c_id from customers",
        False,
    ),
    "intersect": (
        lambda o, c: o.select(k="o_cust").intersect(c.select(k="c_id")),
        "select o_cust from orders intersect select c_id from customers",
        False,
    ),
    "difference": (
        lambda o, c: c.select(k="c_id").difference(o.select(k="o_cust")),
        "select c_id from customers except select o_cust from orders",
        False,
    ),
    "sort with limit": (
        lambda o, c: o.select("orders.o_id", "orders.o_price").sort("-o_price", "o_id", limit=4),
        "select o_id, o_price from orders order by o_price desc nulls last, o_id limit 4",
        True,
    ),
    "while, fixed rounds": (
        lambda o, c: o.select(k="o_id", v="o_cust").loop(lambda s: s.select("k", v="v * 2"), rounds=3),
        "select o_id, o_cust * 8 from orders",
        False,
    ),
    "while until": (
        lambda o, c: o.select(k="o_id", v="o_cust").loop(
            lambda s: s.select("k", v="v + 1"), rounds=10, until=({"top": ("max", "v")}, "top >= 15")
        ),
        "select o_id, o_cust + 2 from orders",  # max(o_cust) = 13: two rounds reach 15
        False,
    ),
}


@pytest.mark.parametrize("merge", [True, False], ids=["merged", "unmerged"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_operator_against_duckdb(
    small_tables: dict[str, Table], run_workflow: Runner, case: str, merge: bool
) -> None:
    build, sql, ordered = CASES[case]
    flow = build(*flows(small_tables))
    ours = run_workflow(flow.workflow(partitions=3, merge=merge))
    theirs = duckdb_answer(sql, small_tables)
    assert theirs, "a case whose answer is empty checks nothing"
    assert compare(ours, theirs, ordered) == []


def test_a_wrong_answer_is_caught(small_tables: dict[str, Table], run_workflow: Runner) -> None:
    """The comparison can fail: a filter off by one row differs from DuckDB's."""
    orders, _ = flows(small_tables)
    ours = run_workflow(orders.where("o_price > 2").workflow(partitions=2))
    theirs = duckdb_answer("select * from orders where o_price >= 2", small_tables)
    assert compare(ours, theirs, ordered=False) == [f"{len(ours)} rows, DuckDB's answer has {len(ours) + 1}"]
