"""An agent whose broker goes away, or is not there at its start (a Swarm stack's broker task
restarting): it keeps trying, with backoff, for as long as ``--broker-wait``, counted from the
last connection the broker accepted; then it exits 1 with one line saying why (Swarm's
``on-failure`` policy starts it again). It exits 0 only when stopped (SIGTERM), and says so.

Real agent processes (``python -m agents``, as compose starts them) and a real Mosquitto,
stopped and started again on its port."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aiomqtt
import pytest

from agents.naming import ask_name
from testbed.node.processes import child_env
from testbed.wire.broker import free_port
from testbed.wire.capabilities import name_proof, seal
from testbed.wire.mqtt import BrokerAddress
from testbed.wire.protocol import Codec, NameRequest, NodeNamed, NodeState, Topics
from tests.support.broker import wait_port

MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
pytestmark = pytest.mark.skipif(not Path(MOSQUITTO).exists(), reason="mosquitto is not installed")
TOPICS = Topics("r1")
CODEC = Codec()
DEADLINE_S = 60.0
"""How long a test waits for what must happen (generous: a busy host)."""


class Mosquitto:
    """An anonymous Mosquitto on a fixed loopback port, stopped and started again at will."""

    def __init__(self, directory: Path) -> None:
        self.port = free_port()
        self.config = directory / "mosquitto.conf"
        self.config.write_text(f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def address(self) -> BrokerAddress:
        return BrokerAddress("127.0.0.1", self.port)

    def start(self) -> None:
        self.process = subprocess.Popen(
            [MOSQUITTO, "-c", str(self.config)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        wait_port(self.port, self.process)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Mosquitto]:
    mosquitto = Mosquitto(tmp_path)
    try:
        yield mosquitto
    finally:
        mosquitto.stop()


@contextlib.asynccontextmanager
async def agent(tmp_path: Path, port: int, *flags: str) -> AsyncIterator[asyncio.subprocess.Process]:
    """``python -m agents`` of run r1, killed at the end if still running."""
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "agents", "--run", "r1", "--node-class", "transient"),
        *("--broker", f"mqtt://127.0.0.1:{port}", "--data-dir", str(tmp_path / "node"), "--lazy-workers"),
        *flags,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(),
    )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def exit_of(process: asyncio.subprocess.Process) -> tuple[int, list[str]]:
    """Its exit status and the lines it wrote to stderr."""
    assert process.stderr is not None
    async with asyncio.timeout(DEADLINE_S):
        stderr = await process.stderr.read()
        status = await process.wait()
    return status, stderr.decode().splitlines()


async def first_state(broker: Mosquitto, node_id: str, state: str) -> NodeState:
    """The first (retained or live) state ``state`` that ``node_id`` publishes."""
    async with aiomqtt.Client("127.0.0.1", broker.port) as client:
        await client.subscribe(TOPICS.state(node_id), qos=1)
        async with asyncio.timeout(DEADLINE_S):
            async for message in client.messages:
                found = CODEC.decode(bytes(message.payload or b""))
                if isinstance(found, NodeState) and found.state == state:
                    return found
    raise AssertionError("the broker closed the connection")


async def requests_seen(broker: Mosquitto, count: int) -> NameRequest:
    """The ``count``-th name request an unnamed agent sends (a master that does not answer)."""
    async with aiomqtt.Client("127.0.0.1", broker.port) as client:
        await client.subscribe(TOPICS.name_requests("+"), qos=1)
        async with asyncio.timeout(DEADLINE_S):
            async for message in client.messages:
                request = CODEC.decode(bytes(message.payload or b""))
                if isinstance(request, NameRequest):
                    count -= 1
                    if not count:
                        return request
    raise AssertionError("the broker closed the connection")


async def answer(broker: Mosquitto, node_id: str) -> None:
    """The master's answer to the next name request: nothing sealed for the agent (this broker
    takes anyone), proven with the request's key."""
    request = await requests_seen(broker, 1)
    sealed = seal(request.key, f"{request.host} {request.incarnation} {node_id}", {})
    proof = name_proof(request.key, request.host, request.incarnation, node_id, sealed)
    named = NodeNamed(
        host=request.host, incarnation=request.incarnation, node_id=node_id, proof=proof, sealed=sealed
    )
    async with aiomqtt.Client("127.0.0.1", broker.port) as client:
        await client.publish(TOPICS.name_answers(request.host), Codec.encode(named), qos=1)


async def test_an_agent_without_a_broker_gives_up_in_one_line_and_exit_1(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    async with agent(tmp_path, port, "--broker-wait", "1") as process:
        status, lines = await exit_of(process)
    assert status == 1, lines
    (line,) = [line for line in lines if "giving up" in line]
    assert line.startswith("agent ") and f"no broker at mqtt://127.0.0.1:{port} for " in line, line
    assert "still unnamed" in line
    assert not any("Traceback" in line for line in lines), lines


async def test_the_wait_counts_from_the_last_connection_not_from_the_start(broker: Mosquitto) -> None:
    """An unnamed agent waiting (connected) for a master longer than its broker wait, whose broker
    then restarts, goes on asking and takes its name: the wait is for the broker, not the master."""
    broker.start()
    asking = asyncio.create_task(ask_name(broker.address, "r1", "c0ffee123456", "transient", 2, 512, 1.0))
    first = await requests_seen(broker, 4)  # 4 requests, 0.5 s apart: longer than the wait, unanswered
    broker.stop()
    broker.start()
    await answer(broker, "transient-7")
    async with asyncio.timeout(DEADLINE_S):
        assert await asking == ("transient-7", {}, "127.0.0.1")
    assert first.host == "c0ffee123456"


async def test_a_named_agent_whose_broker_goes_for_good_exits_1_in_one_line(
    broker: Mosquitto, tmp_path: Path
) -> None:
    broker.start()
    async with agent(tmp_path, broker.port, "--node-id", "transient-0", "--broker-wait", "2") as process:
        await first_state(broker, "transient-0", "up")
        broker.stop()
        status, lines = await exit_of(process)
    assert status == 1, lines
    (line,) = [line for line in lines if "giving up" in line]
    assert line.startswith("agent transient-0: giving up: the broker at "), line
    assert "out of reach for" in line, line
    assert not any("Traceback" in line for line in lines), lines


async def test_an_unnamed_agent_outlives_a_broker_restart_and_exits_0_only_when_stopped(
    broker: Mosquitto, tmp_path: Path
) -> None:
    broker.start()
    async with agent(tmp_path, broker.port, "--broker-wait", "30") as process:
        await requests_seen(broker, 1)
        broker.stop()
        broker.start()
        named = asyncio.create_task(answer(broker, "transient-2"))
        up = await first_state(broker, "transient-2", "up")
        await named
        assert up.pid == process.pid and process.returncode is None
        process.send_signal(signal.SIGTERM)
        status, lines = await exit_of(process)
    assert status == 0, lines
    assert any("transient-2: stopping on SIGTERM" in line for line in lines), lines
