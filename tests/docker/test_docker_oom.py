"""In a container with a memory limit, a worker the kernel's OOM killer kills is ``oom``."""

from __future__ import annotations

import json
from pathlib import Path

import docker
import pytest

from master.providers.node_container import LABEL_RUN
from tests.support.docker import new_run_id, remove_run

pytestmark = [pytest.mark.docker]
REPO = Path(__file__).resolve().parents[2]
PROBE = """
import asyncio, json
from tests.support.allocating_worker import run_allocating_worker
print(json.dumps([asyncio.run(run_allocating_worker(mb)) for mb in (400, 10)]))
"""


def test_a_worker_killed_by_the_kernels_oom_killer_is_oom(
    docker_client: docker.DockerClient, image: str
) -> None:
    """This checkout's agent code, mounted read-only into the image, in a 160 MiB container
    without swap: the 400 MiB worker is killed by the kernel, the 10 MiB one succeeds."""
    run_id = new_run_id()
    try:
        output = docker_client.containers.run(
            image,
            ["-c", PROBE],
            entrypoint="python",
            name=f"testbed-oom-{run_id}",
            labels={LABEL_RUN: run_id},
            mem_limit="160m",
            memswap_limit="160m",
            volumes={str(REPO): {"bind": "/src", "mode": "ro"}},
            working_dir="/src",
            environment={"PYTHONPATH": "/src"},
            remove=True,
        )
        big, small = json.loads(output.decode().strip().splitlines()[-1])
    finally:
        remove_run(docker_client, run_id)
    assert big["failure"] == "oom" and "OOM killer" in big["error"], big
    assert small["state"] == "succeeded", small
