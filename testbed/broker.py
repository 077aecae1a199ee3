"""The run's own MQTT broker: amqtt (embedded) or Mosquitto, each in its own process.

Running the broker in a child process keeps broker work off the master's event
loop and lets tests restart it mid-run like any real broker (``stop`` then
``start`` keeps the port and the credentials).

A broker the run starts requires credentials made for that run: one identity
for the master and one for the agents, with random names and passwords. The
broker's access rules let only the master publish commands and only agents
publish node state, heartbeats and task updates. Credentials travel in
environment variables and private files (mode 0600), never on a command line,
in a log or in the run directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from testbed.mqtt import BrokerAddress
from testbed.processes import child_env, dying_with_parent

AUTH_ENV = "TESTBED_BROKER_AUTH"
"""How the embedded broker's child process receives its users and access rules (JSON)."""

NODE_TOPICS = "tb/+/node/+"
MASTER_PUBLISHES = (f"{NODE_TOPICS}/cmd",)
AGENT_PUBLISHES = (f"{NODE_TOPICS}/state", f"{NODE_TOPICS}/hb", f"{NODE_TOPICS}/task")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class Credentials:
    username: str
    password: str = field(repr=False)


@dataclass(frozen=True)
class RunCredentials:
    """The two identities of one run; ``generate`` makes fresh random ones."""

    master: Credentials
    agent: Credentials

    @classmethod
    def generate(cls) -> RunCredentials:
        return cls(
            Credentials(f"master-{secrets.token_hex(4)}", secrets.token_urlsafe(24)),
            Credentials(f"agent-{secrets.token_hex(4)}", secrets.token_urlsafe(24)),
        )

    def publish_acl(self) -> dict[str, list[str]]:
        """Who may publish where; everyone may subscribe to what they may not publish."""
        return {self.master.username: list(MASTER_PUBLISHES), self.agent.username: list(AGENT_PUBLISHES)}

    def subscribe_acl(self) -> dict[str, list[str]]:
        return {self.master.username: list(AGENT_PUBLISHES), self.agent.username: list(MASTER_PUBLISHES)}


class ManagedBroker(Protocol):
    """A broker the run starts and stops (and a test may restart)."""

    kind: str
    """Which broker it is: ``amqtt`` or ``mosquitto``."""
    host: str
    port: int
    credentials: RunCredentials
    process: asyncio.subprocess.Process | None

    async def start(self, timeout: float = 15.0) -> None: ...
    async def stop(self) -> None: ...
    async def restart(self) -> None: ...
    async def close(self) -> None: ...


def master_address(broker: ManagedBroker) -> BrokerAddress:
    creds = broker.credentials.master
    return BrokerAddress(broker.host, broker.port, creds.username, creds.password)


def agent_env(broker: ManagedBroker) -> dict[str, str]:
    """What an agent needs to log in (read by ``BrokerAddress.parse``)."""
    creds = broker.credentials.agent
    return {"TESTBED_MQTT_USERNAME": creds.username, "TESTBED_MQTT_PASSWORD": creds.password}


def make_broker(kind: str, host: str = "127.0.0.1", log_path: Path | None = None) -> ManagedBroker | None:
    """The broker a scenario's ``broker`` field asks the run to start (None: an external one);
    its own output goes to ``log_path``. ``embedded`` is a private Mosquitto when its binary
    is installed (it takes hundreds of clients in its stride), amqtt otherwise; ``amqtt``
    forces the latter."""
    if kind == "embedded":
        kind = "mosquitto" if mosquitto_binary() is not None else "amqtt"
    if kind == "amqtt":
        return EmbeddedBroker(host, log_path=log_path)
    if kind == "mosquitto":
        return MosquittoBroker(host, log_path=log_path)
    return None


# ------------------------------------------------------------------ amqtt


LISTENER = "default"
SHUTDOWN_TIMEOUT_S = 2.0
"""How long amqtt may tidy up once every client is gone; the process exits regardless."""


def amqtt_config(host: str, port: int, auth: dict[str, Any] | None = None) -> dict[str, object]:
    """An external listener: ``serve`` owns the socket, so it can stop accepting before amqtt stops."""
    listeners = {LISTENER: {"type": "external", "bind": f"{host}:{port}", "max_connections": 0}}
    if auth is None:
        plugins: dict[str, object] = {
            "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}
        }
    else:
        plugins = {
            "testbed.broker_auth.RunAuthPlugin": {"users": auth["users"]},
            "amqtt.plugins.topic_checking.TopicAccessControlListPlugin": {
                "publish_acl": auth["publish"],
                "acl": auth["subscribe"],
            },
        }
    return {"listeners": listeners, "plugins": plugins}


async def serve(host: str, port: int) -> None:
    """Run an amqtt broker until SIGTERM/SIGINT; users and access rules come from ``AUTH_ENV``.

    On the signal it stops as a crashed broker would: it closes its port, resets
    every connection at once and only then lets amqtt shut down. amqtt's own
    shutdown closes clients one by one while still accepting, and can hang on
    one of them; a client that had reconnected meanwhile sat on a broker that
    no longer routed anything, and took the silence for the loss of every node.
    """
    import logging
    import warnings

    from amqtt.adapters import StreamReaderAdapter, StreamWriterAdapter
    from amqtt.broker import Broker

    logging.getLogger("amqtt").setLevel(logging.CRITICAL)  # connection probes log as errors
    logging.getLogger("transitions").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # amqtt's own 'acl' option
    raw = os.environ.pop(AUTH_ENV, None)
    broker = Broker(amqtt_config(host, port, json.loads(raw) if raw else None))
    await broker.start()
    connections: set[asyncio.StreamWriter] = set()

    async def on_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.add(writer)
        try:
            await broker.external_connected(
                StreamReaderAdapter(reader), StreamWriterAdapter(writer), LISTENER
            )
        finally:
            connections.discard(writer)

    server = await asyncio.start_server(on_connection, host, port)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    server.close()
    for writer in list(connections):
        writer.transport.abort()
    with contextlib.suppress(Exception):
        await asyncio.wait_for(broker.shutdown(), SHUTDOWN_TIMEOUT_S)


class _BrokerProcess:
    """What both managed brokers share: an address, the run's credentials, a child process
    and where its output goes (``log_path``, appended across restarts; None: this process's)."""

    kind: str

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int | None = None,
        credentials: RunCredentials | None = None,
        log_path: Path | None = None,
    ) -> None:
        self.host = host
        self.port = port or free_port(host)
        self.credentials = credentials or RunCredentials.generate()
        self.log_path = log_path
        self.process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    async def _spawn(self, argv: list[str], env: dict[str, str], timeout: float) -> None:
        with contextlib.ExitStack() as files:
            output = None
            if self.log_path is not None:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                output = files.enter_context(self.log_path.open("ab"))
                output.write(f"testbed: starting the {self.kind} broker on {self.url}\n".encode())
                output.flush()
            self.process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=output,
                stderr=output,
                env=env,
                start_new_session=True,
            )
        await wait_for_port(self.host, self.port, timeout, self.process)

    async def stop(self) -> None:
        await _terminate(self.process)

    async def restart(self) -> None:
        """Stop (SIGTERM) and start again: same port, same logins, nothing remembered."""
        await self.stop()
        await self.start()


class EmbeddedBroker(_BrokerProcess):
    """The amqtt broker in a child process; ``url`` is what agents and the master connect to."""

    kind = "amqtt"

    def _auth(self) -> str:
        c = self.credentials
        users = {c.master.username: c.master.password, c.agent.username: c.agent.password}
        return json.dumps({"users": users, "publish": c.publish_acl(), "subscribe": c.subscribe_acl()})

    async def start(self, timeout: float = 15.0) -> None:
        argv = [sys.executable, "-m", "testbed.cli", "broker", "--host", self.host, "--port", str(self.port)]
        await self._spawn(argv, child_env({AUTH_ENV: self._auth()}), timeout)

    async def close(self) -> None:
        await self.stop()


# ------------------------------------------------------------------ Mosquitto


def mosquitto_binary() -> str | None:
    found = shutil.which("mosquitto")
    return found or ("/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else None)


class MosquittoBroker(_BrokerProcess):
    """A private Mosquitto for one run: its own config, password file and ACL file (mode 0600).

    Mosquitto reads them as it starts, so they are deleted as soon as it listens (and
    written again for a restart): a master killed with SIGKILL leaves no directory of
    secrets behind, and Mosquitto itself dies with it (``dying_with_parent``).
    """

    kind = "mosquitto"

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int | None = None,
        credentials: RunCredentials | None = None,
        log_path: Path | None = None,
    ) -> None:
        super().__init__(host, port, credentials, log_path)
        self.directory: Path | None = None

    def _write_config(self) -> Path:
        directory = Path(tempfile.mkdtemp(prefix="testbed-mosquitto-"))
        self.directory = directory
        c = self.credentials
        passwords = directory / "passwd"
        _private_file(passwords, "".join(f"{u.username}:{u.password}\n" for u in (c.master, c.agent)))
        _hash_password_file(passwords)
        acl = []
        for user, topics in c.publish_acl().items():
            acl.append(f"user {user}")
            acl += [f"topic write {topic}" for topic in topics]
            acl += [f"topic read {topic}" for topic in c.subscribe_acl()[user]]
        _private_file(directory / "acl", "\n".join(acl) + "\n")
        config = directory / "mosquitto.conf"
        lines = [
            f"listener {self.port} {self.host}",
            "allow_anonymous false",
            f"password_file {passwords}",
            f"acl_file {directory / 'acl'}",
            "persistence false",
            "log_dest stderr",  # its errors and warnings, into log_path when there is one
            "log_type error",
            "log_type warning",
            # Mosquitto drops what a client has not taken beyond 1,000 queued messages: a
            # master behind thousands of task updates would lose some.
            "max_queued_messages 1000000",
        ]
        if os.geteuid() == 0:  # else Mosquitto drops to its own user and cannot read our 0600 files
            lines.append("user root")
        _private_file(config, "\n".join(lines) + "\n")
        return config

    async def start(self, timeout: float = 15.0) -> None:
        binary = mosquitto_binary()
        if binary is None:
            raise RuntimeError("broker: mosquitto needs Mosquitto installed (apt-get install mosquitto)")
        config = self._write_config()
        try:
            await self._spawn(dying_with_parent([binary, "-c", str(config)]), child_env(), timeout)
        finally:
            self._remove_config()

    def _remove_config(self) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None

    async def close(self) -> None:
        await self.stop()
        self._remove_config()


def _private_file(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def _hash_password_file(path: Path) -> None:
    """``mosquitto_passwd -U`` hashes the plain passwords in place (none ever appears on a command line)."""
    tool = shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd"
    subprocess.run([tool, "-U", str(path)], check=True, capture_output=True)


# ------------------------------------------------------------------ processes


async def _terminate(process: asyncio.subprocess.Process | None) -> None:
    if process is None or process.returncode is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), 5)
    except TimeoutError:
        process.kill()
        await process.wait()


async def wait_for_port(
    host: str, port: int, timeout: float, process: asyncio.subprocess.Process | None = None
) -> None:
    """Until something accepts on host:port (or the process died, or the time is up)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    delay = 0.01
    while True:
        try:
            _, writer = await asyncio.open_connection(host, port)
            writer.close()
            return
        except OSError:
            if process is not None and process.returncode is not None:
                raise RuntimeError(f"the broker exited with status {process.returncode}") from None
            if loop.time() > deadline:
                raise TimeoutError(f"nothing listens on {host}:{port} after {timeout}s") from None
            await asyncio.sleep(delay)
            delay = min(delay * 2, 0.2)
