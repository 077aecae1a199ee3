"""The link's outbox: publications pipelined up to a window, requeued in order after a session.

A fake client stands in for aiomqtt: each publish waits until the test
acknowledges or fails it, so the tests control exactly what the broker has
confirmed.
"""

from __future__ import annotations

import asyncio

import aiomqtt
import pytest

from testbed.wire.mqtt import MAX_IN_FLIGHT, Outgoing, _Sender


class FakeClient:
    def __init__(self) -> None:
        self.sent: list[str] = []
        self.acks: dict[str, asyncio.Future[None]] = {}

    async def publish(self, topic: str, payload: bytes, qos: int, retain: bool) -> None:
        assert qos == 1
        self.sent.append(topic)
        self.acks[topic] = asyncio.get_running_loop().create_future()
        await self.acks[topic]

    def acknowledge(self, topic: str) -> None:
        self.acks[topic].set_result(None)


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def outbox_of(count: int) -> asyncio.Queue[Outgoing]:
    outbox: asyncio.Queue[Outgoing] = asyncio.Queue()
    for i in range(count):
        outbox.put_nowait((f"t{i}", b"", False))
    return outbox


def remaining(outbox: asyncio.Queue[Outgoing]) -> list[str]:
    return [outbox.get_nowait()[0] for _ in range(outbox.qsize())]


async def test_up_to_the_window_is_sent_before_any_acknowledgement() -> None:
    client, outbox = FakeClient(), outbox_of(MAX_IN_FLIGHT + 5)
    sender = _Sender(client, outbox)  # type: ignore[arg-type]
    drain = asyncio.create_task(sender.drain())
    await settle()
    assert client.sent == [f"t{i}" for i in range(MAX_IN_FLIGHT)]
    client.acknowledge("t3")
    await settle()
    assert client.sent[-1] == f"t{MAX_IN_FLIGHT}"
    drain.cancel()
    await sender.requeue_unacknowledged()
    unacknowledged = [f"t{i}" for i in range(MAX_IN_FLIGHT + 1) if i != 3]
    assert remaining(outbox) == [
        *unacknowledged,
        *(f"t{i}" for i in range(MAX_IN_FLIGHT + 1, MAX_IN_FLIGHT + 5)),
    ]


async def test_a_failed_publication_fails_the_session_and_nothing_is_lost() -> None:
    client, outbox = FakeClient(), outbox_of(4)
    sender = _Sender(client, outbox)  # type: ignore[arg-type]
    drain = asyncio.create_task(sender.drain())
    await settle()
    client.acknowledge("t0")
    client.acks["t2"].set_exception(aiomqtt.MqttError("timed out"))
    await settle()
    with pytest.raises(aiomqtt.MqttError):
        await sender.failure
    drain.cancel()
    await sender.requeue_unacknowledged()
    assert remaining(outbox) == ["t1", "t2", "t3"]


async def test_join_waits_for_every_acknowledgement_across_a_requeue() -> None:
    client, outbox = FakeClient(), outbox_of(3)
    joined = asyncio.create_task(outbox.join())
    sender = _Sender(client, outbox)  # type: ignore[arg-type]
    drain = asyncio.create_task(sender.drain())
    await settle()
    client.acknowledge("t0")
    await settle()
    drain.cancel()
    await sender.requeue_unacknowledged()
    await settle()
    assert not joined.done()
    second = FakeClient()
    again = _Sender(second, outbox)  # type: ignore[arg-type]
    drain = asyncio.create_task(again.drain())
    await settle()
    assert second.sent == ["t1", "t2"]
    for topic in second.sent:
        second.acknowledge(topic)
    await asyncio.wait_for(joined, 1)
    drain.cancel()
    await again.requeue_unacknowledged()
