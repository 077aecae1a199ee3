"""MQTT clients of the tests' brokers: logged in as a run's master or agent, and what a
subscriber received (tests/reliability/test_broker_security.py, test_enrolment.py)."""

from __future__ import annotations

import asyncio

import aiomqtt

from testbed.wire.broker import Credentials, ManagedBroker


def client(broker: ManagedBroker, creds: Credentials | None) -> aiomqtt.Client:
    return aiomqtt.Client(
        broker.host,
        broker.port,
        username=creds.username if creds else None,
        password=creds.password if creds else None,
        timeout=5,
    )


async def received(subscriber: aiomqtt.Client, until: bytes) -> list[bytes]:
    """Payloads delivered to ``subscriber`` up to and including ``until``."""
    payloads = []
    async with asyncio.timeout(10):
        async for message in subscriber.messages:
            payloads.append(bytes(message.payload))
            if payloads[-1] == until:
                return payloads
    return payloads
