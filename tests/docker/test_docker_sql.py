"""A ``workload: sql`` job (TPC-H Q3: two joins, an aggregate, a top-10; data from
tpchgen-cli at a tiny scale factor into the test's directory) on ``--backend docker`` and
through ``testbed compose`` + docker-compose (the master in a container too): the image
plans it and its workers compile its expressions (sqlglot, the image's node extra), the
tables' files are mounted read-only into every node, and ``testbed check-output --run``
finds the output equal to DuckDB's answer to the same SQL on the same files."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import docker
import pytest
import yaml

from master.shell.run import run_scenario
from testbed.app.cli import main
from testbed.scenario.loading import load_raw
from testbed.scenario.schema import parse_scenario
from testbed.workflows import tpch
from tests.support.docker import compose_command, compose_up_and_down, new_run_id, remove_run, run_leftovers
from tests.support.settings import settings_of

pytestmark = [pytest.mark.docker, pytest.mark.e2e]

REPO = Path(__file__).resolve().parents[2]
SCALE = 0.005


@pytest.fixture(scope="module")
def tpch_data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("duckdb", reason="check-output's reference needs the sql extra")
    if shutil.which("tpchgen-cli") is None:
        pytest.skip("TPC-H data needs tpchgen-cli: pip install 'transient-testbed[sql]'")
    return tpch.generate(SCALE, tmp_path_factory.mktemp("tpch"))


def q3_scenario(data_dir: Path) -> dict[str, Any]:
    data = load_raw(REPO / "scenarios" / "tpch" / "q3.yaml")
    data["cluster"] = {"reserved": 1, "transient": 1, "heartbeat_interval": 0.2, "heartbeat_timeout": 5}
    for name, table in data["jobs"][0]["tables"].items():
        table["input"] = str(data_dir / f"{name}.tbl")
    return data


def assert_equals_duckdb(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["check-output", "--run", str(run_dir)]) == 0, capsys.readouterr()


async def test_a_tpch_query_runs_in_containers_and_equals_duckdb(
    docker_client: docker.DockerClient,
    image: str,
    tpch_data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_id = f"sql-{new_run_id()}"
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_DOCKER_IMAGE", image)
    run_dir = tmp_path / "run"
    try:
        result = await run_scenario(
            settings_of(parse_scenario(q3_scenario(tpch_data))), run_dir, backend="docker"
        )
        assert result.ok, result.summary
        assert run_leftovers(docker_client, run_id) == []
    finally:
        remove_run(docker_client, run_id)
    assert_equals_duckdb(run_dir, capsys)


def test_a_tpch_query_runs_through_testbed_compose_and_equals_duckdb(
    docker_client: docker.DockerClient,
    image: str,
    tpch_data: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    compose_command()  # skips without docker compose
    monkeypatch.chdir(tmp_path)
    (tmp_path / "q3.yaml").write_text(yaml.safe_dump(q3_scenario(tpch_data), sort_keys=False))
    stack = tmp_path / "stack" / "compose.yaml"
    assert main(["compose", "q3.yaml", "-o", str(stack)]) == 0
    run_id = f"sqlcompose-{new_run_id()}"
    results = tmp_path / "results"
    env = {"TESTBED_RUN_ID": run_id, "TESTBED_DOCKER_IMAGE": image, "TESTBED_RESULTS": str(results)}
    compose_up_and_down(docker_client, stack, run_id, env, monkeypatch)
    assert_equals_duckdb(results / "tpch-q3", capsys)
