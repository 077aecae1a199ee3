"""docs/plugins.md's shell block whole, Docker lines included, as written in the user's
directory (tests/test_doc_examples.py runs the lines without Docker on every CI run).
``docker compose`` is docker-compose where only v1 is installed (the doc says either)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import docker
import pytest

from tests.support.doc_blocks import cli_argv, commands, example, user_env, user_project
from tests.support.docker import compose_command, new_run_id, remove_run

pytestmark = [pytest.mark.docker, pytest.mark.e2e]


def run(argv: list[str], project: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    if argv[:2] == ["docker", "compose"]:
        command = [*compose_command(), *argv[2:]]
        env = {k: v for k, v in env.items() if k != "PYTHONPATH"}  # docker-compose v1 is Python too
    else:
        command = cli_argv(argv)
    return subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=900)


def test_the_docs_every_backend_commands_run_as_written(
    tmp_path: Path, image: str, docker_client: docker.DockerClient
) -> None:
    project = user_project(tmp_path / "my-plugins")
    run_id = f"docexample-{new_run_id()}"
    env = {**user_env(), "TESTBED_RUN_ID": run_id, "TESTBED_DOCKER_IMAGE": image}
    argvs = commands(example("every-backend"))
    down = next(argv for argv in argvs if argv[:2] == ["docker", "compose"] and "down" in argv)
    try:
        for argv in argvs:
            done = run(argv, project, env)
            assert done.returncode == 0, f"{' '.join(argv)}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    finally:
        run(down, project, env)
        remove_run(docker_client, run_id)
    assert (project / "results" / "my-experiment" / "summary.json").is_file()
    assert sorted(os.listdir(project / "runs")) == ["docker", "local", "sim"]
