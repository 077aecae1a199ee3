"""Where a run's nodes live, and the addresses that follow from it.

``local``   agents are processes on this host; everything talks over 127.0.0.1.
``docker``  agents are containers the master launches (DockerProvider); the embedded
            broker and the master's HTTP API listen on the run network's gateway, which
            is where containers reach the host.
``attach``  agents were started by someone else (compose, a Swarm stack) and announce
            themselves; the master waits for the scenario's node counts, and evicts or
            replaces nodes through the Docker API by label (AttachProvider). The master
            itself runs in a container: it listens on all interfaces and advertises its
            address on the route to the broker.

Environment: ``TESTBED_RUN_ID`` fixes the run id (compose files and the agents they start
must agree on it), ``TESTBED_BROKER`` overrides the scenario's broker (``mqtt://broker:1883``
in the compose files), ``TESTBED_RUN_TOKEN`` fixes the run token, ``TESTBED_DOCKER_IMAGE``
is the agents' image for ``docker``, ``TESTBED_MQTT_USERNAME``/``_PASSWORD`` the broker
credentials (passed on to the containers' environment, never on a command line).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from master.providers.base import NodeProvider
from master.providers.local import LocalProvider, python_command
from testbed.node.cgroups import CpuCgroups

BACKENDS = ("local", "docker", "attach")
DEFAULT_IMAGE = "transient-testbed:latest"


@dataclass
class Backend:
    provider: NodeProvider
    host: str  # where the embedded broker and the master's HTTP API listen
    advertise: str  # the master's address in the URLs it gives agents
    agent_prefix: list[str]  # the agent's command line before its flags
    attach: bool = False
    broker_url: str | None = None  # overrides the scenario's broker
    agent_env: dict[str, str] = field(default_factory=dict)


def run_id_for(name: str) -> str:
    return os.environ.get("TESTBED_RUN_ID") or f"{name}-{secrets.token_hex(3)}"


def run_token() -> str:
    return os.environ.get("TESTBED_RUN_TOKEN") or secrets.token_hex(16)


def broker_credentials() -> dict[str, str]:
    names = ("TESTBED_MQTT_USERNAME", "TESTBED_MQTT_PASSWORD")
    return {name: os.environ[name] for name in names if os.environ.get(name)}


async def open_backend(
    name: str,
    run_id: str,
    run_dir: Path,
    inputs: Sequence[Path] = (),
    cgroups: CpuCgroups | None = None,
    plugin_dirs: Sequence[str] = (),
) -> Backend:
    """The provider and addresses of a backend; the caller closes ``provider`` in any case.
    ``inputs``: the jobs' input files, which containers mount read-only at the same path;
    ``cgroups``: where local and Docker nodes get their CPU quotas (a faithful run); ``plugin_dirs``
    (``policy.plugin_path``): mounted read-only at the same path in containers too, and
    on their ``PYTHONPATH``, so that workers import workload plugins (local agents
    inherit the master's ``PYTHONPATH``)."""
    broker_url = os.environ.get("TESTBED_BROKER") or None
    if name == "local":
        provider = LocalProvider(run_id, run_dir / "nodes", run_dir / "logs", cgroups)
        return Backend(provider, "127.0.0.1", "127.0.0.1", python_command(), broker_url=broker_url)
    if name == "docker":
        from master.providers.docker import DockerProvider

        image = os.environ.get("TESTBED_DOCKER_IMAGE", DEFAULT_IMAGE)
        env = {
            **broker_credentials(),
            **({"PYTHONPATH": os.pathsep.join(plugin_dirs)} if plugin_dirs else {}),
        }
        mounted = [*inputs, *(Path(directory) for directory in plugin_dirs)]
        docker_provider = DockerProvider(run_id, image, env=env, inputs=mounted, cgroups=cgroups)
        backend = Backend(docker_provider, "", "", ["agent"], broker_url=broker_url)
        try:
            backend.host = backend.advertise = await docker_provider.host_address()
        except BaseException:
            await docker_provider.close()
            raise
        return backend
    if name == "attach":
        from master.providers.attach import AttachProvider
        from testbed.wire.mqtt import BrokerAddress
        from testbed.wire.routes import route_address

        if broker_url is None:
            raise ValueError("--backend attach needs TESTBED_BROKER=mqtt://HOST:PORT (the agents' broker)")
        advertise = await route_address(BrokerAddress.parse(broker_url).host)
        return Backend(AttachProvider(run_id), "0.0.0.0", advertise, ["agent"], True, broker_url)
    raise ValueError(f"unknown backend {name!r}; one of {', '.join(BACKENDS)}")
