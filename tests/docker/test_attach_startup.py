"""An attached master (compose, Swarm) whose agents never come up fails in one line, exit 1:
which nodes are missing and what the engine reports of the agents' containers or tasks."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import docker
import pytest

from master.providers.node_container import LABEL_CLASS, LABEL_RUN
from master.shell import node_start
from testbed.app.cli import main
from tests.support.docker import new_run_id, remove_run

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]


def attached_scenario(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, run_id: str, broker: str, transient: int = 1
) -> Path:
    """A scenario of 1 reserved and ``transient`` nodes running one noop job, for a master
    attached (``TESTBED_RUN_ID``, ``TESTBED_BROKER``) to run ``run_id``'s agents."""
    scenario = tmp_path / "attached.yaml"
    scenario.write_text(
        f"name: attached\ncluster: {{reserved: 1, transient: {transient}}}\njobs: [{{workload: noop}}]\n"
    )
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_BROKER", broker)
    return scenario


def run_attached(scenario: Path) -> int:
    return main(["run", str(scenario), "--backend", "attach", "--out", str(scenario.parent / "run")])


def cannot_start_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line of a master that exited 1 at its start, with no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    (line,) = [line for line in err.splitlines() if "cannot start" in line]
    return line


def test_agents_that_never_came_up_are_named_in_one_line(
    docker_client: docker.DockerClient,
    image: str,
    mosquitto: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_id = new_run_id()
    scenario = attached_scenario(tmp_path, monkeypatch, run_id, mosquitto)
    monkeypatch.setattr(node_start, "ATTACH_WAIT_S", 2.0)
    try:  # an agent container that exited 0 (as one Swarm stopped for a failed probe did)
        gone = docker_client.containers.run(
            image, ["true"], labels={LABEL_RUN: run_id, LABEL_CLASS: "transient"}, detach=True
        )
        assert gone.wait(timeout=120)["StatusCode"] == 0
        status = run_attached(scenario)
    finally:
        remove_run(docker_client, run_id)
    line = cannot_start_line(capsys)
    assert status == 1, line
    assert line.startswith("testbed run: after 2s, 0 of 1 reserved and 0 of 1 transient nodes are up"), line
    assert "never asked for a name (not started, or no broker): 1 reserved, 1 transient" in line, line
    assert line.endswith("the agents' tasks: transient: 1 exited (exit 0)"), line


def test_a_named_agent_that_did_not_come_up_is_reported_with_its_containers_last_words(
    docker_client: docker.DockerClient,
    image: str,
    mosquitto: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An agent that asks for its name, is named, then cannot open its data-plane port (the
    port is taken): it exits 1 with one line, and the master's line names the node with its
    container's state and that line, not only "named but not up"."""
    run_id = new_run_id()
    scenario = attached_scenario(tmp_path, monkeypatch, run_id, mosquitto)
    monkeypatch.setattr(node_start, "ATTACH_WAIT_S", 45.0)  # the agent's start, naming and exit
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        agent = [
            *("agent", "--run", run_id, "--node-class", "transient", "--broker", mosquitto),
            *("--listen", "127.0.0.1", "--port", str(port), "--data-dir", "/tmp/node"),
        ]
        try:  # on the host's network: it reaches the loopback broker, and finds the port taken
            docker_client.containers.run(
                image,
                agent,
                labels={LABEL_RUN: run_id, LABEL_CLASS: "transient"},
                network_mode="host",
                detach=True,
            )
            status = run_attached(scenario)
        finally:
            remove_run(docker_client, run_id)
    line = cannot_start_line(capsys)
    assert status == 1, line
    assert "0 of 1 transient nodes are up" in line, line
    assert "named but not up: transient-0 (container " in line, line
    assert ", launching: exited (exit 1), last log: " in line, line
    assert f"giving up: cannot serve blocks on 127.0.0.1:{port}: Address already in use);" in line, line


def test_an_attached_run_gives_up_on_a_named_agent_that_does_not_come_up_and_goes_on(
    docker_client: docker.DockerClient,
    image: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A compose-like run (a broker and three agents on one network) in which one transient
    agent is named and then cannot listen (its address is not the container's): after its
    start deadline the master gives up on it, kills its container and the run goes on with the
    other two, as a launching master does with a node that did not come up."""
    run_id = new_run_id()
    network = docker_client.networks.create(f"testbed-{run_id}", labels={LABEL_RUN: run_id})
    try:
        broker = docker_client.containers.run(
            image, ["broker"], network=network.name, labels={LABEL_RUN: run_id}, detach=True
        )
        broker.reload()
        address = broker.attrs["NetworkSettings"]["Networks"][network.name]["IPAddress"]
        scenario = attached_scenario(tmp_path, monkeypatch, run_id, f"mqtt://{address}:1883", transient=2)
        agent = ["agent", "--run", run_id, "--broker", f"mqtt://{address}:1883", "--data-dir", "/data"]
        agent += ["--advertise", "auto", "--port", "7070"]
        for node_class, listen in [
            ("reserved", "0.0.0.0"),
            ("transient", "0.0.0.0"),
            ("transient", "192.0.2.1"),
        ]:
            docker_client.containers.run(
                image,
                [*agent, "--node-class", node_class, "--listen", listen],
                network=network.name,
                labels={LABEL_RUN: run_id, LABEL_CLASS: node_class},
                detach=True,
            )
        status = run_attached(scenario)
    finally:
        remove_run(docker_client, run_id)
    err = capsys.readouterr().err
    assert status == 0, err
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines()]
    (failed,) = [e for e in events if e["event"] == "node_start_failed"]
    assert failed["class"] == "transient", failed
    assert failed["error"].startswith("it did not come up within "), failed
    assert "cannot serve blocks on 192.0.2.1:7070: Cannot assign requested address" in failed["error"], failed
    assert "started with 1 reserved + 1 transient nodes of 1 + 2 asked (1 did not come up)" in err, err
    finished = [e for e in events if e["event"] == "job_finished"]
    assert len(finished) == 1 and finished[0]["status"] == "succeeded", finished
