"""A scheduler and a workload plugin from a directory outside the package, in containers:
``--backend docker`` (the plugin directory mounted read-only at its own path and on the
workers' PYTHONPATH), ``testbed compose`` + docker-compose (mounted the same way in
the master's and the agents' services) and the same compose file as a stack on a
single-node Swarm (bind mounts of the one node's directories; the image is local, so no
registry). Outputs exact against the workload's reference, the run labelled with both
plugins' versions, no container left."""

from __future__ import annotations

import json
import re
from pathlib import Path

import docker
import pytest

from master.shell.run import run_scenario
from testbed.app.cli import main
from testbed.app.report.compare import compare_runs
from testbed.scenario.schema import load_scenario
from testbed.workloads.check import check_output
from tests.support.docker import (
    compose_command,
    compose_up_and_down,
    deployed_stack,
    new_run_id,
    remove_run,
    run_leftovers,
)
from tests.support.plugins import write_doc_files
from tests.support.settings import settings_of

pytestmark = [pytest.mark.docker, pytest.mark.e2e]


@pytest.fixture
def plugins(tmp_path: Path, isolated_path: None) -> Path:
    """The doc's plugins and scenarios in a directory of their own, importable for this test."""
    directory = tmp_path / "my-plugins"
    directory.mkdir()
    write_doc_files(directory)
    return directory


def assert_labelled_and_exact(run_dir: Path, scenario_file: Path) -> None:
    scenario = load_scenario(scenario_file)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["succeeded"] == summary["jobs"] == 1, summary
    plugins = summary["plugins"]
    assert plugins["scheduler"]["import_path"] == "random_placement:RandomScheduler"
    workload = plugins["workloads"]["inverted_index:InvertedIndex"]
    assert re.fullmatch(r"sha256:[0-9a-f]{12}", workload["version"])
    assert check_output(scenario.jobs[0], scenario.seed * 1000, run_dir / "outputs" / "j000") == []
    assert f"inverted_index:InvertedIndex {workload['version']}" in compare_runs([run_dir]).to_markdown()


async def test_the_docs_scheduler_and_workload_run_in_containers(
    docker_client: docker.DockerClient,
    image: str,
    plugins: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_id = f"wlplugin-{new_run_id()}"
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_DOCKER_IMAGE", image)
    run_dir = tmp_path / "run"
    try:
        result = await run_scenario(
            settings_of(load_scenario(plugins / "experiment.yaml")), run_dir, backend="docker"
        )
        assert result.ok, result.summary
        assert_labelled_and_exact(run_dir, plugins / "experiment.yaml")
        assert run_leftovers(docker_client, run_id) == []
    finally:
        remove_run(docker_client, run_id)


def test_the_docs_scheduler_and_workload_run_through_testbed_compose(
    docker_client: docker.DockerClient,
    image: str,
    plugins: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    compose_command()  # skips without docker compose
    monkeypatch.chdir(plugins)
    stack = plugins / "stack" / "compose.yaml"  # compose makes the directory
    assert main(["compose", "experiment.yaml", "-o", str(stack)]) == 0
    run_id = f"wlcompose-{new_run_id()}"
    results = tmp_path / "results"
    env = {"TESTBED_RUN_ID": run_id, "TESTBED_DOCKER_IMAGE": image, "TESTBED_RESULTS": str(results)}
    compose_up_and_down(docker_client, stack, run_id, env, monkeypatch)
    assert_labelled_and_exact(results / "my-experiment", plugins / "experiment.yaml")


def test_the_docs_scheduler_and_workload_run_as_a_swarm_stack(
    docker_client: docker.DockerClient,
    single_node_swarm: None,
    image: str,
    plugins: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(plugins)
    stack = plugins / "stack" / "compose.yaml"  # compose makes the directory
    assert main(["compose", "experiment.yaml", "-o", str(stack)]) == 0
    results = tmp_path / "results"
    results.mkdir()  # Swarm does not create a bind mount's source
    env = {"TESTBED_DOCKER_IMAGE": image, "TESTBED_RESULTS": str(results)}
    with deployed_stack(docker_client, stack, env):
        assert_labelled_and_exact(results / "my-experiment", plugins / "experiment.yaml")
