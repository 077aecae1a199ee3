"""The run's broker: per-run credentials, only the master may command agents, and each agent
speaks and listens for its own node only."""

from __future__ import annotations

from collections.abc import AsyncIterator

import aiomqtt
import pytest

from testbed.wire.broker import (
    Credentials,
    EmbeddedBroker,
    ManagedBroker,
    MosquittoBroker,
    RunCredentials,
    mosquitto_binary,
)
from tests.support.mqtt_clients import client, received

pytestmark = pytest.mark.e2e

needs_mosquitto = pytest.mark.skipif(mosquitto_binary() is None, reason="mosquitto is not installed")
KINDS = [EmbeddedBroker, pytest.param(MosquittoBroker, marks=needs_mosquitto)]
CMD = "tb/run1/node/transient-0/cmd"
STATE = "tb/run1/node/transient-0/state"
OTHER = "transient-1"


@pytest.fixture(params=KINDS, ids=["amqtt", "mosquitto"])
async def broker(request: pytest.FixtureRequest) -> AsyncIterator[ManagedBroker]:
    started: ManagedBroker = request.param()
    for node in ("transient-0", OTHER):  # as a run does before it launches the node
        await started.agent_login(node)
    await started.start()
    try:
        yield started
    finally:
        await started.close()


async def test_each_run_makes_fresh_credentials() -> None:
    first, second = RunCredentials.generate(), RunCredentials.generate()
    assert first.master.username != second.master.username
    assert first.master.password != second.master.password
    agents = {c.agent_for(n).password for c in (first, second) for n in ("transient-0", OTHER)}
    assert len(agents) == 4
    assert first.master.password not in repr(first) and first.agent_secret not in repr(first)
    for bad in ("+", "a/b", "#", "", first.master.username):
        with pytest.raises(ValueError):
            first.agent_for(bad)


@pytest.mark.parametrize("who", ["anonymous", "wrong-password", "other-run", "other-node's-password"])
async def test_the_broker_refuses_strangers(broker: ManagedBroker, who: str) -> None:
    creds = {
        "anonymous": None,
        "wrong-password": Credentials(broker.credentials.master.username, "guess"),
        "other-run": RunCredentials.generate().master,
        "other-node's-password": Credentials("transient-0", (await broker.agent_login(OTHER)).password),
    }[who]
    with pytest.raises(aiomqtt.MqttError):
        async with client(broker, creds):
            pass


async def test_only_the_master_may_publish_commands(broker: ManagedBroker) -> None:
    """An agent's identity publishing a command first, the master's second: only the master's arrives."""
    master, agent = broker.credentials.master, await broker.agent_login("transient-0")
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
    master, agent = broker.credentials.master, await broker.agent_login("transient-0")
    async with (
        client(broker, master) as listener,
        client(broker, master) as forger,
        client(broker, agent) as node,
    ):
        await listener.subscribe(STATE, qos=1)
        await forger.publish(STATE, b"forged state", qos=1)
        await node.publish(STATE, b"real state", qos=1)
        assert await received(listener, until=b"real state") == [b"real state"]


@pytest.mark.parametrize("leaf", ["state", "hb", "task"])
async def test_an_agent_speaks_for_its_own_node_only(broker: ManagedBroker, leaf: str) -> None:
    """A compromised agent publishing as another node first, the real node second: only the
    real node's message arrives (the broker drops the forgery)."""
    topic = f"tb/run1/node/transient-0/{leaf}"
    async with (
        client(broker, broker.credentials.master) as listener,
        client(broker, await broker.agent_login(OTHER)) as forger,
        client(broker, await broker.agent_login("transient-0")) as node,
    ):
        await listener.subscribe(topic, qos=1)
        await forger.publish(topic, b"forged", qos=1)
        await node.publish(topic, b"real", qos=1)
        assert await received(listener, until=b"real") == [b"real"]


async def test_an_agent_reads_its_own_commands_only(broker: ManagedBroker) -> None:
    """Subscribed to another node's commands and to every node's, an agent receives its own only."""
    async with (
        client(broker, await broker.agent_login(OTHER)) as snoop,
        client(broker, broker.credentials.master) as boss,
    ):
        for topic in (CMD, "tb/run1/node/+/cmd", "tb/#", f"tb/run1/node/{OTHER}/cmd"):
            await snoop.subscribe(topic, qos=1)
        await boss.publish(CMD, b"for transient-0", qos=1)
        await boss.publish(f"tb/run1/node/{OTHER}/cmd", b"mine", qos=1)
        assert await received(snoop, until=b"mine") == [b"mine"]
