"""``workload: sql`` jobs as a user writes them: refused SQL (exit 2, one line naming the
construct and where), a table file that does not match its schema (a data failure naming
the file and line), a builder job, and ``testbed plan``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from testbed.api.workflows import Flow, table
from testbed.app.cli import main
from testbed.scenario.schema import ScenarioError, input_files, load_scenario, parse_scenario
from testbed.workloads.base import InputDataError
from tests.support.cli import assert_validate_refuses
from tests.support.workflows import SCHEMAS, Runner, sql_scenario

REFUSED = {
    "a window function": (
        "select o_id,\n  sum(o_price) over (partition by o_cust) from orders",
        "window functions are not supported (SUM(o_price) OVER (PARTITION BY o_cust), line 2, column 3)",
    ),
    "a correlated subquery": (
        "select o_id from orders where exists (select 1 from customers where c_qty > o_id)",
        "a correlated subquery is not supported (line 1",
    ),
    "join keys of two types": (
        "select o_id from orders join customers on o_price = c_id",
        "join key orders.o_price is a decimal(2) but customers.c_id is an int: cast one side",
    ),
    "a join without an equality": (
        "select o_id from orders, customers where o_price > c_qty",
        "a join without an equality between its two sides is not supported (line 1, column 26)",
    ),
    "an unknown table": ("select x from nope", "the query reads nope, which tables: does not define"),
    "bad syntax": ("select from where", "the query does not parse at line 1"),
}


def test_a_sql_jobs_tables_are_its_input_files(tmp_path: Path) -> None:
    """What a container backend mounts into every node and a resume fingerprints."""
    query = "select o_id from orders join customers on o_cust = c_id"
    files = input_files(load_scenario(sql_scenario(tmp_path, query)))
    assert files == [(tmp_path / "customers.tbl").resolve(), (tmp_path / "orders.tbl").resolve()]


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_unsupported_sql_is_refused_at_load(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str
) -> None:
    query, expected = REFUSED[case]
    assert_validate_refuses(sql_scenario(tmp_path, query), "jobs.0: query: ", expected, capsys)


def test_a_bad_column_type_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = sql_scenario(tmp_path, "select o_id from orders")
    doc = yaml.safe_load(path.read_text())
    doc["jobs"][0]["tables"]["orders"]["schema"]["o_day"] = "timestamp"
    path.write_text(yaml.safe_dump(doc))
    field, expected = "jobs.0: tables.orders.schema.o_day: ", "'timestamp' is not a column type"
    assert_validate_refuses(path, field, expected, capsys)


def test_a_row_that_does_not_match_its_schema_fails_with_file_and_line(
    tmp_path: Path, run_workflow: Runner
) -> None:
    bad = tmp_path / "bad.tbl"
    bad.write_text("1|10|3.50|2024-01-01|red|\n2|10|x|2024-01-02|blue|\n")
    flow = table("orders", str(bad), SCHEMAS["orders"])
    with pytest.raises(InputDataError, match=rf"{bad}:2: 'x' is not a decimal$"):
        run_workflow(flow.workflow())
    bad.write_text("1|10|3.50|2024-01-01|red|\n2|10|1.00|\n")
    with pytest.raises(InputDataError, match=rf"{bad}:2: 3 fields, the schema has 5$"):
        run_workflow(flow.workflow())


def build() -> Flow:
    """A builder job's workflow (named in the scenario as tests.workflows.test_sql_jobs:build)."""
    orders = table("orders", BUILT["input"], SCHEMAS["orders"])
    return orders.group_by("orders.o_cust").agg(n=("count", None)).sort("-n", "o_cust", limit=2)


BUILT: dict[str, str] = {}


def test_a_builder_job_plans_and_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = sql_scenario(tmp_path, "select 1")
    BUILT["input"] = str(tmp_path / "orders.tbl")
    doc = yaml.safe_load(path.read_text())
    job = doc["jobs"][0]
    del job["query"], job["tables"]
    job["builder"] = "tests.workflows.test_sql_jobs:build"
    path.write_text(yaml.safe_dump(doc))
    assert main(["plan", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "jobs.0, merge on: 3 stages, 4 tasks"
    assert out[1:4] == [
        "  s0: 1 task, reads files",
        "      fuses SCAN orders",
        "      -> shuffle on orders.o_cust into 2 after a partial AGG",
    ]
    assert out[-2:] == ["      fuses SORT by n desc, o_cust limit 2", "      -> output: orders.o_cust, n"]
    assert input_files(load_scenario(path)) == [(tmp_path / "orders.tbl").resolve()]


def test_plan_prints_what_each_stage_fused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = "select c_name, sum(o_price) as spent from orders join customers on o_cust = c_id group by c_name"
    path = sql_scenario(tmp_path, query)
    assert main(["plan", str(path)]) == 0
    merged = capsys.readouterr().out
    assert "fuses JOIN on orders.o_cust = customers.c_id > PROJECT" in merged
    assert main(["plan", str(path), "--merge", "off"]) == 0
    unmerged = capsys.readouterr().out
    assert unmerged.startswith("jobs.0, merge off: ") and "whole to the next stage" in unmerged
    assert int(unmerged.split(": ")[1].split()[0]) > int(merged.split(": ")[1].split()[0])


def test_either_query_or_builder(tmp_path: Path) -> None:
    doc = yaml.safe_load(sql_scenario(tmp_path, "select o_id from orders").read_text())
    doc["jobs"][0]["builder"] = "tests.workflows.test_sql_jobs:build"
    with pytest.raises(ScenarioError, match=r"jobs\.0: give either query"):
        parse_scenario(doc)


def test_without_sqlglot_a_sql_job_says_what_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = sql_scenario(tmp_path, "select o_id from orders")
    monkeypatch.setitem(sys.modules, "sqlglot", None)  # import sqlglot raises ImportError
    expected = "workload: sql needs sqlglot: pip install 'transient-testbed[sql]'"
    assert_validate_refuses(path, "jobs.0: ", expected, capsys)
