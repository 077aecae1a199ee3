"""Nodes started by compose or a Swarm stack, evicted and replaced through the Docker API.

The agents of a compose file or stack carry the container labels ``testbed.run=<run>``
and ``testbed.class=<class>``; the master names each (``reserved-N``, ``transient-N``,
``agents.naming``) and tells the provider its hostname (a container's short id unless
set: ``adopt``). The provider finds a node's container by those labels and that
hostname, and refuses anything else (ForeignNodeError), like DockerProvider.

- compose: ``evict`` = SIGKILL and remove the container with its volumes; a new node
  (a replacement, or one an autoscaler asks for) is a container running the master's
  agent command, with the image, environment, labels and network of a live node of the
  run, the limits of its class, the node id as hostname, a fresh /data volume, the live
  node's bind mounts (the jobs' inputs) and the label ``testbed.node``; ``close`` removes
  those (compose removes its own).
- Swarm: a node is a task of a service. ``evict`` kills the task's container (on the
  engine the master talks to: the master runs on the manager, the single node of a
  one-node swarm) and removes it; where nodes are evicted, the agents' ``restart_policy``
  is ``none`` (``master.shell.compose_file``), so Swarm does not restart it. A new node is
  a one-replica service created through the manager from a live node's service spec, with
  the master's command, the node id as hostname, the stack's namespace label (``docker
  stack rm`` removes it) and, instead of the stack's secrets, a Swarm secret of its own (its
  broker login and node key); ``close`` removes those services and secrets.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import os
from collections import Counter
from typing import Any

import docker
from docker.errors import DockerException, NotFound
from docker.models.containers import Container
from docker.models.services import Service

from master.providers.base import ForeignNodeError, NodeSpec
from master.providers.container_secrets import image_uid, split_secrets
from master.providers.docker import UnknownNodeError
from master.providers.node_container import (
    LABEL_CLASS,
    LABEL_NODE,
    LABEL_RUN,
    agent_argv,
    data_volume,
    kill_and_remove,
    limits,
    memory_limit_bytes,
    nano_cpus,
    start_container,
    stop_and_remove,
)
from testbed.node.processes import SECRETS_FILE_ENV


def _input_mounts(template: Container) -> list[docker.types.Mount]:
    """The template's bind mounts (the jobs' input files), for a new node: its tasks may read
    them. Not its Docker secrets (compose binds them under /run/secrets): a new node has its own."""
    return [
        docker.types.Mount(m["Destination"], m["Source"], type="bind", read_only=not m["RW"])
        for m in template.attrs["Mounts"]
        if m["Type"] == "bind" and not m["Destination"].startswith(DOCKER_SECRETS)
    ]


DOCKER_SECRETS = "/run/secrets/"
"""Where compose and Swarm mount a service's secrets."""
NODE_SECRET = "testbed-node"
"""The file name, under DOCKER_SECRETS, of a new Swarm node's own secret."""


def _environment(template: list[str], own: dict[str, str]) -> list[str]:
    """A live node's environment (``KEY=VALUE``s) with a new node's own values instead, and
    not the live node's secret file (its enrolment login, on compose and Swarm)."""
    dropped = {*own, SECRETS_FILE_ENV}
    kept = [entry for entry in template if entry.split("=", 1)[0] not in dropped]
    return [*kept, *(f"{k}={v}" for k, v in own.items())]


SWARM_SERVICE_ID = "com.docker.swarm.service.id"
SHORT_ID = 12
"""A container's default hostname: the first 12 hex digits of its id."""
STACK_NAMESPACE = "com.docker.stack.namespace"
LOG_LINES = 3
"""How many of its last log lines a named agent that did not come up is reported with."""


class AttachProvider:
    """Evict, release and replace nodes that compose or a Swarm stack started."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._client = docker.from_env()
        self._hosts: dict[str, str] = {}
        """node id -> hostname of each adopted node (``adopt``); a new node's is its node id."""

    def adopt(self, node_id: str, host: str) -> None:
        """The container whose hostname is ``host`` is the node ``node_id`` (the master named it)."""
        self._hosts[node_id] = host

    # -- public interface -------------------------------------------------------------

    async def launch(self, spec: NodeSpec) -> None:
        """A new node running the master's command, with the image, environment and network of
        a live node of the run (of the same class when there is one) and the limits of its
        class, like DockerProvider's."""
        node = dataclasses.replace(spec, command=tuple(agent_argv(spec, "auto")))
        await asyncio.to_thread(self._launch, node)

    def _launch(self, node: NodeSpec) -> None:
        """From a service of the run (Swarm: its task may run on any engine), else a container."""
        spec = self._service_spec(node.node_class) if self._is_manager() else None
        if spec is not None:
            self._create_service(spec, node)
            return
        template = self._template(node.node_class)
        if SWARM_SERVICE_ID in template.labels:
            service = self._client.api.inspect_service(template.labels[SWARM_SERVICE_ID])
            self._create_service(service["Spec"], node)
        else:
            self._create_container(template, node)

    def _service_spec(self, node_class: str) -> dict[str, Any] | None:
        """The spec of an agent service of the run labelled with ``node_class`` (``--per-node``)."""
        labels = [f"{LABEL_RUN}={self.run_id}", f"{LABEL_CLASS}={node_class}"]
        for service in self._client.services.list(filters={"label": labels}):
            spec: dict[str, Any] = service.attrs["Spec"]
            if spec.get("Labels", {}).get(LABEL_RUN) == self.run_id:
                return spec
        return None

    async def evict(self, node_id: str) -> None:
        await asyncio.to_thread(self._evict, node_id)

    async def release(self, node_id: str) -> None:
        await asyncio.to_thread(self._release, node_id)

    async def straggle(self, node_id: str, factor: float, slots: int) -> None:
        """Never asked: a run's preflight refuses ``chaos.slowdown`` on attached nodes
        (``refuse_slowdown``). Without it this class were no ``AdoptingProvider``, and an
        attached run's start-up failure would not say what the agents' tasks reported."""

    async def slow(self, node_id: str, factor: float) -> None:
        """Never asked: a run's preflight refuses ``chaos.slowdown`` on attached nodes, whose
        CPU limits another deployment sets (``refuse_slowdown``)."""

    async def close(self) -> None:
        """Remove the replacements this run made; compose and the stack own the rest."""
        await asyncio.to_thread(self._remove_replacements)

    async def agents_report(self) -> str:
        try:
            return await asyncio.to_thread(self._agents_report)
        except (DockerException, OSError) as error:
            return f"unknown (the Docker API: {error})"

    def _agents_report(self) -> str:
        """The state of each Swarm task of the run's agents, by service, and of each other agent
        container (compose), by class: how they ended (exit status, error) or their health."""
        found: dict[str, list[str]] = {}
        if self._is_manager():
            names = {s.id: s.name for s in self._client.services.list()}
            for task in self._client.api.tasks():
                if task["Spec"]["ContainerSpec"].get("Labels", {}).get(LABEL_RUN) == self.run_id:
                    service = names.get(task["ServiceID"], task["ServiceID"])
                    found.setdefault(service, []).append(_task_state(task))
        for container in self._run_containers(LABEL_CLASS):
            if SWARM_SERVICE_ID not in container.labels:
                found.setdefault(container.labels[LABEL_CLASS], []).append(_container_state(container))
        tallies = (
            f"{name}: " + ", ".join(f"{n} {state}" for state, n in Counter(states).most_common())
            for name, states in sorted(found.items())
        )
        return "; ".join(tallies) or f"none labelled {LABEL_RUN}={self.run_id}"

    async def node_report(self, node_id: str) -> str:
        try:
            return await asyncio.to_thread(self._node_report, node_id)
        except (DockerException, OSError) as error:
            return f"unknown (the Docker API: {error})"

    def _node_report(self, node_id: str) -> str:
        """Its container's state and health, its healthcheck's last output and its last log
        line: why a named agent did not come up (on another engine of the Swarm: not seen)."""
        try:
            container = self._owned_container(node_id)
        except (UnknownNodeError, ForeignNodeError):
            return "its container is not on this engine"
        parts = [_container_state(container)]
        probes = container.attrs.get("State", {}).get("Health", {}).get("Log") or []
        if probes:
            probe = probes[-1]
            parts.append(f"last probe: exit {probe.get('ExitCode')} {_one_line(probe.get('Output', ''))}")
        last = container.logs(tail=LOG_LINES).decode(errors="replace").strip().splitlines()
        parts.append(f"last log: {' | '.join(_one_line(line) for line in last) if last else 'none'}")
        return ", ".join(parts)

    def owns(self, node_id: str) -> bool:
        try:
            self._owned_container(node_id)
        except UnknownNodeError:
            return self._node_service(node_id) is not None
        except ForeignNodeError:
            return False
        return True

    def _evict(self, node_id: str) -> None:
        """Its container, when the master's engine runs it; else (a task on another engine of
        the Swarm) its one-replica service, removed through the manager."""
        try:
            container = self._owned_container(node_id)
        except UnknownNodeError:
            self._remove_node_service(node_id)
            return
        kill_and_remove(container)

    def _release(self, node_id: str) -> None:
        try:
            container = self._owned_container(node_id)
        except UnknownNodeError:
            self._remove_node_service(node_id)  # drained by the master already
            return
        stop_and_remove(container)

    # -- lookups ----------------------------------------------------------------------

    def _run_containers(self, *labels: str) -> list[Container]:
        wanted = [f"{LABEL_RUN}={self.run_id}", *labels]
        # ignore_removed: another node's container may go (a concurrent release) while listing
        containers = self._client.containers.list(all=True, filters={"label": wanted}, ignore_removed=True)
        return [c for c in containers if c.labels.get(LABEL_RUN) == self.run_id]

    def _owned_container(self, node_id: str) -> Container:
        host = self._hosts.get(node_id, node_id)
        matches = [c for c in self._run_containers() if c.attrs["Config"]["Hostname"] == host]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise RuntimeError(f"{len(matches)} containers of run {self.run_id} claim node {node_id}")
        try:
            other = self._client.containers.get(host)
        except NotFound:
            raise UnknownNodeError(f"no container of run {self.run_id} for node {node_id}") from None
        raise ForeignNodeError(
            f"container {other.name} is not labelled {LABEL_RUN}={self.run_id}; refusing to touch it"
        )

    def _node_service(self, node_id: str) -> Service | None:
        """On a Swarm manager: the one-replica service of this run (its own label) whose task
        is the node: by its hostname (a new node's) or its container's short id (adopted)."""
        if not self._is_manager():
            return None
        host = self._hosts.get(node_id, node_id)
        for service in self._client.services.list(filters={"label": f"{LABEL_RUN}={self.run_id}"}):
            spec = service.attrs["Spec"]
            replicas = spec.get("Mode", {}).get("Replicated", {}).get("Replicas")
            if spec.get("Labels", {}).get(LABEL_RUN) != self.run_id or replicas != 1:
                continue
            if spec["TaskTemplate"]["ContainerSpec"].get("Hostname") == host:
                return service
            containers = (t.get("Status", {}).get("ContainerStatus", {}) for t in service.tasks())
            if len(host) >= SHORT_ID and any(c.get("ContainerID", "").startswith(host) for c in containers):
                return service
        return None

    def _remove_node_service(self, node_id: str) -> None:
        service = self._node_service(node_id)
        if service is None:
            raise UnknownNodeError(f"no container nor one-replica service of run {self.run_id} is {node_id}")
        service.remove()

    def _is_manager(self) -> bool:
        return bool(self._client.info().get("Swarm", {}).get("ControlAvailable"))

    def _template(self, node_class: str) -> Container:
        """A running node of the run, of `node_class` if any (a class may start with none)."""
        running = [c for c in self._run_containers(LABEL_CLASS) if c.status == "running"]
        if not running:
            raise RuntimeError(f"no running node of run {self.run_id} to copy a new node's setup from")
        return next((c for c in running if c.labels.get(LABEL_CLASS) == node_class), running[0])

    # -- compose: containers ----------------------------------------------------------

    def _create_container(self, template: Container, node: NodeSpec) -> None:
        """Its broker login and node key in a file written into it (``container_secrets``)."""
        config = template.attrs["Config"]
        labels = {k: v for k, v in config["Labels"].items() if not k.startswith("com.docker.compose.")}
        own, secrets = split_secrets(dict(node.env))
        start_container(
            self._client,
            config["Image"],
            list(node.command),
            secrets,
            image_uid,
            hostname=node.node_id,
            labels={**labels, LABEL_CLASS: node.node_class, LABEL_NODE: node.node_id},
            environment=_environment(config["Env"], own),
            network=next(iter(template.attrs["NetworkSettings"]["Networks"])),
            mounts=[data_volume(self.run_id), *_input_mounts(template)],
            **limits(node.memory_mb, node.cpus),
        )

    # -- Swarm: services --------------------------------------------------------------

    def _create_service(self, spec: dict[str, Any], node: NodeSpec) -> None:
        """Its broker login and node key in a Swarm secret of its own (the stack's stay out)."""
        task = copy.deepcopy(spec["TaskTemplate"])
        container = task["ContainerSpec"]
        container["Hostname"] = node.node_id
        container["Args"] = list(node.command)
        own, secrets = split_secrets(dict(node.env))
        if secrets:
            own[SECRETS_FILE_ENV] = f"{DOCKER_SECRETS}{NODE_SECRET}"
        container["Secrets"] = [self._node_secret(node.node_id, secrets)] if secrets else []
        container["Env"] = _environment(container.get("Env", []), own)
        container["Labels"] = {
            **container.get("Labels", {}),
            LABEL_CLASS: node.node_class,
            LABEL_NODE: node.node_id,
        }
        nano = nano_cpus(node.cpus)
        task.setdefault("Resources", {})["Limits"] = {
            "MemoryBytes": memory_limit_bytes(node.memory_mb),
            **({"NanoCPUs": nano} if nano else {}),
        }
        kept = {k: v for k, v in spec.get("Labels", {}).items() if k == STACK_NAMESPACE}
        prefix = f"{kept[STACK_NAMESPACE]}_" if kept else f"testbed-{self.run_id}-"
        self._client.api.create_service(
            task,
            name=f"{prefix}{node.node_id}",
            labels={**kept, LABEL_RUN: self.run_id, LABEL_CLASS: node.node_class, LABEL_NODE: node.node_id},
            mode={"Replicated": {"Replicas": 1}},
        )

    def _node_secret(self, node_id: str, secrets: dict[str, str]) -> dict[str, Any]:
        """A new Swarm secret holding ``secrets``, as a service's reference to it (read-only,
        the image's user reads it: Swarm's default mode)."""
        name = f"testbed-{self.run_id}-{node_id}-{os.urandom(3).hex()}"
        labels = {LABEL_RUN: self.run_id, LABEL_NODE: node_id}
        secret = self._client.secrets.create(name=name, data=json.dumps(secrets), labels=labels)
        target = {"Name": NODE_SECRET, "UID": "0", "GID": "0", "Mode": 0o444}
        return {"SecretID": secret.id, "SecretName": name, "File": target}

    def _remove_replacements(self) -> None:
        filters = {"label": [f"{LABEL_RUN}={self.run_id}", LABEL_NODE]}
        if self._is_manager():
            for service in self._client.services.list(filters=filters):
                if service.attrs["Spec"].get("Labels", {}).get(LABEL_RUN) == self.run_id:
                    service.remove()
            for secret in self._client.secrets.list(filters=filters):
                if secret.attrs["Spec"].get("Labels", {}).get(LABEL_RUN) == self.run_id:
                    secret.remove()
        for container in self._client.containers.list(all=True, filters=filters, ignore_removed=True):
            if container.labels.get(LABEL_RUN) == self.run_id:
                kill_and_remove(container)


def _task_state(task: dict[str, Any]) -> str:
    status = task.get("Status", {})
    state = status.get("State", "unknown")
    code = status.get("ContainerStatus", {}).get("ExitCode")
    ended = (
        f"{state} (exit {code})"
        if code is not None and state in ("complete", "failed", "shutdown")
        else state
    )
    return f"{ended}: {status['Err']}" if status.get("Err") else ended


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _container_state(container: Container) -> str:
    state = container.attrs.get("State", {})
    health = state.get("Health", {}).get("Status")
    if state.get("Status") == "exited":
        return f"exited (exit {state.get('ExitCode')})"
    return f"{state.get('Status', 'unknown')} ({health})" if health else state.get("Status", "unknown")
