"""A node's container, as the Docker provider and the attach provider (compose) create one.

The labels that mark a run's containers, the agent's placement flags, the node's memory and
CPU limits, its fresh data volume, and the one way to create, fill with secrets
(``master.providers.container_secrets``), start and, failing any of that, remove a container.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import docker
from docker.errors import APIError, NotFound
from docker.models.containers import Container
from docker.types import Mount

from master.providers.base import NodeSpec
from master.providers.container_secrets import put_secrets

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


def agent_argv(spec: NodeSpec, advertise: str) -> list[str]:
    """The node's agent command line with a container's placement flags (the image's
    healthcheck probes ``AGENT_PORT``; the agent's own default is any free port)."""
    return [
        *spec.command,
        *("--data-dir", DATA_DIR, "--listen", "0.0.0.0", "--advertise", advertise),
        *("--port", str(AGENT_PORT)),
    ]


def memory_limit_bytes(memory_mb: int) -> int:
    """The container's memory limit: the node's memory and the agent's own."""
    return (memory_mb + AGENT_OVERHEAD_MB) * 1024 * 1024


def nano_cpus(cpus: float | None) -> int | None:
    """``cpus`` cores in the engine's unit (None: no CPU limit)."""
    return None if cpus is None else round(cpus * 1e9)


def limits(memory_mb: int, cpus: float | None) -> dict[str, int]:
    """A container's memory limit, with no swap (a task over its budget must spill), and its
    ``cpus`` cores (None: no CPU limit)."""
    limit, nano = memory_limit_bytes(memory_mb), nano_cpus(cpus)
    return {"mem_limit": limit, "memswap_limit": limit, **({} if nano is None else {"nano_cpus": nano})}


def data_volume(run_id: str) -> Mount:
    """A fresh anonymous volume at ``DATA_DIR``, labelled with the run, removed with its container."""
    return Mount(DATA_DIR, None, type="volume", labels={LABEL_RUN: run_id})


def start_container(
    client: docker.DockerClient,
    image: str,
    argv: list[str],
    secrets: dict[str, str],
    uid: Callable[[Container], int],
    start: Callable[[Container], None] = Container.start,
    **create: Any,
) -> Container:
    """Create a container (``create``: the SDK's arguments), write ``secrets`` into it as the
    image's user ``uid`` of it, and ``start`` it (the caller's steps around the start included);
    the container and its volumes are removed if any of that fails."""
    container = client.containers.create(image, argv, **create)
    try:
        if secrets:
            put_secrets(container, secrets, uid(container))
        start(container)
    except BaseException:
        container.remove(force=True, v=True)
        raise
    return container


def kill_and_remove(container: Container) -> None:
    """SIGKILL the container, then remove it with its volumes. Conflicts and a missing
    container mean the work is done: the agent had exited, or a concurrent eviction (a
    lifetime expiry and a heartbeat timeout) or Swarm (reaping a dead task) went first."""
    for step in (lambda: container.kill(signal="SIGKILL"), lambda: container.remove(v=True, force=True)):
        try:
            step()
        except NotFound:
            return
        except APIError as error:
            if error.status_code != HTTP_CONFLICT:
                raise


def stop_and_remove(container: Container) -> None:
    """Stop the container gracefully (SIGTERM, then SIGKILL after ``RELEASE_TIMEOUT_S``), then
    remove it with its volumes."""
    container.stop(timeout=RELEASE_TIMEOUT_S)
    kill_and_remove(container)
