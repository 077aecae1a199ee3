"""A user's own scenario (own input file, Weibull evictions, a storm) through `testbed compose`
and `docker-compose up`: exact outputs, identical to the local backend's."""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path

import docker
import pytest

from master.shell.run import run_scenario
from testbed.app.cli import main
from testbed.scenario.schema import SortJob, load_scenario
from testbed.workloads import sort
from tests.support.docker import compose_command, new_run_id, remove_run, run_leftovers
from tests.support.runs import assert_exact
from tests.support.settings import settings_of

pytestmark = [pytest.mark.docker, pytest.mark.e2e]

SCENARIO = """\
name: mine
seed: 5
time_scale: 60
cluster:
  reserved: {count: 1, memory_mb: 256}
  transient: {count: 2, memory_mb: 256}
  heartbeat_interval: 0.2
  heartbeat_timeout: 5
chaos:
  transient: {lifetime: {weibull: {shape: 0.7, scale: 5m}}, replace: true, provisioning_delay: 10s}
  storms: [{at: 0s, evict: {count: 1}}]  # at the run's start: before any job can have ended
jobs:
  - {workload: sort, input: "../my data/my-sort.dat", maps: 2, reduces: 2, memory_mb: 64}
  - {workload: wordcount, size_mb: 2, maps: 2, reduces: 2, memory_mb: 64, submit_at: 1m}
"""


def digests(outputs: Path) -> dict[str, str]:
    return {
        str(path.relative_to(outputs)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(outputs.rglob("*"))
        if path.is_file()
    }


async def test_user_scenario_through_testbed_compose_matches_the_local_backend(
    docker_client: docker.DockerClient, image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "my data" / "my-sort.dat"
    data.parent.mkdir()
    with data.open("wb") as handle:
        sort.generate(SortJob(workload="sort", size_mb=1), 11, handle)
    scenario_file = tmp_path / "exp" / "mine.yaml"
    scenario_file.parent.mkdir()
    scenario_file.write_text(SCENARIO)
    monkeypatch.chdir(scenario_file.parent)  # the input is relative to the user's directory
    stack = tmp_path / "stack" / "compose.yaml"
    stack.parent.mkdir()
    assert main(["compose", "mine.yaml", "-o", str(stack)]) == 0

    run_id = f"usercompose-{new_run_id()}"
    results = tmp_path / "results"
    env = {"TESTBED_RUN_ID": run_id, "TESTBED_DOCKER_IMAGE": image, "TESTBED_RESULTS": str(results)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    compose = [*compose_command(), "-f", str(stack), "-p", run_id]
    try:
        up = subprocess.run(
            [*compose, "up", "--exit-code-from", "master", "master"], capture_output=True, text=True
        )
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
    finally:
        subprocess.run([*compose, "down", "-v"], capture_output=True)
        remove_run(docker_client, run_id)
    assert run_leftovers(docker_client, run_id) == []

    scenario = load_scenario(scenario_file)
    on_compose = results / "mine"
    summary = json.loads((on_compose / "summary.json").read_text())
    assert summary["succeeded"] == summary["jobs"] == 2, summary
    assert ",storm," in (on_compose / "evictions.csv").read_text()
    assert_exact(scenario, on_compose)

    monkeypatch.delenv("TESTBED_RUN_ID")
    local = await run_scenario(settings_of(scenario), tmp_path / "local")
    assert local.ok, local.summary
    assert_exact(scenario, tmp_path / "local")
    on_docker = digests(on_compose / "outputs")
    assert len(on_docker) == 4 and on_docker == digests(tmp_path / "local" / "outputs")  # 2 jobs x 2 parts
