"""A replica added to a Swarm stack after it was deployed (``docker service scale``) holds
only the enrolment login every replica of its service shares (a service has one set of
secrets for all its tasks): it asks the master for a name, and joins the run with the broker
login and node key sealed for it, as the replicas deployed with the stack do."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import docker
import pytest

from testbed.app.cli import main
from tests.support.docker import assert_no_secret_in_env, deployed_stack, run_secrets, wait_for_event

pytestmark = [pytest.mark.docker, pytest.mark.e2e]

SCENARIO = """\
name: scaled
seed: 1
time_scale: 1
broker: embedded
cluster: {reserved: 1, transient: 2}
policy: {scheduler: fifo, strategy: spark}
jobs:
  - {workload: wordcount, size_mb: 4, maps: 4, reduces: 2}
"""


def stack_one_replica_short(directory: Path) -> Path:
    """The scenario's compose file, with one transient replica fewer than its cluster has:
    the master waits for the one the test adds."""
    scenarios = directory / "scenarios"
    scenarios.mkdir()
    (scenarios / "scaled.yaml").write_text(SCENARIO)
    stack = directory / "compose" / "scaled.yaml"
    stack.parent.mkdir()
    assert main(["compose", str(scenarios / "scaled.yaml"), "-o", str(stack)]) == 0
    text = stack.read_text()
    assert text.count("replicas: 2") == 1, text  # the transient service's
    stack.write_text(text.replace("replicas: 2", "replicas: 1"))
    return stack


def test_a_replica_added_to_a_stack_later_joins_with_a_login_of_its_own(
    docker_client: docker.DockerClient, single_node_swarm: None, image: str, tmp_path: Path
) -> None:
    stack_file = stack_one_replica_short(tmp_path)
    results = tmp_path / "results"
    results.mkdir()  # a bind mount's source must exist (Swarm rejects the task otherwise)
    env = {"TESTBED_DOCKER_IMAGE": image, "TESTBED_RESULTS": str(results)}
    env["TESTBED_SECRETS"] = str(tmp_path / "run.secrets")
    secrets = run_secrets(tmp_path / "run.secrets")
    journal = results / "scaled" / "events.jsonl"

    def scale_up_once_the_deployed_ones_are_up(stack: str) -> None:
        for node in ("reserved-0", "transient-0"):
            up = {"event": "node_up", "node": node}
            wait_for_event(docker_client, stack, journal, lambda e, up=up: up.items() <= e.items())
        scale = subprocess.run(
            ["docker", "service", "scale", "--detach", f"{stack}_transient=2"], capture_output=True, text=True
        )
        assert scale.returncode == 0, scale.stderr

    with deployed_stack(docker_client, stack_file, env, scale_up_once_the_deployed_ones_are_up) as stack:
        events: list[dict[str, Any]] = [json.loads(line) for line in journal.read_text().splitlines()]
        ups = [e["node"] for e in events if e["event"] == "node_up"]
        assert ups[-1] == "transient-1" and sorted(ups) == ["reserved-0", "transient-0", "transient-1"], ups
        containers = {e["node"]: e["container"] for e in events if e["event"] == "node_launching"}
        label = {"label": f"com.docker.stack.namespace={stack}"}
        stacked = docker_client.containers.list(all=True, filters=label)
        hosts = {c.attrs["Config"]["Hostname"] for c in stacked}
        assert set(containers.values()) <= hosts, (containers, hosts)
        summary = json.loads((results / "scaled" / "summary.json").read_text())
        assert summary["succeeded"] == summary["jobs"] == 1, summary
        assert_no_secret_in_env(stacked, secrets)
