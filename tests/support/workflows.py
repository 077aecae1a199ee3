"""The workflow tests' small tables (orders, customers: NULLs, duplicates, keys on one side
only), a scenario of a SQL job over them, top-shopper's query, and the type of a workflow runner."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from testbed.workflows.lowering import Workflow


def sql_scenario(tmp_path: Path, query: str, **job: Any) -> Path:
    tables = {}
    for name, text in (("orders", ORDERS), ("customers", CUSTOMERS)):
        (tmp_path / f"{name}.tbl").write_text(text)
        tables[name] = {"input": str(tmp_path / f"{name}.tbl"), "schema": SCHEMAS[name]}
    doc = {
        "name": "sql",
        "cluster": {"reserved": 1, "transient": 1},
        "jobs": [{"workload": "sql", "query": query, "tables": tables, "reduces": 2, **job}],
    }
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


SCENARIO = Path(__file__).resolve().parents[2] / "scenarios" / "workflows" / "top-shopper.yaml"
QUERY: str = yaml.safe_load(SCENARIO.read_text())["jobs"][0]["query"]


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
        "o_id": "int",
        "o_cust": "int",
        "o_price": "decimal(15,2)",
        "o_day": "date",
        "o_color": "string",
    },
    "customers": {"c_id": "int", "c_name": "string", "c_qty": "int"},
}


Runner = Callable[[Workflow], list[tuple[Any, ...]]]
