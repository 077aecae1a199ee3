"""The run's broker: per-run credentials, and only the master may command agents."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiomqtt
import pytest

from testbed.broker import (
    Credentials,
    EmbeddedBroker,
    ManagedBroker,
    MosquittoBroker,
    RunCredentials,
    mosquitto_binary,
)

pytestmark = pytest.mark.e2e

needs_mosquitto = pytest.mark.skipif(mosquitto_binary() is None, reason="mosquitto is not installed")
KINDS = [EmbeddedBroker, pytest.param(MosquittoBroker, marks=needs_mosquitto)]
CMD = "tb/run1/node/transient-0/cmd"
STATE = "tb/run1/node/transient-0/state"


@pytest.fixture(params=KINDS, ids=["amqtt", "mosquitto"])
async def broker(request: pytest.FixtureRequest) -> AsyncIterator[ManagedBroker]:
    started: ManagedBroker = request.param()
    await started.start()
    try:
        yield started
    finally:
        await started.close()


def client(broker: ManagedBroker, creds: Credentials | None) -> aiomqtt.Client:
    return aiomqtt.Client(
        broker.host,
        broker.port,
        username=creds.username if creds else None,
        password=creds.password if creds else None,
        timeout=5,
    )


async def test_each_run_makes_fresh_credentials() -> None:
    first, second = RunCredentials.generate(), RunCredentials.generate()
    names = {first.master.username, first.agent.username, second.master.username, second.agent.username}
    assert len(names) == 4
    assert first.master.password != second.master.password
    assert first.master.password not in repr(first)


@pytest.mark.parametrize("who", ["anonymous", "wrong-password", "other-run"])
async def test_the_broker_refuses_strangers(broker: ManagedBroker, who: str) -> None:
    creds = {
        "anonymous": None,
        "wrong-password": Credentials(broker.credentials.master.username, "guess"),
        "other-run": RunCredentials.generate().master,
    }[who]
    with pytest.raises(aiomqtt.MqttError):
        async with client(broker, creds):
            pass


async def received(subscriber: aiomqtt.Client, until: bytes) -> list[bytes]:
    """Payloads delivered to ``subscriber`` up to and including ``until``."""
    payloads = []
    async with asyncio.timeout(10):
        async for message in subscriber.messages:
            payloads.append(bytes(message.payload))
            if payloads[-1] == until:
                return payloads
    return payloads


async def test_only_the_master_may_publish_commands(broker: ManagedBroker) -> None:
    """An agent's identity publishing a command first, the master's second: only the master's arrives."""
    master, agent = broker.credentials.master, broker.credentials.agent
    async with (
        client(broker, agent) as listener,
        client(broker, agent) as rogue,
        client(broker, master) as boss,
    ):
        await listener.subscribe(CMD, qos=1)
        await rogue.publish(CMD, b"forged launch", qos=1)
        await boss.publish(CMD, b"real launch", qos=1)
        assert await received(listener, until=b"real launch") == [b"real launch"]


async def test_only_agents_may_publish_node_state(broker: ManagedBroker) -> None:
    master, agent = broker.credentials.master, broker.credentials.agent
    async with (
        client(broker, master) as listener,
        client(broker, master) as forger,
        client(broker, agent) as node,
    ):
        await listener.subscribe(STATE, qos=1)
        await forger.publish(STATE, b"forged state", qos=1)
        await node.publish(STATE, b"real state", qos=1)
        assert await received(listener, until=b"real state") == [b"real state"]
