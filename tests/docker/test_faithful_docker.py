"""A faithful run with containers as nodes: each container's CPU limit is its share of the
scale model (nano_cpus), and its agent paces its bytes on the node's bandwidth."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import docker
import pytest

from master.run import run_scenario
from tests.conftest import make_scenario
from tests.docker.conftest import new_run_id, remove_run, run_leftovers
from tests.e2e.test_workloads_run import assert_exact

pytestmark = [pytest.mark.docker, pytest.mark.e2e]


async def test_dilated_containers_get_their_share_and_outputs_stay_exact(
    docker_client: docker.DockerClient, image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_id = f"faithful-{new_run_id()}"
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_DOCKER_IMAGE", image)
    scenario = make_scenario(
        cluster={
            "reserved": {"count": 1, "slots": 2, "memory_mb": 256, "network_mbps": 400},
            "transient": {"count": 2, "slots": 1, "cpus": 0.5, "memory_mb": 256, "disk_mb_s": 100},
            "heartbeat_timeout": 10,
        },
        jobs=[{"workload": "sort", "size_mb": 4, "maps": 4, "reduces": 2, "memory_mb": 1}],
        fidelity={"mode": "faithful", "dilation": 2},
    )
    limits: dict[str, tuple[int, list[str]]] = {}

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "node_up":
            labels = [f"testbed.run={run_id}", f"testbed.node={record['node']}"]
            [container] = docker_client.containers.list(filters={"label": labels})
            limits[record["node"]] = (container.attrs["HostConfig"]["NanoCpus"], container.attrs["Args"])

    try:
        result = await run_scenario(scenario, tmp_path, backend="docker", on_event=on_event)
        assert result.ok, result.summary
        assert_exact(scenario, tmp_path)
    finally:
        remove_run(docker_client, run_id)
    assert run_leftovers(docker_client, run_id) == []
    assert limits["reserved-0"][0] == 1_000_000_000  # 2 cores / dilation 2
    assert limits["transient-0"][0] == 250_000_000  # 0.5 core / 2
    assert "--network-mbps" in limits["reserved-0"][1] and "200" in limits["reserved-0"][1]
    assert "--disk-mb-s" in limits["transient-1"][1] and "50" in limits["transient-1"][1]
