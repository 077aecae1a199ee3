"""Docker runs in tests: run ids and leftovers, container events, compose stacks, waits."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import pytest
from docker.models.containers import Container

from master.providers.node_container import LABEL_RUN
from testbed.app.cli import main
from testbed.node.cgroups import CgroupUnavailable, detect, hierarchy_path, remove_everywhere
from testbed.node.processes import SECRETS_FILE_ENV
from testbed.scenario.schema import load_scenario
from testbed.wire.broker import ENROL_USER
from tests.support.runs import assert_exact

_run_numbers = itertools.count()


def new_run_id() -> str:
    """Unique per test process and call, so that leftovers of a crashed session never collide."""
    return f"pytest-{os.getpid()}-{next(_run_numbers)}"


def remove_run(client: docker.DockerClient, run_id: str) -> None:
    """Everything labelled with the run, and its CPU groups on the host: the safety net under
    DockerProvider.close()."""
    label = {"label": f"{LABEL_RUN}={run_id}"}
    for container in client.containers.list(all=True, filters=label):
        container.remove(force=True, v=True)
    with contextlib.suppress(CgroupUnavailable):
        remove_everywhere(hierarchy_path(detect().run_dir(run_id)))
    for volume in client.volumes.list(filters=label):
        volume.remove(force=True)
    for network in client.networks.list(filters=label):
        network.remove()


def run_leftovers(client: docker.DockerClient, run_id: str) -> list[str]:
    label = {"label": f"{LABEL_RUN}={run_id}"}
    return [
        *(f"container {c.name}" for c in client.containers.list(all=True, filters=label)),
        *(f"volume {v.name}" for v in client.volumes.list(filters=label)),
        *(f"network {n.name}" for n in client.networks.list(filters=label)),
    ]


@dataclass(frozen=True)
class Decoys:
    """One container of another run (with a node id this run also uses) and one unlabelled."""

    other_run: Container
    unlabelled: Container
    other_run_node_id: str

    def assert_alive(self) -> None:
        for container in (self.other_run, self.unlabelled):
            container.reload()
            assert container.status == "running", f"decoy {container.name} was touched"


@dataclass(frozen=True)
class ContainerEvent:
    action: str
    attributes: dict[str, str]


def container_events(client: docker.DockerClient, container_id: str, since: float) -> list[ContainerEvent]:
    """The engine's events for one container from `since` until now (the engine's record,
    not the provider's account of what it did)."""
    until = int(time.time()) + 1
    stream = client.events(
        since=int(since), until=until, decode=True, filters={"type": "container", "container": container_id}
    )
    return [ContainerEvent(e["Action"], e["Actor"]["Attributes"]) for e in stream]


HEALTH_WAIT_S = 60


def wait_healthy(client: docker.DockerClient, container: Container, since: float) -> None:
    """Block until the engine reports the container healthy (its HEALTHCHECK passed)."""
    events = client.events(
        since=int(since),
        until=int(time.time()) + HEALTH_WAIT_S,
        decode=True,
        filters={"container": container.id, "event": "health_status"},
    )
    for event in events:
        if event["Action"] == "health_status: healthy":
            return
    container.reload()
    raise AssertionError(f"{container.name} not healthy: {container.attrs['State'].get('Health')}")


REPO = Path(__file__).resolve().parents[2]


def compose_command() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    pytest.skip("neither docker-compose nor the docker compose plugin is installed")


def compose_up_and_down(
    client: docker.DockerClient,
    stack: Path,
    run_id: str,
    env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``up --exit-code-from master`` of a generated compose file as project ``run_id`` (with
    ``env`` set), then ``down -v`` and the run's containers removed, whatever happened; asserts
    the master exited 0 and nothing of the run is left."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    project = [*compose_command(), "-f", str(stack), "-p", run_id]
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # docker-compose v1 is Python too
    try:
        up = subprocess.run(
            [*project, "up", "--exit-code-from", "master"], capture_output=True, text=True, env=clean
        )
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
    finally:
        subprocess.run([*project, "down", "-v"], capture_output=True, env=clean)
        remove_run(client, run_id)
    assert run_leftovers(client, run_id) == []


def assert_scenario_results(results: Path, name: str = "quickstart") -> dict[str, Any]:
    """Every job of the shipped scenario succeeded with exact outputs, and the report is there."""
    run_dir = results / name
    scenario = load_scenario(REPO / "scenarios" / f"{name}.yaml")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["succeeded"] == summary["jobs"] == len(scenario.jobs), summary
    assert (run_dir / "report.md").exists() and (run_dir / "report.html").exists()
    assert_exact(scenario, run_dir)
    return summary


def run_secrets(directory: Path) -> list[str]:
    """Fresh secrets of a compose run in ``directory`` (``testbed secrets``): every value."""
    assert main(["secrets", str(directory)]) == 0
    values = [v for f in directory.iterdir() for v in json.loads(f.read_text()).values()]
    return [v for v in values if v != ENROL_USER]


def assert_no_secret_in_env(containers: list[Container], secrets: list[str]) -> None:
    """``docker inspect``'s Env of each container names its secret file, and holds no secret."""
    assert containers
    for container in containers:
        env = container.attrs["Config"]["Env"]
        assert not [s for s in secrets if any(s in variable for variable in env)], f"{container.name}: {env}"
        assert any(v.startswith(f"{SECRETS_FILE_ENV}=") for v in env), f"{container.name}: {env}"


def master_task_state(client: docker.DockerClient, stack: str) -> str:
    tasks = client.api.tasks(filters={"service": f"{stack}_master"})
    return tasks[0]["Status"]["State"] if tasks else "pending"


@contextlib.contextmanager
def deployed_stack(
    client: docker.DockerClient,
    compose_file: Path,
    env: dict[str, str],
    while_running: Callable[[str], None] | None = None,
) -> Iterator[str]:
    """Deploy the compose file as a stack of a run of its own, wait until its master's task
    completed, yield the stack's name; then remove the stack and check nothing of it is left.
    ``while_running(stack)`` acts on the stack once it is deployed, before the wait."""
    stack = f"stack{new_run_id()}".replace("-", "")
    env = {"TESTBED_RUN_ID": stack, **env}
    try:
        deploy = subprocess.run(
            ["docker", "stack", "deploy", "-c", str(compose_file), stack],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
        )
        assert deploy.returncode == 0, deploy.stderr
        if while_running is not None:
            while_running(stack)
        state = wait_for_master(client, stack)
        assert state == "complete", f"master task ended {state}: {service_logs(stack)}"
        yield stack
    finally:
        subprocess.run(["docker", "stack", "rm", stack], capture_output=True)
        wait_until_gone(client, stack)
    assert run_leftovers(client, stack) == []
    assert client.secrets.list(filters={"label": f"{LABEL_RUN}={stack}"}) == []


FINAL_STATES = ("complete", "failed", "rejected", "shutdown", "orphaned")
"""The states a Swarm task does not leave."""


def wait_for_master(client: docker.DockerClient, stack: str, limit_s: float = 600) -> str:
    """The master task's final state (Swarm reports it through the manager)."""
    deadline = _now() + limit_s
    while _now() < deadline:
        state = master_task_state(client, stack)
        if state in FINAL_STATES:
            return state
        _pause()
    return f"still {master_task_state(client, stack)} after {limit_s:.0f}s"


def wait_for_event(
    client: docker.DockerClient,
    stack: str,
    events: Path,
    wanted: Callable[[dict[str, Any]], bool],
    limit_s: float = 300,
) -> None:
    """Until ``events``, the journal of the stack's master (in its run directory, through
    ``TESTBED_RESULTS``), has an event ``wanted`` accepts; an ``AssertionError`` if the master's
    task ends first. A last line still being written is not read."""
    deadline = _now() + limit_s
    while _now() < deadline:
        lines = events.read_text().split("\n")[:-1] if events.exists() else []
        if any(wanted(json.loads(line)) for line in lines):
            return
        if (state := master_task_state(client, stack)) in FINAL_STATES:
            raise AssertionError(f"the master's task ended {state}: {service_logs(stack)}")
        _pause()
    raise AssertionError(f"no such event in {events} after {limit_s:.0f}s")


def wait_until_gone(client: docker.DockerClient, stack: str, limit_s: float = 120) -> None:
    """`docker stack rm` returns before the tasks' containers and the network are removed."""
    label = {"label": f"com.docker.stack.namespace={stack}"}
    deadline = _now() + limit_s
    while _now() < deadline and (
        client.containers.list(all=True, sparse=True, filters=label) or client.networks.list(filters=label)
    ):
        _pause()


def service_logs(stack: str) -> str:
    logs = subprocess.run(["docker", "service", "logs", f"{stack}_master"], capture_output=True, text=True)
    return (logs.stdout + logs.stderr)[-3000:]


def _now() -> float:
    return time.monotonic()


def _pause() -> None:
    time.sleep(1)  # polling the engine's record of an external process, not synchronising ours


def swarm_state(client: docker.DockerClient) -> str:
    return client.info().get("Swarm", {}).get("LocalNodeState", "inactive")
