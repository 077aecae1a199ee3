"""Emulated nodes as Docker containers on one engine.

Each node is one container of the testbed image, labelled with the run id, node id and
node class. The labels are the provider's only notion of ownership: every operation on
an existing container first checks them, and a container, network or volume not labelled
with this provider's run is refused with a ForeignNodeError and never touched. This keeps
a chaos controller from killing anything else that runs on the same engine.

`command` is an agent command line without placement flags (as for the local provider);
the provider appends `--data-dir /data --listen 0.0.0.0 --advertise <node id> --port 7070`.
With the testbed image it starts with the entrypoint's role, e.g. `["agent", "--run", ...]`.

Per node:
- memory limit = the node's memory plus AGENT_OVERHEAD_MB for the agent process itself,
  with no swap, so a task that exceeds its budget must spill rather than swap;
- CPU limit = `cpus` (a fraction of the host's cores), none when unset;
- node-local disk = a fresh anonymous volume at /data (on the engine's disk rather than
  in memory, so spilled data does not count against the memory limit), deleted with the
  container;
- hostname and network alias = node id, on one bridge network per run (or the network
  given), so that agents reach one another by node id.

The SDK blocks: every call into it runs in a worker thread (asyncio.to_thread).
"""

import asyncio
import re
from collections.abc import Sequence
from pathlib import Path

import docker
from docker.errors import APIError, NotFound
from docker.models.containers import Container
from docker.models.networks import Network
from docker.models.volumes import Volume
from docker.types import Mount

from master.providers.base import ForeignNodeError

LABEL_RUN = "testbed.run"
LABEL_NODE = "testbed.node"
LABEL_CLASS = "testbed.class"
LABEL_SLOTS = "testbed.slots"
LABEL_MEMORY_MB = "testbed.memory_mb"

# Memory of the agent itself, outside the task budgets: an idle agent container (the agent
# and its task forkserver) uses about 72 MiB (docs/docker.md); the rest is headroom for the
# private pages of task processes, connections and shuffle-serving buffers.
AGENT_OVERHEAD_MB = 128
DATA_DIR = "/data"
# Every container has its own address, so every agent serves shuffle data on the same port.
AGENT_PORT = 7070
# How long a released node may take to shut down after SIGTERM before it is killed.
RELEASE_TIMEOUT_S = 30
HTTP_CONFLICT = 409

# Docker object names: the run id and node id become parts of container/network names.
_DOCKER_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9_.-]*")


class ForeignResourceError(ForeignNodeError):
    """A network or volume that is not labelled with this run: the provider refuses to touch it."""


class UnknownNodeError(ForeignNodeError):
    """No container of this run has the node id (so there is nothing this run may touch)."""


class NodeExistsError(RuntimeError):
    """A container for this node id already exists."""


def _labels(docker_object: Network | Volume) -> dict[str, str]:
    return docker_object.attrs.get("Labels") or {}


def _check_docker_name(kind: str, value: str) -> None:
    if not _DOCKER_NAME.fullmatch(value):
        raise ValueError(f"{kind} {value!r} must match {_DOCKER_NAME.pattern}")


class DockerProvider:
    """Launch, evict and release emulated nodes as containers of one run."""

    def __init__(
        self,
        run_id: str,
        image: str,
        network: str | None = None,
        env: dict[str, str] | None = None,
        inputs: Sequence[Path] = (),
    ) -> None:
        """`network`: an existing network to attach nodes to (e.g. made by compose),
        left in place by close(). Without it, the run gets its own bridge network,
        created on the first launch and removed by close(). `env`: environment of every
        node (e.g. broker credentials), under the one given to launch(). `inputs`: host
        files every node mounts read-only at the same path (the jobs' input files, which
        tasks open by their absolute path)."""
        _check_docker_name("run id", run_id)
        self.run_id = run_id
        self.image = image
        self._given_network = network
        self._network_name = network or f"testbed-{run_id}"
        self._network_lock = asyncio.Lock()
        self._network: Network | None = None
        self._env = dict(env or {})
        self._inputs = sorted({str(Path(p).resolve()) for p in inputs})
        self._client = docker.from_env()

    # -- public interface -------------------------------------------------------------

    async def launch(
        self,
        node_id: str,
        node_class: str,
        slots: int,
        memory_mb: int,
        cpus: float | None,
        command: list[str],
        env: dict[str, str],
    ) -> None:
        _check_docker_name("node id", node_id)
        await self._ensure_network()
        labels = {
            LABEL_RUN: self.run_id,
            LABEL_NODE: node_id,
            LABEL_CLASS: node_class,
            LABEL_SLOTS: str(slots),
            LABEL_MEMORY_MB: str(memory_mb),
        }
        argv = [
            *command,
            *("--data-dir", DATA_DIR, "--listen", "0.0.0.0", "--advertise", node_id),
            *("--port", str(AGENT_PORT)),
        ]
        await asyncio.to_thread(
            self._create_and_start, node_id, labels, memory_mb, cpus, argv, {**self._env, **env}
        )

    async def evict(self, node_id: str) -> None:
        """Kill the node with SIGKILL, then remove it and its disk: nothing survives."""
        container = await asyncio.to_thread(self._owned_container, node_id)
        await asyncio.to_thread(self._kill_and_remove, container)

    async def release(self, node_id: str) -> None:
        """Stop the node gracefully (SIGTERM, then SIGKILL after RELEASE_TIMEOUT_S), then
        remove it and its disk. Draining its tasks first is the master's job."""
        container = await asyncio.to_thread(self._owned_container, node_id)
        await asyncio.to_thread(self._stop_and_remove, container)

    async def close(self) -> None:
        """Remove every container and volume of this run, and the run's own network."""
        containers = await asyncio.to_thread(self._run_containers)
        await asyncio.gather(*(asyncio.to_thread(self._kill_and_remove, c) for c in containers))
        await asyncio.to_thread(self._remove_run_volumes)
        if self._given_network is None:
            await asyncio.to_thread(self._remove_run_network)
        self._network = None

    def owns(self, node_id: str) -> bool:
        """Whether a container labelled with this run and node id exists (blocking)."""
        try:
            self._owned_container(node_id)
        except ForeignNodeError:
            return False
        return True

    async def host_address(self) -> str:
        """The host's address on the nodes' network: where containers reach a broker or
        master that runs on the host itself."""
        network = await self._ensure_network()
        return await asyncio.to_thread(self._gateway_of, network)

    # -- containers -------------------------------------------------------------------

    def _container_name(self, node_id: str) -> str:
        return f"testbed-{self.run_id}-{node_id}"

    def _create_and_start(
        self,
        node_id: str,
        labels: dict[str, str],
        memory_mb: int,
        cpus: float | None,
        command: list[str],
        env: dict[str, str],
    ) -> None:
        limit_bytes = (memory_mb + AGENT_OVERHEAD_MB) * 1024 * 1024
        limits: dict[str, int] = {"mem_limit": limit_bytes, "memswap_limit": limit_bytes}
        if cpus is not None:
            limits["nano_cpus"] = round(cpus * 1e9)
        endpoint = self._client.api.create_endpoint_config(aliases=[node_id])
        try:
            container = self._client.containers.create(
                self.image,
                command,
                name=self._container_name(node_id),
                hostname=node_id,
                labels=labels,
                environment=env,
                network=self._network_name,
                networking_config={self._network_name: endpoint},
                mounts=[
                    Mount(DATA_DIR, None, type="volume", labels={LABEL_RUN: self.run_id}),
                    *(Mount(path, path, type="bind", read_only=True) for path in self._inputs),
                ],
                **limits,
            )
        except APIError as error:
            if error.status_code == HTTP_CONFLICT:
                raise NodeExistsError(f"container {self._container_name(node_id)} already exists") from error
            raise
        try:
            container.start()
        except APIError:
            container.remove(force=True, v=True)
            raise

    def _owned_container(self, node_id: str) -> Container:
        """The node's container, after checking its labels; refuses anything else."""
        matches = self._client.containers.list(
            all=True, filters={"label": [f"{LABEL_RUN}={self.run_id}", f"{LABEL_NODE}={node_id}"]}
        )
        if len(matches) > 1:
            raise RuntimeError(
                f"{len(matches)} containers claim node {node_id} of run "
                f"{self.run_id}: {[c.name for c in matches]}"
            )
        if matches:
            self._check_labels(matches[0], node_id)
            return matches[0]
        for name in (node_id, self._container_name(node_id)):
            try:
                other = self._client.containers.get(name)
            except NotFound:
                continue
            raise ForeignNodeError(
                f"container {other.name} is not labelled {LABEL_RUN}={self.run_id} and "
                f"{LABEL_NODE}={node_id} (its labels: {other.labels}); refusing to touch it"
            )
        raise UnknownNodeError(f"no container of run {self.run_id} for node {node_id}")

    def _check_labels(self, container: Container, node_id: str | None) -> None:
        labels = container.labels
        if labels.get(LABEL_RUN) != self.run_id or (
            node_id is not None and labels.get(LABEL_NODE) != node_id
        ):
            raise ForeignNodeError(
                f"container {container.name} has labels {labels}, not run {self.run_id}"
                + (f" node {node_id}" if node_id else "")
                + "; refusing to touch it"
            )

    def _run_containers(self) -> list[Container]:
        containers = self._client.containers.list(all=True, filters={"label": f"{LABEL_RUN}={self.run_id}"})
        for container in containers:
            self._check_labels(container, None)
        return containers

    @staticmethod
    def _kill_and_remove(container: Container) -> None:
        """Conflicts and a missing container mean the work is done: the agent had exited, or
        a concurrent eviction (a lifetime expiry and a heartbeat timeout) went first."""
        for step in (lambda: container.kill(signal="SIGKILL"), lambda: container.remove(v=True, force=True)):
            try:
                step()
            except NotFound:
                return
            except APIError as error:
                if error.status_code != HTTP_CONFLICT:
                    raise

    @staticmethod
    def _stop_and_remove(container: Container) -> None:
        container.stop(timeout=RELEASE_TIMEOUT_S)
        container.remove(v=True, force=True)

    def _remove_run_volumes(self) -> None:
        """Volumes a container left behind (e.g. removed outside the provider)."""
        for volume in self._client.volumes.list(filters={"label": f"{LABEL_RUN}={self.run_id}"}):
            if _labels(volume).get(LABEL_RUN) == self.run_id:
                volume.remove()

    # -- network ----------------------------------------------------------------------

    async def _ensure_network(self) -> Network:
        async with self._network_lock:
            if self._network is None:
                self._network = await asyncio.to_thread(self._get_or_create_network)
            return self._network

    def _get_or_create_network(self) -> Network:
        try:
            network = self._client.networks.get(self._network_name)
        except NotFound:
            if self._given_network is not None:
                raise
            return self._client.networks.create(
                self._network_name, driver="bridge", labels={LABEL_RUN: self.run_id}
            )
        if self._given_network is None and _labels(network).get(LABEL_RUN) != self.run_id:
            raise ForeignResourceError(
                f"network {self._network_name} exists but is not labelled "
                f"{LABEL_RUN}={self.run_id}; refusing to use it"
            )
        return network

    def _remove_run_network(self) -> None:
        """Remove the run's network; a network of that name not labelled with the run (which
        launch refused to use) is left alone."""
        for network in self._client.networks.list(filters={"label": f"{LABEL_RUN}={self.run_id}"}):
            if network.name == self._network_name and _labels(network).get(LABEL_RUN) == self.run_id:
                network.remove()

    @staticmethod
    def _gateway_of(network: Network) -> str:
        network.reload()
        return network.attrs["IPAM"]["Config"][0]["Gateway"]
