"""Nodes started by compose or a Swarm stack, evicted and replaced through the Docker API.

The agents of a compose file or stack carry the container labels ``testbed.run=<run>``
and ``testbed.class=<class>``, and take their node id from their hostname (a container's
hostname is its short id unless set). The provider finds a node's container by those
labels and that hostname, and refuses anything else (ForeignNodeError), like
DockerProvider.

- compose: ``evict`` = SIGKILL and remove the container with its volumes; a replacement
  is a new container cloned from a live node of the class (image, command, environment,
  labels, limits, network), with the new node id as hostname, a fresh /data volume and
  the label ``testbed.node``; ``close`` removes the replacements (compose removes its own).
- Swarm: a node is a task of a service. ``evict`` kills the task's container (on the
  engine the master talks to: the master runs on the manager, the single node of a
  one-node swarm) and removes it; the agents' ``restart_policy`` is ``none``, so Swarm
  does not restart it. A replacement is a new one-replica service created through the
  manager from the class's service spec, with the node id as hostname and the stack's
  namespace label (``docker stack rm`` removes it); ``close`` removes those services.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from typing import Any

import docker
from docker.errors import APIError, NotFound
from docker.models.containers import Container

from master.providers.base import ForeignNodeError
from master.providers.docker import (
    DATA_DIR,
    HTTP_CONFLICT,
    LABEL_CLASS,
    LABEL_NODE,
    LABEL_RUN,
    RELEASE_TIMEOUT_S,
    UnknownNodeError,
)

SWARM_SERVICE_ID = "com.docker.swarm.service.id"
STACK_NAMESPACE = "com.docker.stack.namespace"


class AttachProvider:
    """Evict, release and replace nodes that compose or a Swarm stack started."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
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
        """A replacement node of `node_class`, configured like the live nodes of that class
        (their command, limits and environment: `command` and `env` of the master are not
        used, the compose file or stack is the configuration)."""
        template = await asyncio.to_thread(self._template, node_class)
        if SWARM_SERVICE_ID in template.labels:
            await asyncio.to_thread(self._create_service, template, node_id)
        else:
            await asyncio.to_thread(self._clone_container, template, node_id)

    async def evict(self, node_id: str) -> None:
        container = await asyncio.to_thread(self._owned_container, node_id)
        await asyncio.to_thread(self._kill_and_remove, container)

    async def release(self, node_id: str) -> None:
        container = await asyncio.to_thread(self._owned_container, node_id)
        await asyncio.to_thread(container.stop, timeout=RELEASE_TIMEOUT_S)
        await asyncio.to_thread(self._kill_and_remove, container)

    async def close(self) -> None:
        """Remove the replacements this run made; compose and the stack own the rest."""
        await asyncio.to_thread(self._remove_replacements)

    def owns(self, node_id: str) -> bool:
        try:
            self._owned_container(node_id)
        except ForeignNodeError:
            return False
        return True

    # -- lookups ----------------------------------------------------------------------

    def _run_containers(self, *labels: str) -> list[Container]:
        wanted = [f"{LABEL_RUN}={self.run_id}", *labels]
        containers = self._client.containers.list(all=True, filters={"label": wanted})
        return [c for c in containers if c.labels.get(LABEL_RUN) == self.run_id]

    def _owned_container(self, node_id: str) -> Container:
        matches = [c for c in self._run_containers() if c.attrs["Config"]["Hostname"] == node_id]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise RuntimeError(f"{len(matches)} containers of run {self.run_id} claim node {node_id}")
        try:
            other = self._client.containers.get(node_id)
        except NotFound:
            raise UnknownNodeError(f"no container of run {self.run_id} for node {node_id}") from None
        raise ForeignNodeError(
            f"container {other.name} is not labelled {LABEL_RUN}={self.run_id}; refusing to touch it"
        )

    def _template(self, node_class: str) -> Container:
        running = [c for c in self._run_containers(f"{LABEL_CLASS}={node_class}") if c.status == "running"]
        if not running:
            raise RuntimeError(f"no running {node_class} node of run {self.run_id} to copy a replacement of")
        return running[0]

    # -- compose: containers ----------------------------------------------------------

    def _clone_container(self, template: Container, node_id: str) -> None:
        config, host = template.attrs["Config"], template.attrs["HostConfig"]
        labels = {k: v for k, v in config["Labels"].items() if not k.startswith("com.docker.compose.")}
        network = next(iter(template.attrs["NetworkSettings"]["Networks"]))
        limits = {
            "mem_limit": host.get("Memory") or None,
            "memswap_limit": host.get("MemorySwap") or None,
            "nano_cpus": host.get("NanoCpus") or None,
        }
        container = self._client.containers.create(
            config["Image"],
            config["Cmd"],
            hostname=node_id,
            labels={**labels, LABEL_NODE: node_id},
            environment=config["Env"],
            network=network,
            mounts=[docker.types.Mount(DATA_DIR, None, type="volume", labels={LABEL_RUN: self.run_id})],
            **{k: v for k, v in limits.items() if v is not None},
        )
        try:
            container.start()
        except APIError:
            container.remove(force=True, v=True)
            raise

    @staticmethod
    def _kill_and_remove(container: Container) -> None:
        try:
            container.kill(signal="SIGKILL")
        except APIError as error:
            if error.status_code != HTTP_CONFLICT:  # already exited
                raise
        with contextlib.suppress(NotFound):  # Swarm may reap a dead task's container first
            container.remove(v=True, force=True)

    # -- Swarm: services --------------------------------------------------------------

    def _create_service(self, template: Container, node_id: str) -> None:
        spec: dict[str, Any] = self._client.api.inspect_service(template.labels[SWARM_SERVICE_ID])["Spec"]
        task = copy.deepcopy(spec["TaskTemplate"])
        task["ContainerSpec"]["Hostname"] = node_id
        task["ContainerSpec"]["Labels"] = {**task["ContainerSpec"].get("Labels", {}), LABEL_NODE: node_id}
        kept = {k: v for k, v in spec.get("Labels", {}).items() if k == STACK_NAMESPACE}
        self._client.api.create_service(
            task,
            name=f"{spec['Name']}-{node_id}",
            labels={**kept, LABEL_RUN: self.run_id, LABEL_NODE: node_id},
            mode={"Replicated": {"Replicas": 1}},
        )

    def _remove_replacements(self) -> None:
        filters = {"label": [f"{LABEL_RUN}={self.run_id}", LABEL_NODE]}
        if self._client.info().get("Swarm", {}).get("ControlAvailable"):
            for service in self._client.services.list(filters=filters):
                if service.attrs["Spec"].get("Labels", {}).get(LABEL_RUN) == self.run_id:
                    service.remove()
        for container in self._client.containers.list(all=True, filters=filters):
            if container.labels.get(LABEL_RUN) == self.run_id:
                self._kill_and_remove(container)
