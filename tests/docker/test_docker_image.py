"""The testbed image: its roles (broker, agent, plain commands), healthcheck and user."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import aiomqtt
import docker
import pytest
from docker.models.containers import Container

from master.providers.node_container import LABEL_RUN
from tests.support.docker import new_run_id, remove_run, wait_healthy

pytestmark = [pytest.mark.docker, pytest.mark.timeout(120)]

CREDENTIALS = {"TESTBED_MQTT_USERNAME": "testbed", "TESTBED_MQTT_PASSWORD": "s3cret"}


@pytest.fixture
def run_id(docker_client: docker.DockerClient) -> Iterator[str]:
    """A run label for this test's containers and network, all removed afterwards."""
    run_id = new_run_id()
    try:
        yield run_id
    finally:
        remove_run(docker_client, run_id)


def address_of(container: Container) -> str:
    container.reload()
    (settings,) = container.attrs["NetworkSettings"]["Networks"].values()
    return settings["IPAddress"]


async def test_broker_role_is_healthy_and_requires_the_login(
    docker_client: docker.DockerClient, image: str, run_id: str
) -> None:
    since = time.time() - 1
    broker = docker_client.containers.run(
        image, ["broker"], environment=CREDENTIALS, labels={LABEL_RUN: run_id}, detach=True
    )
    await asyncio.to_thread(wait_healthy, docker_client, broker, since)
    host = address_of(broker)
    async with aiomqtt.Client(
        host, username=CREDENTIALS["TESTBED_MQTT_USERNAME"], password=CREDENTIALS["TESTBED_MQTT_PASSWORD"]
    ) as client:
        await client.publish("tb/test", b"hello", qos=1)
    with pytest.raises(aiomqtt.MqttError):
        async with aiomqtt.Client(host):
            pass


def test_agent_role_serves_its_port_and_is_healthy(
    docker_client: docker.DockerClient, image: str, run_id: str
) -> None:
    network = docker_client.networks.create(f"testbed-{run_id}", labels={LABEL_RUN: run_id})
    common = {"network": network.name, "labels": {LABEL_RUN: run_id}, "detach": True}
    docker_client.containers.run(
        image, ["broker"], name=f"{run_id}-broker", environment=CREDENTIALS, **common
    )
    since = time.time() - 1
    agent = docker_client.containers.run(
        image,
        [
            *("agent", "--run", run_id, "--node-id", "t001", "--node-class", "transient"),
            *("--broker", f"mqtt://{run_id}-broker:1883", "--slots", "1", "--memory-mb", "64"),
            *("--data-dir", "/data", "--listen", "0.0.0.0", "--advertise", "t001", "--port", "7171"),
        ],
        hostname="t001",
        environment={**CREDENTIALS, "TESTBED_RUN_TOKEN": "token"},
        **common,
    )
    wait_healthy(docker_client, agent, since)
    assert agent.exec_run(["cat", "/tmp/testbed-probe"]).output.decode().split() == ["agent", "7171"]


def test_runs_as_a_non_root_user_and_passes_other_commands(
    docker_client: docker.DockerClient, image: str
) -> None:
    output = docker_client.containers.run(
        image, ["sh", "-c", "id -u; testbed --help >/dev/null && echo cli"], remove=True
    )
    assert output.decode().split() == ["10001", "cli"]
