"""An agent without a node id asks the master for one over a real broker, and takes only
an answer for its own request that carries the proof of its own key, with the node's
credentials sealed under that key."""

from __future__ import annotations

import asyncio
import dataclasses

import aiomqtt
import pytest

from agents.naming import ask_name
from testbed.wire.capabilities import name_proof, seal, unseal
from testbed.wire.mqtt import BrokerAddress
from testbed.wire.protocol import Codec, NameRequest, NodeNamed, Topics

TOPICS = Topics("r1")
HOST = "c0ffee123456"
OWN = {"TESTBED_MQTT_USERNAME": "transient-3", "TESTBED_MQTT_PASSWORD": "pw", "TESTBED_NODE_KEY": "k"}


def answer(request: NameRequest, node_id: str, key: str, values: dict[str, str]) -> NodeNamed:
    sealed = seal(key, f"{HOST} {request.incarnation} {node_id}", values)
    proof = name_proof(key, HOST, request.incarnation, node_id, sealed)
    return NodeNamed(host=HOST, incarnation=request.incarnation, node_id=node_id, proof=proof, sealed=sealed)


async def master_answering(broker: BrokerAddress, ready: asyncio.Event) -> list[NameRequest]:
    """Answer the first request wrongly (another incarnation, a bad proof, a key that is not the
    request's, a seal changed after the proof), then rightly."""
    codec = Codec()
    async with aiomqtt.Client(broker.host, broker.port, identifier="r1-master") as client:
        await client.subscribe(TOPICS.name_requests("+"), qos=1)
        ready.set()
        async for message in client.messages:
            request = codec.decode(bytes(message.payload or b""))
            assert isinstance(request, NameRequest)
            right = answer(request, "transient-3", request.key, OWN)
            answers = [
                NodeNamed(host=HOST, incarnation="other", node_id="transient-9", proof="x"),
                NodeNamed(host=HOST, incarnation=request.incarnation, node_id="reserved-5", proof="forged"),
                answer(request, "reserved-5", "not-the-agents-key", OWN),
                right.model_copy(update={"sealed": answer(request, "transient-3", request.key, {}).sealed}),
                right,
            ]
            for named in answers:
                await client.publish(TOPICS.name_answers(HOST), codec.encode(named), qos=1)
            return [request]
    raise AssertionError("the broker closed the connection")


async def test_the_agent_takes_only_its_proven_name(mosquitto: str) -> None:
    """... and says which address of the broker's name it was named over: the agent advertises
    its route to that address, with no second lookup of the name (docs/reliability.md)."""
    broker = BrokerAddress.parse(mosquitto, {})
    assert broker.host == "127.0.0.1"
    by_name = dataclasses.replace(broker, host="localhost")
    ready = asyncio.Event()
    master = asyncio.create_task(master_answering(broker, ready))
    await ready.wait()
    named = await asyncio.wait_for(ask_name(by_name, "r1", HOST, "transient", 2, 768, 60.0), 30)
    (request,) = await master
    assert named == ("transient-3", OWN, "127.0.0.1")
    assert (request.host, request.node_class, request.slots, request.memory_mb) == (HOST, "transient", 2, 768)
    assert len(request.key) >= 16


def test_sealed_values_open_only_under_their_key_and_label() -> None:
    sealed = seal("k" * 22, "h i n", OWN)
    assert unseal("k" * 22, "h i n", sealed) == OWN
    assert "pw" not in sealed and "transient-3" not in sealed
    for key, label in (("x" * 22, "h i n"), ("k" * 22, "h i other")):
        with pytest.raises(ValueError):
            unseal(key, label, sealed)
