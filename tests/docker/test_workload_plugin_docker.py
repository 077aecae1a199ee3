"""A workload plugin in containers (``--backend docker``): its directory mounted read-only at
its own path and on the workers' PYTHONPATH; the output exact against its reference."""

from __future__ import annotations

import sys
from pathlib import Path

import docker
import pytest

from master.run import run_scenario
from testbed.scenario import load_scenario
from testbed.workloads.check import check_output
from tests.docker.conftest import new_run_id, remove_run, run_leftovers
from tests.test_plugin_docs import write_doc_files

pytestmark = [pytest.mark.docker, pytest.mark.e2e]


async def test_the_docs_inverted_index_runs_in_containers(
    docker_client: docker.DockerClient, image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = f"wlplugin-{new_run_id()}"
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_DOCKER_IMAGE", image)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", ":".join(p for p in sys.path if p))
    plugins = tmp_path / "my-workloads"
    plugins.mkdir()
    write_doc_files(plugins)
    scenario = load_scenario(plugins / "index.yaml", ["cluster.heartbeat_timeout=5"])
    try:
        result = await run_scenario(scenario, tmp_path / "run", backend="docker")
        assert result.ok, result.summary
        assert (
            check_output(scenario.jobs[0], scenario.seed * 1000, tmp_path / "run" / "outputs" / "j000") == []
        )
        assert run_leftovers(docker_client, run_id) == []
    finally:
        remove_run(docker_client, run_id)
        sys.modules.pop("inverted_index", None)
