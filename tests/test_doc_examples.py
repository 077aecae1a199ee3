"""Every example of the docs runs, so that a doc cannot drift from the code: each Python block
parses and every testbed name it imports exists; the files docs/plugins.md ships are written
to a directory of their own, as a new user would, and their scenarios validate, their tests
pass under a pytest of that directory's own (no asyncio_mode: the testbed's is not the
user's), and the shell block that runs them on every backend runs as written (e2e here, the
Docker lines in tests/docker/test_doc_examples_docker.py)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.doc_blocks import Block, blocks, cli_argv, commands, example, user_env, user_project
from tests.support.plugins import doc_files

PACKAGES = ("testbed", "master", "agents")
PYTHON = [b for b in blocks() if b.lang == "python"]


def imported_names(block: Block) -> list[tuple[str, str]]:
    """(module, name) of every ``from testbed... import name`` of the block."""
    return [
        (node.module, alias.name)
        for node in ast.walk(ast.parse(block.text))
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES
        for alias in node.names
    ]


@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_every_name_a_python_block_imports_from_the_testbed_exists(block: Block) -> None:
    names = imported_names(block)
    missing = [f"{mod}.{name}" for mod, name in names if not hasattr(importlib.import_module(mod), name)]
    assert not missing, f"{block.where} imports what the testbed does not have: {missing}"


def test_the_docs_python_blocks_import_the_testbed() -> None:
    """The check above is not vacuous: the docs' blocks import dozens of the testbed's names."""
    assert sum(len(imported_names(b)) for b in PYTHON) >= 30


SCENARIOS = sorted(name for name in doc_files() if name.endswith(".yaml"))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_scenario_the_docs_ship_validates(tmp_path: Path, scenario: str, isolated_path: None) -> None:
    from testbed.app.cli import main

    assert main(["validate", str(user_project(tmp_path) / scenario)]) == 0


def pytest_in(directory: Path, *files: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files],
        cwd=directory,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_the_docs_tests_pass_in_a_project_of_their_own(tmp_path: Path) -> None:
    files = ("test_my_policies.py", "test_my_strategy.py", "test_inverted_index.py")
    done = pytest_in(user_project(tmp_path), *files)
    assert done.returncode == 0 and "4 passed" in done.stdout, done.stdout + done.stderr


@pytest.mark.e2e
def test_the_docs_async_run_test_passes_in_a_project_of_their_own(tmp_path: Path) -> None:
    """The harness' async test, in strict mode (pytest-asyncio's default): it passes because
    the doc marks it, not because the testbed's own configuration runs every coroutine."""
    done = pytest_in(user_project(tmp_path), "test_random_run.py")
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout + done.stderr


def needs_docker(argv: list[str]) -> bool:
    return any("docker" in word or word.startswith("results/") for word in argv)


@pytest.mark.e2e
def test_the_docs_every_backend_commands_run_as_written_but_docker(tmp_path: Path) -> None:
    """docs/plugins.md's shell block, in ~/my-plugins as it says: every command without Docker
    (local agents, the simulator, compose into a directory that does not exist yet, the
    checks) exits 0."""
    project = user_project(tmp_path / "my-plugins")
    argvs = [argv for argv in commands(example("every-backend")) if not needs_docker(argv)]
    assert [argv[1] for argv in argvs] == ["run", "run", "compose", "check-output"]
    for argv in argvs:
        done = subprocess.run(cli_argv(argv), cwd=project, env=user_env(), capture_output=True, text=True)
        assert done.returncode == 0, f"{' '.join(argv)}: {done.stderr}"
    assert (project / "stack" / "compose.yaml").is_file()
    assert (project / "runs" / "sim" / "summary.json").is_file()
