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
import socket
import time

import aiomqtt

from testbed.wire.capabilities import name_proof, unseal
from testbed.wire.mqtt import BrokerAddress, BrokerUnreachable, backoff_delays
from testbed.wire.protocol import Codec, NameRequest, NodeClass, NodeNamed, Topics
from testbed.wire.routes import resolve

log = logging.getLogger("agent")
ASK_INTERVAL_S = 0.5
"""How often an unnamed agent repeats its request (a retransmission, not a poll of state)."""


async def ask_name(
    broker: BrokerAddress,
    run_id: str,
    host: str,
    node_class: NodeClass,
    slots: int,
    memory_mb: int,
    broker_wait_s: float,
) -> tuple[str, dict[str, str], str]:
    """The node id the master gives this agent, what it seals for it (the node's broker
    login and node key) and the broker's address it was named over (its name looked up once
    per connection, off the event loop: the agent advertises its route to that address and
    needs no second lookup). An answer without the proof made with this request's key is ignored.
    A broker out of reach is tried again, with backoff, until it has been so for
    ``broker_wait_s`` (``BrokerUnreachable``); while it is there, the agent waits for a master."""
    topics, codec = Topics(run_id), Codec()
    request = NameRequest(
        host=host,
        node_class=node_class,
        incarnation=os.urandom(6).hex(),
        slots=slots,
        memory_mb=memory_mb,
        key=secrets.token_urlsafe(16),
    )
    asking = _Asking(broker, topics, codec, request)
    delays = backoff_delays(ASK_INTERVAL_S)
    warned = False  # of this outage (the rest of its tries are logged at INFO)
    while True:
        try:
            return await asking.once()
        except aiomqtt.MqttError as exc:  # a Swarm stack's services start in any order
            waited = time.monotonic() - asking.reachable_t
            if waited >= broker_wait_s:
                raise BrokerUnreachable(
                    f"no broker at {broker.url} for {waited:.0f}s, still unnamed ({exc})"
                ) from None
            if asking.connected:  # it had been there: a new outage, from the shortest pause
                delays, warned = backoff_delays(ASK_INTERVAL_S), False
            level = logging.INFO if warned else logging.WARNING
            log.log(level, "the broker at %s is out of reach (%s); retrying", broker.url, exc)
            warned = True
            await asyncio.sleep(next(delays))


class _Asking:
    """One agent's requests for its name, a connection at a time."""

    def __init__(self, broker: BrokerAddress, topics: Topics, codec: Codec, request: NameRequest) -> None:
        self.broker, self.topics, self.codec, self.request = broker, topics, codec, request
        self.reachable_t = time.monotonic()
        """The start, then the end of the last connection the broker accepted."""
        self.connected = False
        """Whether the last try's connection was accepted."""

    async def once(self) -> tuple[str, dict[str, str], str]:
        """The name, what it seals and the broker's address, over one connection; MqttError
        when the broker's name does not resolve, or the connection fails or ends."""
        self.connected = False
        request = self.request
        try:
            address = await resolve(self.broker.host, self.broker.port)
        except socket.gaierror as exc:  # a Swarm service's name resolves once its task is scheduled
            raise aiomqtt.MqttError(f"{self.broker.host!r} does not resolve: {exc}") from None
        async with aiomqtt.Client(
            address,
            self.broker.port,
            identifier=f"{self.topics.root}-{request.host}-{request.incarnation}".replace("/", "-"),
            username=self.broker.username,
            password=self.broker.password,
        ) as client:
            self.connected = True
            try:
                await client.subscribe(self.topics.name_answers(request.host), qos=1)
                answer = asyncio.create_task(self._answer(client))
                asking = asyncio.create_task(
                    _ask(client, self.topics.name_requests(request.host), self.codec.encode(request))
                )
                try:  # a request that fails (a publication timed out) ends this connection too
                    done, _ = await asyncio.wait([answer, asking], return_when=asyncio.FIRST_COMPLETED)
                finally:
                    answer.cancel()
                    asking.cancel()
                    await asyncio.gather(answer, asking, return_exceptions=True)
                return (*done.pop().result(), address)
            finally:
                self.reachable_t = time.monotonic()

    async def _answer(self, client: aiomqtt.Client) -> tuple[str, dict[str, str]]:
        async for message in client.messages:
            named = self.codec.decode(bytes(message.payload or b""))
            if isinstance(named, NodeNamed) and (own := _answer(named, self.request)) is not None:
                log.info("named %s by the master (container %s)", named.node_id, self.request.host)
                return named.node_id, own
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
