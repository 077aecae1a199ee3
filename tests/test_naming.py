"""An agent without a node id asks the master for one over a real broker, and takes only
an answer for its own request that carries the run secret's proof."""

from __future__ import annotations

import asyncio

import aiomqtt

from agents.naming import ask_name
from testbed.wire.capabilities import name_proof
from testbed.wire.mqtt import BrokerAddress
from testbed.wire.protocol import Codec, NameRequest, NodeNamed, Topics

TOPICS = Topics("r1")
HOST = "c0ffee123456"


async def master_answering(broker: BrokerAddress, secret: str, ready: asyncio.Event) -> list[NameRequest]:
    """Answer the first request twice wrongly (another incarnation, a bad proof), then rightly."""
    codec = Codec()
    async with aiomqtt.Client(broker.host, broker.port, identifier="r1-master") as client:
        await client.subscribe(TOPICS.state("+"), qos=1)
        ready.set()
        async for message in client.messages:
            request = codec.decode(bytes(message.payload or b""))
            assert isinstance(request, NameRequest)
            answers = [
                NodeNamed(host=HOST, incarnation="other", node_id="transient-9", proof="x"),
                NodeNamed(host=HOST, incarnation=request.incarnation, node_id="reserved-5", proof="forged"),
                NodeNamed(
                    host=HOST,
                    incarnation=request.incarnation,
                    node_id="transient-3",
                    proof=name_proof(secret, HOST, request.incarnation, "transient-3"),
                ),
            ]
            for answer in answers:
                await client.publish(TOPICS.command(HOST), codec.encode(answer), qos=1)
            return [request]
    raise AssertionError("the broker closed the connection")


async def test_the_agent_takes_only_its_proven_name(mosquitto: str) -> None:
    broker = BrokerAddress.parse(mosquitto, {})
    ready = asyncio.Event()
    master = asyncio.create_task(master_answering(broker, "s3cret", ready))
    await ready.wait()
    name = await asyncio.wait_for(ask_name(broker, "r1", HOST, "transient", "s3cret", 2, 768, 60.0), 30)
    (request,) = await master
    assert name == "transient-3"
    assert (request.host, request.node_class, request.slots, request.memory_mb) == (HOST, "transient", 2, 768)
