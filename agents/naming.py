"""An agent started without a node id (compose, Swarm) asks the master for one.

The master names it as it names the nodes it launches (``reserved-N``, ``transient-N``)
and keeps its hostname (a container's short id) as the node's ``container``. Until
then the agent is only its hostname and holds only the login it was started with (the
run's enrolment login on compose and Swarm): it asks on ``enrol/<host>/ask``, with a
random key of its own, and listens on ``enrol/<host>/named``, again every
``ASK_INTERVAL_S`` since the master may start later (compose starts the master last).
The answer carries that node's broker login and node key sealed under the key, and a
proof made with it (``testbed.wire.capabilities``). Only then does the agent start, under its
name and with its own credentials.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import os
import secrets
import time

import aiomqtt

from testbed.wire.capabilities import name_proof, unseal
from testbed.wire.mqtt import BrokerAddress
from testbed.wire.protocol import Codec, NameRequest, NodeClass, NodeNamed, Topics

log = logging.getLogger("agent")
ASK_INTERVAL_S = 0.5
"""How often an unnamed agent repeats its request (a retransmission, not a poll of state)."""
BROKER_WAIT_S = 120.0
"""How long an agent waits for the broker to accept it (a stack's broker may start later)."""


async def ask_name(
    broker: BrokerAddress, run_id: str, host: str, node_class: NodeClass, slots: int, memory_mb: int
) -> tuple[str, dict[str, str]]:
    """The node id the master gives this agent and what it seals for it (the node's broker
    login and node key). An answer without the proof made with this request's key is ignored."""
    topics, codec = Topics(run_id), Codec()
    request = NameRequest(
        host=host,
        node_class=node_class,
        incarnation=os.urandom(6).hex(),
        slots=slots,
        memory_mb=memory_mb,
        key=secrets.token_urlsafe(16),
    )
    deadline = time.monotonic() + BROKER_WAIT_S
    while True:
        try:
            return await _ask_once(broker, topics, codec, request)
        except aiomqtt.MqttError as exc:  # a Swarm stack's services start in any order
            if time.monotonic() >= deadline:
                raise ConnectionError(f"no broker at {broker.url} within {BROKER_WAIT_S:g}s: {exc}") from None
            log.info("the broker at %s is not there yet (%s); retrying", broker.url, exc)
            await asyncio.sleep(ASK_INTERVAL_S)


async def _ask_once(
    broker: BrokerAddress, topics: Topics, codec: Codec, request: NameRequest
) -> tuple[str, dict[str, str]]:
    async with aiomqtt.Client(
        broker.host,
        broker.port,
        identifier=f"{topics.root}-{request.host}-{request.incarnation}".replace("/", "-"),
        username=broker.username,
        password=broker.password,
    ) as client:
        await client.subscribe(topics.name_answers(request.host), qos=1)
        asking = asyncio.create_task(_ask(client, topics.name_requests(request.host), codec.encode(request)))
        try:
            async for message in client.messages:
                named = codec.decode(bytes(message.payload or b""))
                if isinstance(named, NodeNamed) and (own := _answer(named, request)) is not None:
                    log.info("named %s by the master (container %s)", named.node_id, request.host)
                    return named.node_id, own
        finally:
            asking.cancel()
    raise aiomqtt.MqttError("the broker closed the connection")


async def _ask(client: aiomqtt.Client, topic: str, payload: bytes) -> None:
    while True:
        await client.publish(topic, payload, qos=1)
        await asyncio.sleep(ASK_INTERVAL_S)


def _answer(named: NodeNamed, request: NameRequest) -> dict[str, str] | None:
    """What the answer seals for this agent; None if it does not answer this request."""
    if (named.host, named.incarnation) != (request.host, request.incarnation):
        return None
    proof = name_proof(request.key, named.host, named.incarnation, named.node_id, named.sealed)
    if not hmac.compare_digest(named.proof.encode(), proof.encode()):
        log.warning("ignored a name for %s without the proof of its request's key", named.host)
        return None
    try:
        return unseal(request.key, f"{named.host} {named.incarnation} {named.node_id}", named.sealed)
    except ValueError:
        log.warning("ignored a name for %s whose credentials do not unseal", named.host)
        return None
