"""Musketeer's top-shopper (scenarios/workflows/top-shopper.yaml) on a generated purchase log:
merged into one shuffle, unmerged one stage per operator, its output equal to DuckDB's
answer to the scenario's SQL either way."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.workflows import shop, sql
from testbed.workflows.lowering import Workflow, lower
from testbed.workflows.reference import compare, duckdb_answer
from testbed.workloads.sql import file_splits
from tests.support.workflows import QUERY, Runner


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shop.generate(8_000, tmp_path_factory.mktemp("shop"), seed=3)


def test_the_log_is_seeded(log: Path, tmp_path: Path) -> None:
    assert shop.generate(8_000, tmp_path, seed=3).read_bytes() == log.read_bytes()
    assert shop.generate(8_000, tmp_path / "other", seed=4).read_bytes() != log.read_bytes()


@pytest.mark.parametrize(("merge", "stages"), [(True, 2), (False, 8)], ids=["merged", "unmerged"])
def test_top_shopper_equals_duckdb(log: Path, run_workflow: Runner, merge: bool, stages: int) -> None:
    tables = shop.tables(log, splits=3)
    workflow = Workflow(sql.from_sql(QUERY, tables), partitions=3, merge=merge)
    assert len(lower(workflow, file_splits).stages) == stages
    ours, theirs = run_workflow(workflow), duckdb_answer(QUERY, tables)
    users = len({line.split("|")[1] for line in log.read_text().splitlines() if "|USA|" in line})
    assert 0 < len(theirs) < users, "the threshold keeps some USA users, not all"
    assert compare(ours, theirs, ordered=False) == []
    assert compare(ours[1:], theirs, ordered=False) != [], "a missing row is caught"
