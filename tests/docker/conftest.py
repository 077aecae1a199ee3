"""Fixtures for tests against a real Docker engine: the client, the testbed image, runs
whose every container, volume and network is removed afterwards (even when a test or the
provider under test fails), and decoy containers that must survive."""

from __future__ import annotations

import contextlib
import itertools
import os
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass

import docker
import pytest
from docker.errors import DockerException, NotFound
from docker.models.containers import Container

from master.providers.docker import LABEL_NODE, LABEL_RUN, DockerProvider
from testbed.node.cgroups import CgroupUnavailable, detect, hierarchy_path, remove_everywhere

IMAGE = os.environ.get("TESTBED_DOCKER_IMAGE", "transient-testbed:latest")
_run_numbers = itertools.count()


@pytest.fixture(scope="session")
def docker_client() -> Iterator[docker.DockerClient]:
    try:
        client = docker.from_env()
        client.ping()
    except DockerException as error:
        pytest.skip(f"no Docker engine answers ({error}); start one, e.g. with .ci/docker-setup.sh")
    yield client
    client.close()


@pytest.fixture(scope="session")
def image(docker_client: docker.DockerClient) -> str:
    try:
        docker_client.images.get(IMAGE)
    except NotFound:
        pytest.skip(f"image {IMAGE} is not built; run containers/build-images.sh")
    return IMAGE


SWARM_BRIDGE = "docker_gwbridge"


def swarm_state(client: docker.DockerClient) -> str:
    return client.info().get("Swarm", {}).get("LocalNodeState", "inactive")


@pytest.fixture
def single_node_swarm(docker_client: docker.DockerClient) -> Iterator[None]:
    """The engine as a Swarm manager: a single-node swarm made for the test (and left after
    it) when the engine is in none; a skip, with the reason, when ``docker swarm init``
    fails or the engine is a swarm's worker. Images are local: one node needs no registry."""
    if swarm_state(docker_client) != "inactive" and not docker_client.info()["Swarm"].get("ControlAvailable"):
        pytest.skip("this engine is in a swarm but not a manager: a stack cannot be deployed from here")
    created = swarm_state(docker_client) == "inactive"
    had_gateway_bridge = bool(docker_client.networks.list(names=[SWARM_BRIDGE]))
    if created:
        init = subprocess.run(
            ["docker", "swarm", "init", "--advertise-addr", "127.0.0.1"], capture_output=True, text=True
        )
        if init.returncode != 0:
            pytest.skip(f"docker swarm init is impossible here: {init.stderr.strip()}")
    try:
        yield
    finally:
        if created:
            subprocess.run(["docker", "swarm", "leave", "--force"], capture_output=True)
        if created and not had_gateway_bridge:  # swarm init made it; leave keeps it
            subprocess.run(["docker", "network", "rm", SWARM_BRIDGE], capture_output=True)


def new_run_id() -> str:
    """Unique per test process and call, so that leftovers of a crashed session never collide."""
    return f"pytest-{os.getpid()}-{next(_run_numbers)}"


def remove_run(client: docker.DockerClient, run_id: str) -> None:
    """Everything labelled with the run, and its CPU groups on the host: the safety net under
    DockerProvider.close()."""
    label = {"label": f"{LABEL_RUN}={run_id}"}
    for container in client.containers.list(all=True, filters=label):
        container.remove(force=True, v=True)
    with contextlib.suppress(CgroupUnavailable):
        remove_everywhere(hierarchy_path(detect().run_dir(run_id)))
    for volume in client.volumes.list(filters=label):
        volume.remove(force=True)
    for network in client.networks.list(filters=label):
        network.remove()


def run_leftovers(client: docker.DockerClient, run_id: str) -> list[str]:
    label = {"label": f"{LABEL_RUN}={run_id}"}
    return [
        *(f"container {c.name}" for c in client.containers.list(all=True, filters=label)),
        *(f"volume {v.name}" for v in client.volumes.list(filters=label)),
        *(f"network {n.name}" for n in client.networks.list(filters=label)),
    ]


@pytest.fixture
async def provider(docker_client: docker.DockerClient, image: str) -> AsyncIterator[DockerProvider]:
    run_id = new_run_id()
    provider = DockerProvider(run_id, image)
    try:
        yield provider
    finally:
        try:
            await provider.close()
        finally:
            remove_run(docker_client, run_id)


@pytest.fixture
def start_container(docker_client: docker.DockerClient, image: str) -> Iterator[Callable[..., Container]]:
    """Start a container outside any provider (a decoy); removed after the test."""
    started: list[Container] = []

    def start(name: str, labels: dict[str, str] | None = None) -> Container:
        container = docker_client.containers.run(
            image, ["sleep", "infinity"], name=name, labels=labels or {}, detach=True
        )
        started.append(container)
        return container

    yield start
    for container in started:
        with contextlib.suppress(NotFound):
            container.remove(force=True, v=True)


@dataclass(frozen=True)
class Decoys:
    """One container of another run (with a node id this run also uses) and one unlabelled."""

    other_run: Container
    unlabelled: Container
    other_run_node_id: str

    def assert_alive(self) -> None:
        for container in (self.other_run, self.unlabelled):
            container.reload()
            assert container.status == "running", f"decoy {container.name} was touched"


@pytest.fixture
def decoys(start_container: Callable[..., Container]) -> Decoys:
    other_run = new_run_id()
    node_id = "n1"
    return Decoys(
        other_run=start_container(
            f"testbed-{other_run}-{node_id}", {LABEL_RUN: other_run, LABEL_NODE: node_id}
        ),
        unlabelled=start_container(f"decoy-{other_run}"),
        other_run_node_id=node_id,
    )


@dataclass(frozen=True)
class ContainerEvent:
    action: str
    attributes: dict[str, str]


def container_events(client: docker.DockerClient, container_id: str, since: float) -> list[ContainerEvent]:
    """The engine's events for one container from `since` until now (the engine's record,
    not the provider's account of what it did)."""
    until = int(time.time()) + 1
    stream = client.events(
        since=int(since), until=until, decode=True, filters={"type": "container", "container": container_id}
    )
    return [ContainerEvent(e["Action"], e["Actor"]["Attributes"]) for e in stream]
