"""Whole runs with containers as nodes: `--backend docker`, compose, and a Swarm stack."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any

import docker
import pytest

from master.providers.base import ForeignNodeError
from master.shell.run import run_scenario
from testbed.scenario.chaos import EvictSpec
from testbed.scenario.schema import SortJob
from testbed.workloads import sort
from tests.support.docker import (
    REPO,
    Decoys,
    assert_no_secret_in_env,
    assert_scenario_results,
    compose_command,
    deployed_stack,
    new_run_id,
    remove_run,
    run_leftovers,
    run_secrets,
)
from tests.support.runs import assert_exact
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = [pytest.mark.docker, pytest.mark.e2e]
QUICKSTART = REPO / "compose" / "quickstart.yaml"


async def test_container_killed_mid_job_output_exact_and_foreign_containers_refused(
    docker_client: docker.DockerClient,
    image: str,
    decoys: Decoys,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run_id = f"run-{new_run_id()}"  # distinct from the decoys' run ids
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_DOCKER_IMAGE", image)
    scenario = make_scenario(
        jobs=[{"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 2, "memory_mb": 64}]
    )
    victims: list[str] = []
    refusals: list[str] = []

    async def kill_and_attack(master: Any, node_id: str) -> None:
        await master.chaos.evict_now(EvictSpec(count=1), named=[node_id])
        for target in (decoys.unlabelled.name, decoys.other_run.name, decoys.other_run_node_id):
            try:
                await master.chaos.evict_now(EvictSpec(count=1), named=[target])
            except ForeignNodeError as error:
                refusals.append(str(error))

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_started" and record["class"] == "transient" and not victims:
            victims.append(record["node"])
            asyncio.get_running_loop().create_task(kill_and_attack(master, record["node"]))

    try:
        result = await run_scenario(settings_of(scenario), tmp_path, backend="docker", on_event=on_event)
        assert result.ok, result.summary
        assert result.summary["evictions"] == 1 and result.summary["relaunched_tasks"] > 0
        assert_exact(scenario, tmp_path)
        assert len(refusals) == 3 and all("refusing to evict" in r for r in refusals), refusals
        decoys.assert_alive()
        assert run_leftovers(docker_client, run_id) == []
    finally:
        remove_run(docker_client, run_id)


def test_compose_quickstart_end_to_end(
    docker_client: docker.DockerClient, image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the run's secrets as Docker secrets (compose: read-only bind mounts): the agents
    enrol, get their own credentials from the master and run the scenario exactly."""
    run_id = f"compose-{new_run_id()}"
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_DOCKER_IMAGE", image)
    monkeypatch.setenv("TESTBED_RESULTS", str(tmp_path))
    monkeypatch.setenv("TESTBED_SECRETS", str(tmp_path / "run.secrets"))
    secrets = run_secrets(tmp_path / "run.secrets")
    compose = [*compose_command(), "-f", str(QUICKSTART), "-p", run_id]
    try:
        up = subprocess.run([*compose, "up", "--exit-code-from", "master"], capture_output=True, text=True)
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        assert_scenario_results(tmp_path)
        project = {"label": f"com.docker.compose.project={run_id}"}
        assert_no_secret_in_env(docker_client.containers.list(all=True, filters=project), secrets)
    finally:
        subprocess.run([*compose, "down", "-v"], capture_output=True)
        remove_run(docker_client, run_id)
    assert run_leftovers(docker_client, run_id) == []


@pytest.mark.parametrize("name", ["quickstart", "eviction-storm"])
def test_swarm_stack(
    docker_client: docker.DockerClient, single_node_swarm: None, image: str, tmp_path: Path, name: str
) -> None:
    """A shipped compose file as a stack; in eviction-storm the chaos controller kills agents
    and launches replacements through the Swarm manager."""
    env = {"TESTBED_DOCKER_IMAGE": image, "TESTBED_RESULTS": str(tmp_path)}
    env["TESTBED_SECRETS"] = str(tmp_path / "run.secrets")
    secrets = run_secrets(tmp_path / "run.secrets")
    with deployed_stack(docker_client, REPO / "compose" / f"{name}.yaml", env) as stack:
        summary = assert_scenario_results(tmp_path, name)
        stacked = {"label": f"com.docker.stack.namespace={stack}"}
        assert_no_secret_in_env(docker_client.containers.list(all=True, filters=stacked), secrets)
        if name == "eviction-storm":
            evictions = (tmp_path / name / "evictions.csv").read_text()
            assert summary["evictions"] >= 2 and ",storm," in evictions, evictions


async def test_a_jobs_input_file_is_mounted_read_only_at_its_own_path(
    docker_client: docker.DockerClient, image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = f"inputs-{new_run_id()}"
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_DOCKER_IMAGE", image)
    data = tmp_path / "user data" / "my-sort.dat"
    data.parent.mkdir()
    with data.open("wb") as handle:
        sort.generate(SortJob(workload="sort", size_mb=1), 11, handle)
    scenario = make_scenario(
        cluster={"reserved": 1, "transient": 1, "heartbeat_interval": 0.2, "heartbeat_timeout": 5},
        jobs=[{"workload": "sort", "input": str(data), "maps": 2, "reduces": 2, "memory_mb": 64}],
    )
    mounts: list[dict[str, Any]] = []

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_started" and not mounts:
            container = docker_client.containers.get(f"testbed-{run_id}-{record['node']}")
            mounts.extend(m for m in container.attrs["Mounts"] if m["Type"] == "bind")

    try:
        result = await run_scenario(
            settings_of(scenario), tmp_path / "run", backend="docker", on_event=on_event
        )
        assert result.ok, result.summary
        assert_exact(scenario, tmp_path / "run")
        assert [(m["Source"], m["Destination"], m["RW"]) for m in mounts] == [
            (str(data.resolve()), str(data.resolve()), False)
        ]
        assert run_leftovers(docker_client, run_id) == []
    finally:
        remove_run(docker_client, run_id)
