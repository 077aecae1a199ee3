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
- CPU limit = `cpus` (a fraction of the host's cores), none when unset: with `cgroups`
  (a faithful run on an engine of this host) the node's own group, made on the host as for
  a local node (``testbed.node.cgroups``: the node's quota, an ``agent`` leaf and a leaf per task
  slot with a quota of one emulated core, under ``slots``), else the container's `nano_cpus`
  (a slowed node's divided: its agent is slowed too, where a host group slows only its tasks). The container
  is started under that group (``cgroup_parent``; on cgroup v2 in the host's cgroup
  namespace, where its processes can reach a sibling group, and with the memory limit on
  the node's group too, since a v2 move takes a worker out of the container's group in
  every controller) and gets the group's
  directory bind-mounted read-write at CGROUP_DIR, as the agent's ``--cgroup``; the image's
  user owns just the leaves' ``cgroup.procs``, so that the agent and its task workers move
  themselves into their leaves (no privilege, no capability). The groups go with the
  container: evicted, released or closed;
- node-local disk = a fresh anonymous volume at /data (on the engine's disk rather than
  in memory, so spilled data does not count against the memory limit), deleted with the
  container;
- hostname and network alias = node id, on one bridge network per run (or the network
  given), so that agents reach one another by node id;
- secrets (the agent's broker login and node key) in a file written into the container
  before it starts, never in its environment (``master.providers.container_secrets``).

The SDK blocks: every call into it runs in a worker thread (asyncio.to_thread).
"""

import asyncio
import contextlib
import logging
import re
from collections.abc import Sequence
from pathlib import Path

import docker
from docker.errors import APIError, NotFound
from docker.models.containers import Container
from docker.models.networks import Network
from docker.models.volumes import Volume
from docker.types import Mount

from master.providers.base import ForeignNodeError, NodeSpec
from master.providers.container_secrets import image_uid, split_secrets
from master.providers.node_container import (
    DATA_DIR,
    HTTP_CONFLICT,
    LABEL_CLASS,
    LABEL_MEMORY_MB,
    LABEL_NODE,
    LABEL_RUN,
    LABEL_SLOTS,
    agent_argv,
    data_volume,
    kill_and_remove,
    limits,
    memory_limit_bytes,
    start_container,
    stop_and_remove,
)
from testbed.node.cgroups import CpuCgroups, CpuStats, hierarchy_path, remove_everywhere
from testbed.node.slow_episodes import SlowBuckets, SlowQuotas

# Where a container sees its node's CPU group (the agent's --cgroup).
CGROUP_DIR = "/run/testbed-cgroup"

log = logging.getLogger(__name__)

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


def volume_source(container: Container) -> Path:
    """Where the engine keeps the container's data volume (``DATA_DIR`` inside it)."""
    container.reload()
    [source] = [m["Source"] for m in container.attrs["Mounts"] if m["Destination"] == DATA_DIR]
    return Path(source)


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
        cgroups: CpuCgroups | None = None,
    ) -> None:
        """`network`: an existing network to attach nodes to (e.g. made by compose),
        left in place by close(). Without it, the run gets its own bridge network,
        created on the first launch and removed by close(). `env`: environment of every
        node (e.g. broker credentials), under the one given to launch(). `inputs`: host
        files every node mounts read-only at the same path (the jobs' input files, which
        tasks open by their absolute path). `cgroups`: the host's CPU groups (a faithful run),
        where each node gets its group and its slots theirs; unused (each container gets
        `nano_cpus` alone, with a warning) unless the engine makes its containers' groups
        in this host's hierarchy (the cgroupfs driver, the same cgroup version)."""
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
        self._cgroups = cgroups if cgroups is not None and self._engine_shares_groups(cgroups) else None
        self._groups: dict[str, Path] = {}
        self._quotas = SlowQuotas(self._cgroups.version) if self._cgroups is not None else None
        """The launch quotas of nodes slowed by an episode, to restore."""
        self._data_dirs: dict[str, Path] = {}
        """Where on this host each node with a host group has its data volume (its token buckets)."""
        self._buckets = SlowBuckets()
        """The launch rates of the buckets of nodes slowed by an episode, to restore."""
        self._uid: int | None = None
        self.cpu_stats: dict[str, CpuStats] = {}
        """Each removed node's last throttling counters (the fidelity monitor's), its slots' in slot_stats."""
        self.slot_stats: dict[str, CpuStats] = {}

    # -- public interface -------------------------------------------------------------

    async def launch(self, spec: NodeSpec) -> None:
        node_id, cpus = spec.node_id, spec.cpus
        _check_docker_name("node id", node_id)
        await self._ensure_network()
        labels = {
            LABEL_RUN: self.run_id,
            LABEL_NODE: node_id,
            LABEL_CLASS: spec.node_class,
            LABEL_SLOTS: str(spec.slots),
            LABEL_MEMORY_MB: str(spec.memory_mb),
        }
        argv = agent_argv(spec, node_id)
        group = None
        if self._cgroups is not None and cpus is not None:
            group = await asyncio.to_thread(
                self._cgroups.create, self.run_id, node_id, cpus, spec.slots, spec.slowdown
            )
            self._groups[node_id] = group
            argv += ["--cgroup", CGROUP_DIR]
        nano = None if cpus is None else cpus / spec.slowdown  # without a host group, all of it is slowed
        try:
            await asyncio.to_thread(
                self._create_and_start, spec, labels, nano, argv, {**self._env, **spec.env}, group
            )
        except BaseException:
            await self._remove_group(node_id)
            raise

    async def evict(self, node_id: str) -> None:
        """Kill the node with SIGKILL, then remove it and its disk: nothing survives."""
        container = await asyncio.to_thread(self._owned_container, node_id)
        await asyncio.to_thread(kill_and_remove, container)
        await self._remove_group(node_id)

    async def release(self, node_id: str) -> None:
        """Stop the node gracefully (SIGTERM, then SIGKILL after RELEASE_TIMEOUT_S), then
        remove it and its disk. Draining its tasks first is the master's job."""
        container = await asyncio.to_thread(self._owned_container, node_id)
        await asyncio.to_thread(stop_and_remove, container)
        await self._remove_group(node_id)

    async def close(self) -> None:
        """Remove every container and volume of this run, their CPU groups, and the run's own network."""
        containers = await asyncio.to_thread(self._run_containers)
        await asyncio.gather(*(asyncio.to_thread(kill_and_remove, c) for c in containers))
        await asyncio.gather(*(self._remove_group(node_id) for node_id in list(self._groups)))
        if self._cgroups is not None:  # the run's group in every hierarchy (the master's own stays)
            await asyncio.to_thread(remove_everywhere, hierarchy_path(self._cgroups.run_dir(self.run_id)))
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

    def node_cpu_stats(self) -> dict[str, CpuStats]:
        """Throttling counters of every node with a CPU group so far: live ones read now, gone
        ones as they went."""
        return self._stats_so_far(self.cpu_stats, slots=False)

    def slot_cpu_stats(self) -> dict[str, CpuStats]:
        """The same of every node's task slots, totalled per node."""
        return self._stats_so_far(self.slot_stats, slots=True)

    def _stats_so_far(self, gone: dict[str, CpuStats], slots: bool) -> dict[str, CpuStats]:
        if self._cgroups is None:
            return dict(gone)
        return self._cgroups.stats_so_far(gone, list(self._groups.items()), slots)

    # -- CPU groups -------------------------------------------------------------------

    def _engine_shares_groups(self, cgroups: CpuCgroups) -> bool:
        """Whether the engine puts a container given ``cgroup_parent`` under that group of this
        host's hierarchy: its cgroupfs driver does (the systemd driver takes a slice instead)."""
        info = self._client.info()
        driver, version = info.get("CgroupDriver"), str(info.get("CgroupVersion", "1"))
        if driver == "cgroupfs" and version == str(cgroups.version):
            return True
        log.warning(
            "the engine's cgroups (driver %s, v%s) are not this host's cgroupfs v%d: each node "
            "gets nano_cpus only, and a lone task on a node of several slots may use all its cores",
            driver,
            version,
            cgroups.version,
        )
        return False

    async def straggle(self, node_id: str, factor: float, slots: int) -> None:
        """Never asked: the preflight refuses ``straggler: processes`` beside Docker nodes
        (``refuse_slowdown``); their slowdown is their CPU quota."""

    async def slow(self, node_id: str, factor: float) -> None:
        """Its host group's CPU quotas and its token buckets' rates divided by ``factor``
        (``testbed.node.slow_episodes``, as for a local node; 1: its launch's); the buckets are
        in its data volume, reached where the engine keeps it on this host. A node without a
        host group (the engine makes its groups elsewhere, maybe on another host) keeps the
        CPU limit and the rates of its launch: ``docker_isolation`` warned of that already."""
        group, data = self._groups.get(node_id), self._data_dirs.get(node_id)
        with contextlib.suppress(FileNotFoundError):  # the node is being removed
            if data is not None:
                await asyncio.to_thread(self._buckets.slow, data, factor)
            if group is not None and self._quotas is not None:
                await asyncio.to_thread(self._quotas.slow, group, factor)

    async def _remove_group(self, node_id: str) -> None:
        """Keep the node's last counters, then remove its groups in every hierarchy (the engine
        made them there) once the container's processes are gone."""
        data = self._data_dirs.pop(node_id, None)
        if data is not None:
            self._buckets.forget(data)
        group = self._groups.pop(node_id, None)
        if group is None or self._cgroups is None:
            return
        if self._quotas is not None:
            self._quotas.forget(group)
        path = hierarchy_path(group)
        if await self._cgroups.retire(
            node_id, group, (self.cpu_stats, self.slot_stats), lambda: remove_everywhere(path)
        ):
            return
        log.warning("the CPU groups %s of node %s still hold processes; left in place", path, node_id)

    def _user_id(self, container: Container) -> int:
        """The uid the container's processes run as (``image_uid``; once per run: every node
        runs the same image)."""
        if self._uid is None:
            self._uid = image_uid(container)
        return self._uid

    # -- containers -------------------------------------------------------------------

    def _container_name(self, node_id: str) -> str:
        return f"testbed-{self.run_id}-{node_id}"

    def _create_and_start(
        self,
        spec: NodeSpec,
        labels: dict[str, str],
        cpus: float | None,
        command: list[str],
        env: dict[str, str],
        group: Path | None,
    ) -> None:
        node_id = spec.node_id
        placement: dict[str, str] = {}
        mounts = [
            data_volume(self.run_id),
            *(Mount(path, path, type="bind", read_only=True) for path in self._inputs),
        ]
        if group is not None and self._cgroups is not None:  # the group's quotas, none of its own
            placement["cgroup_parent"] = hierarchy_path(group)
            self._cgroups.cap_memory(group, memory_limit_bytes(spec.memory_mb))
            if self._cgroups.version == 2:  # a private namespace would hide the slot groups
                placement["cgroupns"] = "host"
            mounts.append(Mount(CGROUP_DIR, str(group), type="bind", read_only=False))
        endpoint = self._client.api.create_endpoint_config(aliases=[node_id])
        env, secrets = split_secrets(env)
        try:
            start_container(
                self._client,
                self.image,
                command,
                secrets,
                self._user_id,
                lambda container: self._start_in_group(node_id, container, group),
                name=self._container_name(node_id),
                hostname=node_id,
                labels=labels,
                environment=env,
                network=self._network_name,
                networking_config={self._network_name: endpoint},
                mounts=mounts,
                **limits(spec.memory_mb, None if group is not None else cpus),
                **placement,
            )
        except APIError as error:
            if error.status_code == HTTP_CONFLICT:
                raise NodeExistsError(f"container {self._container_name(node_id)} already exists") from error
            raise

    def _start_in_group(self, node_id: str, container: Container, group: Path | None) -> None:
        """Start the container, first letting its user into the leaves of its host group (if
        any), which the engine must then have started it in."""
        if group is None or self._cgroups is None:
            container.start()
            return
        self._cgroups.delegate(group, self._user_id(container))
        container.start()
        if not (group / container.id).is_dir():
            raise RuntimeError(
                f"the engine did not start node {node_id}'s container in {group}: is it on another host?"
            )
        self._data_dirs[node_id] = volume_source(container)  # the engine is on this host: so is the volume

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
