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
from testbed.wire.mqtt import BrokerAddress, BrokerUnreachable, backoff_delays
from testbed.wire.protocol import Codec, NameRequest, NodeClass, NodeNamed, Topics

log = logging.getLogger("agent")
ASK_INTERVAL_S = 0.5
"""How often an unnamed agent repeats its request (a retransmission, not a poll of state)."""


async def ask_name(
    broker: BrokerAddress,
    run_id: str,
    host: str,
    node_class: NodeClass,
    run_secret: str,
    slots: int,
    memory_mb: int,
    broker_wait_s: float,
) -> str:
    """The node id the master gives this agent. An answer without the proof that only the
    run secret makes is ignored (``run_secret`` "": the broker's access rules are the guard).
    A broker out of reach is tried again, with backoff, until it has been so for
    ``broker_wait_s`` (``BrokerUnreachable``); while it is there, the agent waits for a master."""
    topics, codec = Topics(run_id), Codec()
    request = NameRequest(
        host=host, node_class=node_class, incarnation=os.urandom(6).hex(), slots=slots, memory_mb=memory_mb
    )
    asking = _Asking(broker, topics, codec, request, run_secret)
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

    def __init__(
        self, broker: BrokerAddress, topics: Topics, codec: Codec, request: NameRequest, run_secret: str
    ) -> None:
        self.broker, self.topics, self.codec = broker, topics, codec
        self.request, self.run_secret = request, run_secret
        self.reachable_t = time.monotonic()
        """The start, then the end of the last connection the broker accepted."""
        self.connected = False
        """Whether the last try's connection was accepted."""

    async def once(self) -> str:
        """The name, over one connection; MqttError when the connection fails or ends."""
        self.connected = False
        request = self.request
        async with aiomqtt.Client(
            self.broker.host,
            self.broker.port,
            identifier=f"{self.topics.root}-{request.host}-{request.incarnation}".replace("/", "-"),
            username=self.broker.username,
            password=self.broker.password,
        ) as client:
            self.connected = True
            try:
                await client.subscribe(self.topics.command(request.host), qos=1)
                answer = asyncio.create_task(self._answer(client))
                asking = asyncio.create_task(
                    _ask(client, self.topics.state(request.host), self.codec.encode(request))
                )
                try:  # a request that fails (a publication timed out) ends this connection too
                    done, _ = await asyncio.wait([answer, asking], return_when=asyncio.FIRST_COMPLETED)
                finally:
                    answer.cancel()
                    asking.cancel()
                    await asyncio.gather(answer, asking, return_exceptions=True)
                return done.pop().result()
            finally:
                self.reachable_t = time.monotonic()

    async def _answer(self, client: aiomqtt.Client) -> str:
        async for message in client.messages:
            named = self.codec.decode(bytes(message.payload or b""))
            if isinstance(named, NodeNamed) and _answers(named, self.request, self.run_secret):
                log.info("named %s by the master (container %s)", named.node_id, self.request.host)
                return named.node_id
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
