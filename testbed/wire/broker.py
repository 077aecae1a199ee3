"""The run's own MQTT broker: amqtt (embedded) or Mosquitto, each in its own process.

Running the broker in a child process keeps broker work off the master's event
loop and lets tests restart it mid-run like any real broker (``stop`` then
``start`` keeps the port and the credentials).

A broker the run starts requires credentials made for that run: one identity
for the master and one per agent (its node id, with a password derived from a
secret of the run, so the broker needs no list of nodes). The broker's access
rules let only the master publish commands, and each agent publish only its own
node's state, heartbeats and task updates and read only its own commands.
Credentials reach the broker in private files (mode 0600, in a temporary
directory only this user can enter), never in an environment, on a command
line, in a log or in the run directory.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import re
import secrets
import shutil
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from testbed.node.processes import child_env, dying_with_parent, private_env, take_secrets
from testbed.wire.capabilities import derive
from testbed.wire.mqtt import BrokerAddress

AGENT_PUBLISHES = ("state", "hb", "task")
AGENT_READS = ("cmd",)
AGENT_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")
"""A node id, which is an agent's broker user name: no MQTT wildcard, no level separator."""


ENROL_USER = "enrol"
"""The login of agents not yet named (compose, Swarm: ``agents.naming``), which no node id may be."""
NAME_REQUESTS = "tb/+/enrol/+/ask"
NAME_ANSWERS = "tb/+/enrol/+/named"


def node_topic(node: str, leaf: str) -> str:
    """The topic (filter) ``leaf`` of node ``node`` in any run; ``+``: every node."""
    return f"tb/+/node/{node}/{leaf}"


def publish_rules(user: str, master: str) -> list[str]:
    """The topics ``user`` may publish to: every node's commands and every name answer for
    the master, name requests for the enrolment login, its own node's state, heartbeats and
    task updates for an agent."""
    if user == master:
        return [*(node_topic("+", leaf) for leaf in AGENT_READS), NAME_ANSWERS]
    if user == ENROL_USER:
        return [NAME_REQUESTS]
    return [node_topic(user, leaf) for leaf in AGENT_PUBLISHES]


def subscribe_rules(user: str, master: str) -> list[str]:
    """What ``user`` may read: name requests only the master (they carry the asking agent's key)."""
    if user == master:
        return [*(node_topic("+", leaf) for leaf in AGENT_PUBLISHES), NAME_REQUESTS]
    if user == ENROL_USER:
        return [NAME_ANSWERS]
    return [node_topic(user, leaf) for leaf in AGENT_READS]


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
    """The identities of one run: the master's, and one per agent derived from
    ``agent_secret``; ``generate`` makes fresh random ones."""

    master: Credentials
    agent_secret: str = field(repr=False)

    @classmethod
    def generate(cls) -> RunCredentials:
        master = Credentials(f"master-{secrets.token_hex(4)}", secrets.token_urlsafe(24))
        return cls(master, secrets.token_urlsafe(24))

    def agent_for(self, node_id: str) -> Credentials:
        """The login of the agent of node ``node_id`` (its user name is the node id)."""
        if not AGENT_NAME.fullmatch(node_id) or node_id in (self.master.username, ENROL_USER):
            raise ValueError(f"{node_id!r} cannot be a broker user name")
        return Credentials(node_id, agent_password(self.agent_secret, node_id))


AGENT_SECRET_ENV = "TESTBED_AGENT_SECRET"
"""Where a compose or Swarm run's master finds the secret its broker derives agents' passwords from."""


def agent_password(agent_secret: str, node_id: str) -> str:
    return derive(agent_secret, f"mqtt {node_id}")


class ManagedBroker(Protocol):
    """A broker the run starts and stops (and a test may restart)."""

    kind: str
    """Which broker it is: ``amqtt`` or ``mosquitto``."""
    host: str
    port: int
    credentials: RunCredentials
    process: asyncio.subprocess.Process | None

    async def agent_login(self, node_id: str) -> Credentials:
        """The login of the agent of ``node_id``, which the broker accepts from now on."""
        ...

    async def start(self, timeout: float = 15.0) -> None: ...
    async def stop(self) -> None: ...
    async def restart(self) -> None: ...
    async def close(self) -> None: ...


def broker_auth(credentials: RunCredentials, enrol_password: str = "") -> dict[str, str]:
    """The logins an amqtt broker of the run accepts (``testbed.wire.broker_auth.RunAuthPlugin``):
    the master's, every agent's (derived) and, for compose and Swarm, the enrolment login's."""
    auth = {
        "master": credentials.master.username,
        "master_password": credentials.master.password,
        "agent_secret": credentials.agent_secret,
    }
    return {**auth, "enrol_password": enrol_password} if enrol_password else auth


def master_address(broker: ManagedBroker) -> BrokerAddress:
    creds = broker.credentials.master
    return BrokerAddress(broker.host, broker.port, creds.username, creds.password)


async def agent_env(broker: ManagedBroker, node_id: str) -> dict[str, str]:
    """What the agent of ``node_id`` needs to log in (read by ``BrokerAddress.parse``)."""
    creds = await broker.agent_login(node_id)
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


def amqtt_config(host: str, port: int, auth: dict[str, str] | None = None) -> dict[str, object]:
    """An external listener: ``serve`` owns the socket, so it can stop accepting before amqtt stops.
    ``auth``: the master's login and the agents' secret (``EmbeddedBroker._auth``); None: anonymous."""
    listeners = {LISTENER: {"type": "external", "bind": f"{host}:{port}", "max_connections": 0}}
    if not auth:
        plugins: dict[str, object] = {
            "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}
        }
    else:
        plugins = {
            "testbed.wire.broker_auth.RunAuthPlugin": auth,
            "testbed.wire.broker_auth.RunTopicPlugin": {"master": auth["master"]},
        }
    return {"listeners": listeners, "plugins": plugins}


async def serve(host: str, port: int) -> None:
    """Run an amqtt broker until SIGTERM/SIGINT; its users come from the file the run wrote
    (``testbed.node.processes.take_secrets``), else it lets anyone in.

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
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    broker = Broker(amqtt_config(host, port, take_secrets()))
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

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    async def agent_login(self, node_id: str) -> Credentials:
        return self.credentials.agent_for(node_id)

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

    async def close(self) -> None:
        await self.stop()


@contextlib.contextmanager
def private_directory(prefix: str) -> Iterator[Path]:
    """A new temporary directory only this user can enter (0700), removed on exit."""
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class EmbeddedBroker(_BrokerProcess):
    """The amqtt broker in a child process; ``url`` is what agents and the master connect to.
    It derives each agent's password itself (``testbed.wire.broker_auth``): no list of nodes. Its
    logins reach it in a private file it deletes once read (gone once it listens)."""

    kind = "amqtt"

    def _auth(self) -> dict[str, str]:
        return broker_auth(self.credentials)

    async def start(self, timeout: float = 15.0) -> None:
        argv = [sys.executable, "-m", "testbed.app.cli", "broker", "--host", self.host]
        argv += ["--port", str(self.port)]
        with private_directory("testbed-amqtt-") as directory:
            await self._spawn(argv, child_env(private_env(self._auth(), directory, "amqtt")), timeout)


# ------------------------------------------------------------------ Mosquitto


def mosquitto_binary() -> str | None:
    found = shutil.which("mosquitto")
    return found or ("/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else None)


LOGIN_ACCEPTED_S = 10.0
"""How long Mosquitto may take to accept a new agent login after a reload."""


class MosquittoBroker(_BrokerProcess):
    """A private Mosquitto for one run: its own config, password file and ACL file (mode 0600).

    Mosquitto reads them as it starts, so they are deleted as soon as it listens (and
    written again for a restart): a master killed with SIGKILL leaves no directory of
    secrets behind, and Mosquitto itself dies with it (``dying_with_parent``).

    Mosquitto checks passwords against its file only, so a new agent's login means
    writing the files again where Mosquitto first read them, a SIGHUP (Mosquitto
    re-reads them) and, once the new login is accepted, deleting them again
    (``agent_login``; a master killed in that moment leaves them behind).
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
        self.agents: dict[str, Credentials] = {}
        """Every agent login so far (a restart or a reload writes them all)."""
        self._config: Path | None = None
        self._reloading = asyncio.Lock()

    def _write_config(self, directory: Path) -> Path:
        passwords = [self.credentials.master, *self.agents.values()]
        _private_file(directory / "passwd", "".join(password_line(c) for c in passwords))
        master = self.credentials.master.username
        acl = [f"pattern write {node_topic('%u', leaf)}" for leaf in AGENT_PUBLISHES]
        acl += [f"pattern read {node_topic('%u', leaf)}" for leaf in AGENT_READS]
        acl.append(f"user {master}")
        acl += [f"topic write {topic}" for topic in publish_rules(master, master)]
        acl += [f"topic read {topic}" for topic in subscribe_rules(master, master)]
        _private_file(directory / "acl", "\n".join(acl) + "\n")
        config = directory / "mosquitto.conf"
        lines = [
            f"listener {self.port} {self.host}",
            "allow_anonymous false",
            f"password_file {directory / 'passwd'}",
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
        with private_directory("testbed-mosquitto-") as directory:
            self._config = self._write_config(directory)
            await self._spawn(dying_with_parent([binary, "-c", str(self._config)]), child_env(), timeout)

    async def agent_login(self, node_id: str) -> Credentials:
        creds = self.credentials.agent_for(node_id)
        if node_id not in self.agents:
            self.agents[node_id] = creds
            if self.running and self._config is not None:
                async with self._reloading:
                    await self._reload(self._config, creds)
        return creds

    async def _reload(self, config: Path, creds: Credentials) -> None:
        """Write the files again where Mosquitto first read them (a directory made anew, only
        ours: ``mkdir`` fails if anyone else made it meanwhile), SIGHUP, wait until the new
        login is accepted, then delete them."""
        os.mkdir(config.parent, 0o700)
        try:
            self._write_config(config.parent)
            assert self.process is not None
            self.process.send_signal(signal.SIGHUP)
            await until_login_accepted(self.host, self.port, creds, LOGIN_ACCEPTED_S)
        finally:
            shutil.rmtree(config.parent, ignore_errors=True)


async def until_login_accepted(host: str, port: int, creds: Credentials, timeout: float) -> None:
    """Until the broker lets ``creds`` in (readiness polling, bounded)."""
    import aiomqtt

    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            async with aiomqtt.Client(
                host,
                port,
                username=creds.username,
                password=creds.password,
                identifier=f"probe-{os.urandom(4).hex()}",
            ):
                return
        except aiomqtt.MqttError:
            if asyncio.get_running_loop().time() > deadline:
                raise RuntimeError(
                    f"the broker did not accept the login of {creds.username} within {timeout:g}s"
                ) from None
            await asyncio.sleep(0.02)


def password_line(creds: Credentials, iterations: int = 101) -> str:
    """A Mosquitto 2 password file line (``$7$``: PBKDF2-SHA512, as ``mosquitto_passwd`` writes)."""
    salt = os.urandom(12)
    digest = hashlib.pbkdf2_hmac("sha512", creds.password.encode(), salt, iterations)
    encoded = [base64.b64encode(x).decode() for x in (salt, digest)]
    return f"{creds.username}:$7${iterations}${encoded[0]}${encoded[1]}\n"


def _private_file(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


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
