"""AttachProvider against a real engine: the nodes of a compose project, as the master sees them."""

from __future__ import annotations

import asyncio
import io
import json
import stat
import tarfile
import time
from pathlib import Path

import docker
import pytest
from docker.models.containers import Container, ContainerCollection
from docker.types import Mount

from master.providers.attach import AttachProvider
from master.providers.base import ForeignNodeError, NodeSpec
from master.providers.container_secrets import SECRETS_FILE, image_uid
from master.providers.node_container import AGENT_OVERHEAD_MB, LABEL_CLASS, LABEL_NODE, LABEL_RUN
from tests.support.docker import Decoys, container_events, new_run_id, remove_run, wait_healthy

pytestmark = [pytest.mark.docker, pytest.mark.timeout(180)]
MiB = 1024 * 1024


def compose_like_run(client: docker.DockerClient, image: str, run_id: str) -> None:
    """What a compose file starts: a broker and an agent labelled with the run and its class
    on one network (the agent only has to be a running template here)."""
    network = client.networks.create(f"testbed-{run_id}", labels={LABEL_RUN: run_id})
    client.containers.run(
        image,
        ["broker"],
        name=f"{run_id}-broker",
        network=network.name,
        labels={LABEL_RUN: run_id},
        detach=True,
    )
    client.containers.run(
        image,
        ["sleep", "infinity"],
        network=network.name,
        labels={LABEL_RUN: run_id, LABEL_CLASS: "transient"},
        environment={"TESTBED_SECRETS_FILE": "/run/secrets/testbed-enrol"},  # a new node has its own
        detach=True,
    )


def node_container(client: docker.DockerClient, run_id: str, node_id: str) -> Container:
    (container,) = client.containers.list(
        all=True, filters={"label": [f"{LABEL_RUN}={run_id}", f"{LABEL_NODE}={node_id}"]}
    )
    return container


async def assert_evicted_with_sigkill(
    client: docker.DockerClient, provider: AttachProvider, node_id: str, container: Container
) -> None:
    since = time.time() - 1
    await provider.evict(node_id)
    kills = [e for e in container_events(client, container.id, since) if e.action == "kill"]
    assert [e.attributes["signal"] for e in kills] == ["9"]
    assert not provider.owns(node_id)


async def test_a_replacement_node_is_healthy_and_evicted_with_sigkill(
    docker_client: docker.DockerClient, image: str, decoys: Decoys
) -> None:
    run_id = new_run_id()
    provider = AttachProvider(run_id)
    try:
        compose_like_run(docker_client, image, run_id)
        since = time.time() - 1
        command = [
            *("agent", "--run", run_id, "--node-id", "transient-7", "--node-class", "transient"),
            *("--broker", f"mqtt://{run_id}-broker:1883", "--slots", "1", "--memory-mb", "64"),
        ]
        await provider.launch(NodeSpec("transient-7", "transient", 1, 64, None, tuple(command)))
        node = node_container(docker_client, run_id, "transient-7")
        # The image's healthcheck probes the agent's port: on Swarm an unhealthy task is stopped.
        await asyncio.to_thread(wait_healthy, docker_client, node, since)
        assert node.attrs["HostConfig"]["Memory"] == (64 + AGENT_OVERHEAD_MB) * MiB
        assert provider.owns("transient-7")

        for foreign in (decoys.unlabelled.name, decoys.other_run.name):
            with pytest.raises(ForeignNodeError):
                await provider.evict(foreign)
        decoys.assert_alive()

        await assert_evicted_with_sigkill(docker_client, provider, "transient-7", node)
    finally:
        try:
            await provider.close()
        finally:
            remove_run(docker_client, run_id)


def test_a_node_removed_while_the_run_is_listed_does_not_break_a_lookup(
    docker_client: docker.DockerClient, image: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two releases at once (an autoscaler draining two nodes): one removes its container
    while the other lists the run's containers; the lookup must not fail on it."""
    run_id = new_run_id()
    labels = {LABEL_RUN: run_id, LABEL_CLASS: "transient"}
    try:
        for hostname in ("n1", "n2"):
            docker_client.containers.run(
                image, ["sleep", "infinity"], hostname=hostname, labels=labels, detach=True
            )
        (removed_meanwhile,) = docker_client.containers.list(
            filters={"label": f"{LABEL_RUN}={run_id}"}, limit=1
        )
        survivor = "n2" if removed_meanwhile.attrs["Config"]["Hostname"] == "n1" else "n1"
        inspect = ContainerCollection.get
        removals: list[str] = []

        def get_after_a_concurrent_removal(collection: ContainerCollection, container_id: str) -> Container:
            if not removals:
                removals.append(removed_meanwhile.id)
                removed_meanwhile.remove(force=True)
            return inspect(collection, container_id)

        monkeypatch.setattr(ContainerCollection, "get", get_after_a_concurrent_removal)
        assert AttachProvider(run_id).owns(survivor)
    finally:
        monkeypatch.undo()
        remove_run(docker_client, run_id)


async def test_a_new_node_mounts_the_jobs_inputs_of_a_live_node_and_has_secrets_of_its_own(
    docker_client: docker.DockerClient, image: str, tmp_path: Path
) -> None:
    """A replacement may run a map task that reads the user's file: it gets the same read-only
    bind mounts as the compose file gave the node it copies its setup from, but not that
    node's Docker secret (compose binds it under /run/secrets); its own login and key are in
    a file of its own, and not in its environment."""
    run_id = new_run_id()
    data = tmp_path / "my data.dat"
    data.write_bytes(b"input")
    enrol = tmp_path / "enrol.json"
    enrol.write_text('{"TESTBED_MQTT_USERNAME": "enrol"}')
    own = {"TESTBED_MQTT_USERNAME": "transient-3", "TESTBED_MQTT_PASSWORD": "pw3", "TESTBED_NODE_KEY": "key3"}
    provider = AttachProvider(run_id)
    try:
        docker_client.containers.run(
            image,
            ["sleep", "infinity"],
            labels={LABEL_RUN: run_id, LABEL_CLASS: "transient"},
            mounts=[
                Mount(str(data), str(data), type="bind", read_only=True),
                Mount("/run/secrets/testbed-enrol", str(enrol), type="bind", read_only=True),
            ],
            environment={"TESTBED_SECRETS_FILE": "/run/secrets/testbed-enrol"},
            detach=True,
        )
        await provider.launch(NodeSpec("transient-3", "transient", 1, 64, None, ("sleep", "infinity"), own))
        node = node_container(docker_client, run_id, "transient-3")
        binds = [
            (m["Source"], m["Destination"], m["RW"]) for m in node.attrs["Mounts"] if m["Type"] == "bind"
        ]
        assert binds == [(str(data), str(data), False)]
        env = node.attrs["Config"]["Env"]
        assert [v for v in env if v.startswith("TESTBED_")] == [f"TESTBED_SECRETS_FILE={SECRETS_FILE}"]
        stream, _ = node.get_archive(SECRETS_FILE)
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as archive:
            (member,) = archive.getmembers()
            held = archive.extractfile(member)
            assert held is not None and json.loads(held.read()) == own
        assert (member.uid, stat.S_IMODE(member.mode)) == (image_uid(node), 0o600)  # its user's alone
    finally:
        try:
            await provider.close()
        finally:
            remove_run(docker_client, run_id)


async def test_an_adopted_node_is_evicted_by_the_name_the_master_gave_it(
    docker_client: docker.DockerClient, image: str
) -> None:
    """A compose agent is a container whose hostname is its short id; the master names it
    ``transient-0`` (``NodeStarts.adopt``) and evicts it by that name."""
    run_id = new_run_id()
    provider = AttachProvider(run_id)
    try:
        agent = docker_client.containers.run(
            image, ["sleep", "infinity"], labels={LABEL_RUN: run_id, LABEL_CLASS: "transient"}, detach=True
        )
        host = agent.attrs["Config"]["Hostname"]
        assert not provider.owns("transient-0")  # not named yet
        provider.adopt("transient-0", host)
        assert provider.owns("transient-0")
        await assert_evicted_with_sigkill(docker_client, provider, "transient-0", agent)
    finally:
        remove_run(docker_client, run_id)
