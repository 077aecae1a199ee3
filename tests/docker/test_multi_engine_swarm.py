"""A real multi-engine Swarm on this one machine: three Docker engines, each in its own network
namespace (``tests/support/docker_engines.py``), one manager and two workers, run the eviction-storm
stack (``testbed compose --per-node``). The master talks to the manager's socket only: an
agent killed on a worker's engine was killed through the Swarm manager (its service removed),
since nothing else reaches that engine."""

from __future__ import annotations

import csv
import ipaddress
import json
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from master.providers.node_container import LABEL_CLASS, LABEL_NODE, LABEL_RUN
from testbed.app.cli import main
from tests.support.docker import assert_scenario_results, wait_for_master, wait_until_gone
from tests.support.docker_engines import Engine, Engines, EnginesUnavailable

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1200)]
REPO = Path(__file__).resolve().parents[2]
SCENARIO = "eviction-storm"


@pytest.fixture
def swarm(docker_client: docker.DockerClient, image: str, tmp_path: Path) -> Iterator[Engines]:
    tag = os.getpid() % 10_000
    engines = Engines(f"tbsw{tag}", ipaddress.ip_network(f"10.231.{tag % 200 + 20}.0/24"))
    tar = tmp_path / "image.tar"
    with tar.open("wb") as out:
        for chunk in docker_client.images.get(image).save(named=True):
            out.write(chunk)
    try:
        try:
            engines.start(3, tar)
        except EnginesUnavailable as error:
            pytest.skip(f"no multi-engine Swarm on this host: {error}")
        finally:
            tar.unlink()
        yield engines
    finally:
        engines.close()
    assert engines.leftovers() == []


class EventLog(threading.Thread):
    """The container events of one engine for one run, as they happen (an engine keeps only
    its last 256 events, fewer than a run's health checks)."""

    def __init__(self, engine: Engine, run_id: str) -> None:
        super().__init__(daemon=True)
        assert engine.client is not None
        self.engine = engine.name
        self.events: list[dict[str, Any]] = []
        self.stream = engine.client.events(
            decode=True, filters={"type": "container", "label": f"{LABEL_RUN}={run_id}"}
        )

    def run(self) -> None:
        for event in self.stream:
            self.events.append(event)

    def stop(self) -> list[dict[str, Any]]:
        self.stream.close()
        self.join(30)
        return list(self.events)


def test_eviction_storm_across_engines(
    swarm: Engines, image: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = f"tbsw{os.getpid()}"
    results = tmp_path / "results"
    results.mkdir()
    stack_file = tmp_path / "stack.yaml"
    monkeypatch.chdir(REPO)
    assert (
        main(
            [
                "compose",
                f"scenarios/{SCENARIO}.yaml",
                "--per-node",
                "--host-cores",
                "2",
                "-o",
                str(stack_file),
            ]
        )
        == 0
    )
    env = {
        "TESTBED_RUN_ID": stack,
        "TESTBED_DOCKER_IMAGE": image,
        "TESTBED_RESULTS": str(results),
        "TESTBED_DOCKER_SOCKET": swarm.manager.socket,
    }
    docker_cli = ["docker", "-H", f"unix://{swarm.manager.socket}"]
    logs = [EventLog(engine, stack) for engine in swarm.engines]
    for log in logs:
        log.start()
    manager = swarm.manager.client
    assert manager is not None
    try:
        deploy = subprocess.run(
            [*docker_cli, "stack", "deploy", "-c", str(stack_file), stack],
            capture_output=True,
            text=True,
            env={**os.environ, **env},
        )
        assert deploy.returncode == 0, deploy.stderr
        state = wait_for_master(manager, stack)
        master_log = subprocess.run(
            [*docker_cli, "service", "logs", f"{stack}_master"], capture_output=True, text=True
        )
        assert state == "complete", (
            f"master task ended {state}: {(master_log.stdout + master_log.stderr)[-3000:]}"
        )
    finally:
        events = {log.engine: log.stop() for log in logs}
        subprocess.run([*docker_cli, "stack", "rm", stack], capture_output=True)
        for engine in swarm.engines:
            assert engine.client is not None
            wait_until_gone(engine.client, stack)

    assert_scenario_results(results, SCENARIO)  # every job succeeded, outputs exact
    run_dir = results / SCENARIO
    with (run_dir / "evictions.csv").open() as rows:
        evicted = {row["node_id"]: row["reason"] for row in csv.DictReader(rows)}
    assert len(evicted) >= 2 and "storm" in evicted.values(), evicted

    started = {
        name: [e for e in log if e["Action"] == "start" and LABEL_CLASS in e["Actor"]["Attributes"]]
        for name, log in events.items()
    }
    engines_with_agents = sorted(name for name, starts in started.items() if starts)
    assert len(engines_with_agents) >= 2, started

    containers = adopted_containers(run_dir)
    workers = [engine.name for engine in swarm.engines[1:]]
    kills_on_workers = {
        node: signals
        for worker in workers
        for node, signals in kill_signals(events[worker], containers).items()
        if node in evicted
    }
    assert kills_on_workers, (
        f"no evicted node ran on a worker: evicted {evicted}, agents on {engines_with_agents}"
    )
    assert all(signals == ["9"] for signals in kills_on_workers.values()), kills_on_workers


def adopted_containers(run_dir: Path) -> dict[str, str]:
    """node id -> container short id of each node the master adopted (``node_launching``)."""
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    return {e["node"]: e["container"] for e in events if e["event"] == "node_launching" and "container" in e}


def kill_signals(events: list[dict[str, Any]], adopted: dict[str, str]) -> dict[str, list[str]]:
    """node id -> the signals its container got on this engine: an adopted node's container
    by its id, a new node's by its ``testbed.node`` label."""
    by_container = {short: node for node, short in adopted.items()}
    signals: dict[str, list[str]] = {}
    for event in events:
        if event["Action"] != "kill":
            continue
        attributes = event["Actor"]["Attributes"]
        node = attributes.get(LABEL_NODE) or by_container.get(event["Actor"]["ID"][:12])
        if node:
            signals.setdefault(node, []).append(attributes["signal"])
    return signals
