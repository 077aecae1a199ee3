"""Fixtures for tests against a real Docker engine: the client, the testbed image, runs
whose every container, volume and network is removed afterwards (even when a test or the
provider under test fails), and decoy containers that must survive."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import docker
import pytest
from docker.errors import DockerException, NotFound
from docker.models.containers import Container

from master.providers.docker import DockerProvider
from master.providers.node_container import LABEL_NODE, LABEL_RUN
from tests.support.docker import Decoys, new_run_id, remove_run, swarm_state

IMAGE = os.environ.get("TESTBED_DOCKER_IMAGE", "transient-testbed:latest")
LABEL_REQUIREMENTS = "org.transient-testbed.requirements"
"""The image's label holding the SHA-256 of the requirements it installs (containers/requirements.py)."""


DOCKER_TESTS = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests here share one engine and its one-node Swarm: under pytest-xdist's
    ``--dist loadgroup`` they run on one worker, one after another. First among the hooks, so
    that xdist's (which reads the marker) sees it: run alone, this folder's tests had gone to
    both workers at once (no ``@docker`` in their ids) and failed each other's starts."""
    for item in items:
        if DOCKER_TESTS in item.path.parents:
            item.add_marker(pytest.mark.xdist_group("docker"))


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
    built_from = docker_client.images.get(IMAGE).labels.get(LABEL_REQUIREMENTS)
    if built_from != image_requirements_sha():
        pytest.fail(
            f"image {IMAGE} was built from other requirements than pyproject.toml's "
            f"(label {LABEL_REQUIREMENTS}={built_from}); rebuild it: containers/build-images.sh"
        )
    return IMAGE


def image_requirements_sha() -> str:
    """What containers/build-images.sh writes into the image's label, for this checkout."""
    script = Path(__file__).resolve().parents[2] / "containers" / "requirements.py"
    done = subprocess.run([sys.executable, str(script), "--sha"], capture_output=True, text=True, check=True)
    return done.stdout.strip()


SWARM_BRIDGE = "docker_gwbridge"


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
