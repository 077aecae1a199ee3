"""Shared fixtures: a real Mosquitto broker, scenario builders, leak checks."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

from testbed.journal.tables import rebuild_tables
from testbed.scenario.schema import Scenario, parse_scenario
from testbed.wire.broker import free_port

if TYPE_CHECKING:
    from master.core.commands import Command
    from master.core.machine import MasterCore
    from master.shell.master import Master

# Property tests draw the same examples in every run (and keep no example database): a CI
# failure is the same failure on a developer's machine, and a passing run stays passing.
settings.register_profile("deterministic", derandomize=True, database=None)
settings.load_profile("deterministic")


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


def make_scenario(**fields: Any) -> Scenario:
    """A small valid scenario; keyword arguments replace top-level fields."""
    data: dict[str, Any] = {
        "name": "test",
        "seed": 7,
        "cluster": {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
        "jobs": [{"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 2}],
        "timeout": 120,
    }
    data.update(fields)
    return parse_scenario(data)


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


def offline_master(scenario: Scenario, run_dir: Path, **options: Any) -> Master:
    """A master that is never started: no broker, no provider, no agents. Tests drive its
    handlers directly."""
    from master.shell.master import Master
    from testbed.wire.mqtt import BrokerAddress

    return Master(
        scenario,
        "offline",
        run_dir,
        provider=None,  # type: ignore[arg-type]
        broker=BrokerAddress("127.0.0.1", 1),
        token="t",
        agent_command=lambda node_id, node_class: [],
        **options,
    )


def core_act(core: MasterCore, now: float, operation: Any, *args: Any) -> tuple[Any, list[Command]]:
    """Apply one of the core's operations at ``now`` from outside ``handle`` (a test reaching
    into one of its parts): the operation's result and the commands it caused."""
    core.outbox.now = now
    result = operation(*args)
    return result, core._commands()


def shell_act(master: Master, operation: Any, *args: Any) -> Any:
    """The same on a master's core now, its commands carried out by the master (journal, sends)."""
    result, commands = core_act(master.core, master.journal.now(), operation, *args)
    master._execute(commands)
    return result


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def assert_tables_from_events(run_dir: Path) -> None:
    """The CSVs the run wrote are those its ``events.jsonl`` makes, byte for byte."""
    with tempfile.TemporaryDirectory() as elsewhere:
        rebuilt = Path(elsewhere)
        counts = rebuild_tables(run_dir / "events.jsonl", rebuilt)
        written = sorted(p.name for p in run_dir.glob("*.csv"))
        assert sorted(f"{table}.csv" for table in counts) == written
        for name in written:
            assert (rebuilt / name).read_bytes() == (run_dir / name).read_bytes(), name


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
        _wait_port(port, process)
        yield f"mqtt://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(10)


def _wait_port(port: int, process: subprocess.Popen[bytes]) -> None:
    """Poll until the broker accepts connections (readiness, not a timed sleep)."""
    for _ in range(500):
        if process.poll() is not None:
            stderr = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"mosquitto exited: {stderr}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(0.02)
    raise TimeoutError(f"mosquitto did not listen on {port}")


def plugin_module(
    directory: Path, source: str, prefix: str, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> str:
    """Write ``source`` as a module of a name of its own (modules are cached) in ``directory``,
    importable the way a module beside a scenario is; it is forgotten after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("PYTHONPATH", "")
    module = prefix + re.sub(r"\W", "_", request.node.name)
    (directory / f"{module}.py").write_text(source, encoding="utf-8")
    request.addfinalizer(lambda: sys.modules.pop(module, None))
    return module


def assert_validate_refuses(
    path: Path, field: str, expected: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``testbed validate PATH`` exits 2 with one line: the file, then ``field``, then ``expected``."""
    from testbed.app.cli import main

    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"{path}: {field}"), err
    assert expected in err
