"""Shared fixtures: a real Mosquitto broker, a temporary directory of the processes, an isolated
import path. The helpers tests import are in ``tests/support``."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from testbed.wire.broker import free_port
from tests.support.broker import wait_port

# Property tests draw the same examples in every run (and keep no example database): a CI
# failure is the same failure on a developer's machine, and a passing run stays passing.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.load_profile("deterministic")


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection built (the modules, their parameters) lives as long as the session: it
    goes to the collector's permanent generation, so that no collection walks it again (each
    of pytest's five collections at the end of a session walked it: 3.2 s of 18 in a profiled
    ``--collect-only``)."""
    gc.freeze()


@pytest.fixture(scope="session", autouse=True)
def processes_temp_dir() -> Iterator[None]:
    """The processes the tests start get a ``TMPDIR`` of their own, removed at the end: a
    master or an agent the test SIGKILLs cannot delete its temporary files (its provider's
    directory, a forkserver's socket), and none may stay in /tmp. This process keeps its
    own (pytest's ``tmp_path`` stays where it is)."""
    tempfile.gettempdir()
    temp = tempfile.mkdtemp(prefix="testbed-tests-")
    previous = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = temp
    yield
    if previous is None:
        os.environ.pop("TMPDIR", None)
    else:
        os.environ["TMPDIR"] = previous
    shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture
def short_tmpdir(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A run's TMPDIR, short (its provider's private directory, and its nodes' forkserver
    sockets, go in it: a socket's path is limited to 107 bytes), removed after."""
    temp = Path(tempfile.mkdtemp(prefix="t-", dir="/tmp"))
    monkeypatch.setenv("TMPDIR", str(temp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    yield temp
    shutil.rmtree(temp, ignore_errors=True)


@pytest.fixture
def isolated_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Loading a scenario puts its directory on sys.path and PYTHONPATH, and imports its
    plugins: undo both after (plugin modules are those loaded from under ``tmp_path``)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", ":".join(p for p in sys.path if p))
    yield
    for name, module in list(sys.modules.items()):
        if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path)):
            del sys.modules[name]


@pytest.fixture
def mosquitto(tmp_path: Path) -> Iterator[str]:
    """A real Mosquitto broker on a free loopback port, stopped after the test."""
    binary = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    if not os.path.exists(binary):
        pytest.skip("mosquitto is not installed (apt-get install mosquitto)")
    port = free_port()
    config = tmp_path / "mosquitto.conf"
    config.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
    process = subprocess.Popen([binary, "-c", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_port(port, process)
        yield f"mqtt://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)
