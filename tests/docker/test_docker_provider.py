"""DockerProvider against a real engine: limits and labels, eviction, release, cleanup,
and refusal to touch anything that is not labelled with its run."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable

import docker
import pytest
from docker.errors import NotFound
from docker.models.containers import Container

from master.providers.base import ForeignNodeError, NodeSpec
from master.providers.docker import DockerProvider, ForeignResourceError, NodeExistsError, UnknownNodeError
from master.providers.node_container import (
    AGENT_OVERHEAD_MB,
    AGENT_PORT,
    DATA_DIR,
    LABEL_CLASS,
    LABEL_NODE,
    LABEL_RUN,
)
from testbed.node.processes import SECRETS_FILE_ENV
from tests.support.docker import Decoys, container_events, run_leftovers

pytestmark = [pytest.mark.docker, pytest.mark.timeout(120)]

MiB = 1024 * 1024
# A node process that says when it is ready and, on SIGTERM, drains and exits 0: an exit
# code of 0 proves a graceful stop, 137 (128 + SIGKILL) a kill.
NODE_SCRIPT = """
import signal, sys, time
def drain(signum, frame):
    print("draining", flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, drain)
print("ready", flush=True)
while True:
    time.sleep(3600)
"""
NODE_COMMAND = ("python3", "-c", NODE_SCRIPT)


def node_container(client: docker.DockerClient, provider: DockerProvider, node_id: str) -> Container:
    (container,) = client.containers.list(
        all=True, filters={"label": [f"{LABEL_RUN}={provider.run_id}", f"{LABEL_NODE}={node_id}"]}
    )
    return container


def wait_for_line(container: Container, text: str) -> None:
    """Block until the container prints `text` (its readiness), failing if it exits first."""
    for line in container.logs(stream=True, follow=True):
        if text in line.decode():
            return
    raise AssertionError(f"{container.name} exited before printing {text!r}: {container.logs().decode()}")


async def launch_ready(
    client: docker.DockerClient, provider: DockerProvider, node_id: str, **limits: float
) -> Container:
    await provider.launch(
        NodeSpec(
            node_id,
            "transient",
            slots=2,
            memory_mb=int(limits.get("memory_mb", 128)),
            cpus=limits.get("cpus"),
            command=NODE_COMMAND,
            env={"TESTBED_RUN_TOKEN": "secret"},
        )
    )
    container = node_container(client, provider, node_id)
    await asyncio.to_thread(wait_for_line, container, "ready")
    return container


def cgroup_read(container: Container, v2_file: str, v1_command: str) -> str:
    """A cgroup value as the container's processes see it (cgroup v2, else v1)."""
    result = container.exec_run(["sh", "-c", f"cat /sys/fs/cgroup/{v2_file} 2>/dev/null || {v1_command}"])
    assert result.exit_code == 0, result.output
    return result.output.decode().strip()


def data_volume(container: Container) -> str:
    (mount,) = [m for m in container.attrs["Mounts"] if m["Destination"] == DATA_DIR]
    assert mount["Type"] == "volume"
    return mount["Name"]


async def test_launch_sets_labels_limits_network_and_data_volume(
    docker_client: docker.DockerClient, provider: DockerProvider
) -> None:
    container = await launch_ready(docker_client, provider, "n1", memory_mb=256, cpus=0.5)

    config, host = container.attrs["Config"], container.attrs["HostConfig"]
    assert config["Labels"][LABEL_RUN] == provider.run_id
    assert config["Labels"][LABEL_NODE] == "n1"
    assert config["Labels"][LABEL_CLASS] == "transient"
    limit = (256 + AGENT_OVERHEAD_MB) * MiB
    assert host["Memory"] == limit
    assert host["MemorySwap"] == limit  # no swap on top of the limit
    assert host["NanoCpus"] == 500_000_000
    # its secrets come in a file the agent deletes, never through the environment
    assert f"{SECRETS_FILE_ENV}=/run/testbed-secrets/agent.json" in config["Env"]
    assert not [v for v in config["Env"] if v.startswith("TESTBED_RUN_TOKEN=")], config["Env"]
    assert config["Hostname"] == "n1"
    assert config["Cmd"][-8:] == [
        *("--data-dir", DATA_DIR, "--listen", "0.0.0.0", "--advertise", "n1", "--port", str(AGENT_PORT))
    ]
    # The kernel enforces the limits, as the container's own processes see them.
    v1_memory = "cat /sys/fs/cgroup/memory/memory.limit_in_bytes"
    assert int(cgroup_read(container, "memory.max", v1_memory)) == limit
    v1_cpu = "echo $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us) $(cat /sys/fs/cgroup/cpu/cpu.cfs_period_us)"
    quota, period = map(int, cgroup_read(container, "cpu.max", v1_cpu).split())
    assert quota / period == 0.5

    (network,) = container.attrs["NetworkSettings"]["Networks"]
    assert network == f"testbed-{provider.run_id}"
    assert docker_client.networks.get(network).attrs["Labels"][LABEL_RUN] == provider.run_id
    volume = docker_client.volumes.get(data_volume(container))
    assert volume.attrs["Labels"][LABEL_RUN] == provider.run_id
    # The agent (not root) can spill to its node-local disk.
    assert container.exec_run(["sh", "-c", f"id -u && touch {DATA_DIR}/spill"]).output.decode().strip() != "0"
    assert container.exec_run(["test", "-f", f"{DATA_DIR}/spill"]).exit_code == 0
    assert provider.owns("n1")


async def test_nodes_reach_each_other_by_node_id(
    docker_client: docker.DockerClient, provider: DockerProvider
) -> None:
    first = await launch_ready(docker_client, provider, "r001")
    second = await launch_ready(docker_client, provider, "t001")
    second.reload()
    (settings,) = second.attrs["NetworkSettings"]["Networks"].values()
    lookup = first.exec_run(["python3", "-c", "import socket; print(socket.gethostbyname('t001'))"])
    assert lookup.output.decode().strip() == settings["IPAddress"]


async def test_no_cpu_limit_when_cpus_unset(
    docker_client: docker.DockerClient, provider: DockerProvider
) -> None:
    container = await launch_ready(docker_client, provider, "n1")
    assert container.attrs["HostConfig"]["NanoCpus"] == 0


async def test_evict_is_sigkill_and_destroys_the_node_disk(
    docker_client: docker.DockerClient, provider: DockerProvider
) -> None:
    container = await launch_ready(docker_client, provider, "n1")
    volume = data_volume(container)
    since = time.time() - 1

    await provider.evict("n1")

    events = container_events(docker_client, container.id, since)
    signals = [e.attributes["signal"] for e in events if e.action == "kill"]
    assert signals and set(signals) == {"9"}  # SIGKILL only: the node gets no chance to drain
    (died,) = [e for e in events if e.action == "die"]
    assert died.attributes["exitCode"] == "137"
    assert "destroy" in [e.action for e in events]
    with pytest.raises(NotFound):
        docker_client.volumes.get(volume)
    assert not provider.owns("n1")


async def test_release_stops_gracefully_then_removes(
    docker_client: docker.DockerClient, provider: DockerProvider
) -> None:
    container = await launch_ready(docker_client, provider, "n1")
    volume = data_volume(container)
    since = time.time() - 1

    await provider.release("n1")

    events = container_events(docker_client, container.id, since)
    signals = [e.attributes["signal"] for e in events if e.action == "kill"]
    assert signals == ["15"]  # SIGTERM only: no SIGKILL was needed
    (died,) = [e for e in events if e.action == "die"]
    assert died.attributes["exitCode"] == "0"
    with pytest.raises(NotFound):
        docker_client.containers.get(container.id)
    with pytest.raises(NotFound):
        docker_client.volumes.get(volume)


async def test_evict_of_a_node_that_already_exited_removes_it(
    docker_client: docker.DockerClient, provider: DockerProvider
) -> None:
    await provider.launch(NodeSpec("n1", "transient", 1, 64, None, ("true",)))
    container = node_container(docker_client, provider, "n1")
    assert container.wait()["StatusCode"] == 0
    await provider.evict("n1")
    with pytest.raises(NotFound):
        docker_client.containers.get(container.id)


async def test_close_removes_the_run_and_nothing_else(
    docker_client: docker.DockerClient, provider: DockerProvider, decoys: Decoys
) -> None:
    for node_id in ("r001", "t001", "t002"):
        await provider.launch(NodeSpec(node_id, "transient", 1, 64, None, NODE_COMMAND))
    assert len(run_leftovers(docker_client, provider.run_id)) == 3 + 3 + 1  # containers, volumes, network

    await provider.close()

    assert run_leftovers(docker_client, provider.run_id) == []
    decoys.assert_alive()


async def test_refuses_to_touch_containers_of_other_runs_or_unlabelled(
    docker_client: docker.DockerClient, provider: DockerProvider, decoys: Decoys
) -> None:
    for name in (decoys.other_run.name, decoys.unlabelled.name, decoys.other_run.id):
        with pytest.raises(ForeignNodeError, match="refusing to touch"):
            await provider.evict(name)
        with pytest.raises(ForeignNodeError, match="refusing to touch"):
            await provider.release(name)
        assert not provider.owns(name)
    # The other run's node id means nothing to this run.
    with pytest.raises(UnknownNodeError):
        await provider.evict(decoys.other_run_node_id)
    assert not provider.owns(decoys.other_run_node_id)
    decoys.assert_alive()


async def test_refuses_a_container_squatting_on_a_node_name(
    docker_client: docker.DockerClient,
    provider: DockerProvider,
    start_container: Callable[..., Container],
) -> None:
    squatter = start_container(f"testbed-{provider.run_id}-n9")
    with pytest.raises(ForeignNodeError, match="refusing to touch"):
        await provider.evict("n9")
    with pytest.raises(NodeExistsError):
        await provider.launch(NodeSpec("n9", "transient", 1, 64, None, NODE_COMMAND))
    squatter.reload()
    assert squatter.status == "running"


async def test_refuses_a_foreign_network_with_the_run_network_name(
    docker_client: docker.DockerClient, provider: DockerProvider
) -> None:
    network = docker_client.networks.create(f"testbed-{provider.run_id}", driver="bridge")
    try:
        with pytest.raises(ForeignResourceError):
            await provider.launch(NodeSpec("n1", "transient", 1, 64, None, NODE_COMMAND))
        await provider.close()
        network.reload()  # still there
    finally:
        network.remove()


async def test_rejects_ids_docker_cannot_name(docker_client: docker.DockerClient, image: str) -> None:
    with pytest.raises(ValueError, match="run id"):
        DockerProvider("bad/run", image)
    provider = DockerProvider("pytest-names", image)
    with pytest.raises(ValueError, match="node id"):
        await provider.launch(NodeSpec("n 1", "transient", 1, 64, None, NODE_COMMAND))
    assert run_leftovers(docker_client, "pytest-names") == []


async def test_containers_reach_the_host_at_host_address(
    docker_client: docker.DockerClient, provider: DockerProvider
) -> None:
    """Where a broker or master running on the host is found from inside the nodes."""
    container = await launch_ready(docker_client, provider, "n1")
    address = await provider.host_address()
    with socket.create_server((address, 0)) as server:
        server.settimeout(30)  # a failure must not leave a worker thread blocked in accept()
        port = server.getsockname()[1]
        connect = f"import socket; socket.create_connection(('{address}', {port}), 5).sendall(b'hi')"
        client = asyncio.create_task(asyncio.to_thread(container.exec_run, ["python3", "-c", connect]))
        connection, _ = await asyncio.to_thread(server.accept)
        with connection:
            assert connection.recv(2) == b"hi"
        assert (await client).exit_code == 0
