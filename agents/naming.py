"""An agent started without a node id (compose, Swarm) asks the master for one.

The master names it as it names the nodes it launches (``reserved-N``, ``transient-N``)
and keeps its hostname (a container's short id) as the node's ``container``. Until
then the agent is only its hostname: it asks on ``node/<host>/state`` and listens on
``node/<host>/cmd``, again every ``ASK_INTERVAL_S`` since the master may start later
(compose starts the master last). Only then does the agent start, under its name.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time

import aiomqtt

from testbed.wire.capabilities import name_proof
from testbed.wire.mqtt import BrokerAddress
from testbed.wire.protocol import Codec, NameRequest, NodeClass, NodeNamed, Topics

log = logging.getLogger("agent")
ASK_INTERVAL_S = 0.5
"""How often an unnamed agent repeats its request (a retransmission, not a poll of state)."""
BROKER_WAIT_S = 120.0
"""How long an agent waits for the broker to accept it (a stack's broker may start later)."""


async def ask_name(
    broker: BrokerAddress,
    run_id: str,
    host: str,
    node_class: NodeClass,
    run_secret: str,
    slots: int,
    memory_mb: int,
) -> str:
    """The node id the master gives this agent. An answer without the proof that only the
    run secret makes is ignored (``run_secret`` "": the broker's access rules are the guard)."""
    topics, codec = Topics(run_id), Codec()
    request = NameRequest(
        host=host, node_class=node_class, incarnation=os.urandom(6).hex(), slots=slots, memory_mb=memory_mb
    )
    deadline = time.monotonic() + BROKER_WAIT_S
    while True:
        try:
            return await _ask_once(broker, topics, codec, request, run_secret)
        except aiomqtt.MqttError as exc:  # a Swarm stack's services start in any order
            if time.monotonic() >= deadline:
                raise ConnectionError(f"no broker at {broker.url} within {BROKER_WAIT_S:g}s: {exc}") from None
            log.info("the broker at %s is not there yet (%s); retrying", broker.url, exc)
            await asyncio.sleep(ASK_INTERVAL_S)


async def _ask_once(
    broker: BrokerAddress, topics: Topics, codec: Codec, request: NameRequest, run_secret: str
) -> str:
    async with aiomqtt.Client(
        broker.host,
        broker.port,
        identifier=f"{topics.root}-{request.host}-{request.incarnation}".replace("/", "-"),
        username=broker.username,
        password=broker.password,
    ) as client:
        await client.subscribe(topics.command(request.host), qos=1)
        asking = asyncio.create_task(_ask(client, topics.state(request.host), codec.encode(request)))
        try:
            async for message in client.messages:
                named = codec.decode(bytes(message.payload or b""))
                if isinstance(named, NodeNamed) and _answers(named, request, run_secret):
                    log.info("named %s by the master (container %s)", named.node_id, request.host)
                    return named.node_id
        finally:
            asking.cancel()
    raise aiomqtt.MqttError("the broker closed the connection")


async def _ask(client: aiomqtt.Client, topic: str, payload: bytes) -> None:
    while True:
        await client.publish(topic, payload, qos=1)
        await asyncio.sleep(ASK_INTERVAL_S)


def _answers(named: NodeNamed, request: NameRequest, run_secret: str) -> bool:
    if (named.host, named.incarnation) != (request.host, request.incarnation):
        return False
    if run_secret and named.proof != name_proof(run_secret, named.host, named.incarnation, named.node_id):
        log.warning("ignored a name for %s without the run secret's proof", named.host)
        return False
    return True
