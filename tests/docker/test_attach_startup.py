"""An attached master (compose, Swarm) whose agents never come up fails in one line, exit 1:
which nodes are missing and what the engine reports of the agents' containers or tasks."""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from master.providers.node_container import LABEL_CLASS, LABEL_RUN
from master.shell import node_start
from testbed.app.cli import main
from tests.support.docker import new_run_id, remove_run

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]


def test_agents_that_never_came_up_are_named_in_one_line(
    docker_client: docker.DockerClient,
    image: str,
    mosquitto: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    run_id = new_run_id()
    scenario = tmp_path / "attached.yaml"
    scenario.write_text("name: attached\ncluster: {reserved: 1, transient: 1}\njobs: [{workload: noop}]\n")
    monkeypatch.setenv("TESTBED_RUN_ID", run_id)
    monkeypatch.setenv("TESTBED_BROKER", mosquitto)
    monkeypatch.setattr(node_start, "ATTACH_WAIT_S", 2.0)
    try:  # an agent container that exited 0 (as one Swarm stopped for a failed probe did)
        gone = docker_client.containers.run(
            image, ["true"], labels={LABEL_RUN: run_id, LABEL_CLASS: "transient"}, detach=True
        )
        assert gone.wait(timeout=120)["StatusCode"] == 0
        status = main(["run", str(scenario), "--backend", "attach", "--out", str(tmp_path / "run")])
    finally:
        remove_run(docker_client, run_id)
    err = capsys.readouterr().err
    assert status == 1, err
    assert "Traceback" not in err, err
    (line,) = [line for line in err.splitlines() if "cannot start" in line]
    assert line.startswith("testbed run: after 2s, 0 of 1 reserved and 0 of 1 transient nodes are up"), line
    assert "never asked for a name (not started, or no broker): 1 reserved, 1 transient" in line, line
    assert line.endswith("the agents' tasks: transient: 1 exited (exit 0)"), line
