"""TPC-H workflows run for real (local agents, the broker, shuffles over HTTP) under
evictions, on every recovery strategy (and ``auto``'s choice per job): each output equals
DuckDB's answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from testbed.workflows import tpch
from tests.support.runs import assert_clean, assert_exact, evict_first_if_none
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

CLUSTER = {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 5}


def sql_job(query: str, data: Path) -> dict[str, Any]:
    text = tpch.query(query)
    tables = {
        name: {"input": str(data / f"{name}.tbl"), "schema": tpch.schema_yaml(name), "splits": 2}
        for name in tpch.tables_read(text)
    }
    return {"workload": "sql", "name": query, "query": text, "tables": tables, "reduces": 3}


@pytest.fixture(scope="module")
def tpch_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tpch.generate(0.01, tmp_path_factory.mktemp("tpch"))


@pytest.mark.parametrize("strategy", ["spark", "spark-checkpoint", "pado", "auto"])
async def test_tpch_queries_exact_under_evictions(tmp_path: Path, tpch_data: Path, strategy: str) -> None:
    scenario = make_scenario(
        time_scale=60,
        cluster=CLUSTER,
        jobs=[sql_job("q3", tpch_data), sql_job("q17", tpch_data)],
        policy={"strategy": strategy},
        chaos={"transient": {"lifetime": "high", "replace": True, "provisioning_delay": "30s"}},
    )
    result = await run_scenario(settings_of(scenario), tmp_path, on_event=evict_first_if_none())
    assert result.ok, result.summary
    assert result.summary["evictions"] > 0
    assert_exact(scenario, tmp_path)
    assert_clean(tmp_path)
