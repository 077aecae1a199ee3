"""A reconnecting MQTT link shared by the master and the agents.

aiomqtt gives one connection; this keeps one alive: it reconnects with jittered
exponential backoff, re-runs ``on_connect`` (subscriptions, retained state)
after every reconnect, and keeps QoS 1 publications in an outbox until the
broker has acknowledged them. Up to ``MAX_IN_FLIGHT`` publications await their
acknowledgement at once (in order on the wire), so a busy actor is not limited
to one broker round trip per message.

Each connection is a numbered *session* (``MqttLink.session``, 1, 2, ...). The
Last Will may depend on it (``will`` can be a function of the session number),
so a peer can tell the Will of a connection that has since been replaced from
the Will of the current one (see docs/reliability.md).

What the outbox cannot cover: a message the broker acknowledged but had not
yet delivered when it died is gone. The master re-sends what it has not heard
back about after every reconnect, and every handler is idempotent.
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import logging
import os
import random
import socket
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field

import aiomqtt

from testbed.wire.protocol import MAX_BACKOFF_S

log = logging.getLogger(__name__)

Handler = Callable[[str, bytes], Awaitable[None] | None]
WillFactory = Callable[[int], aiomqtt.Will | None]
MAX_IN_FLIGHT = 64
"""QoS 1 publications sent but not yet acknowledged, per link."""
Outgoing = tuple[str, bytes, bool]


class BrokerUnreachable(ConnectionError):
    """The broker stayed out of reach longer than the caller was willing to wait."""


def backoff_delays(first: float) -> Iterator[float]:
    """Pauses between connection attempts: jittered, doubling from ``first`` up to ``MAX_BACKOFF_S``."""
    delay = first
    while True:
        yield delay * (0.5 + random.random())
        delay = min(delay * 2, MAX_BACKOFF_S)


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    host: str
    port: int
    username: str | None = None
    password: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, url: str, secrets: Mapping[str, str] | None = None) -> BrokerAddress:
        """``mqtt://[user:pass@]host[:port]``; credentials default to the TESTBED_MQTT_* values
        of ``secrets`` (default: the environment)."""
        parts = urllib.parse.urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = 0
        if parts.scheme != "mqtt" or not parts.hostname or port == 0:
            raise ValueError(f"expected mqtt://HOST:PORT with a port from 1 to 65535, found {url!r}")
        found = os.environ if secrets is None else secrets
        return cls(
            parts.hostname,
            port or 1883,
            parts.username or found.get("TESTBED_MQTT_USERNAME"),
            parts.password or found.get("TESTBED_MQTT_PASSWORD"),
        )

    @property
    def url(self) -> str:
        return f"mqtt://{self.host}:{self.port}"

    def check_reachable(self, wait_s: float = 5.0) -> None:
        """Return once a TCP connection to the broker opens; ``ConnectionError`` after ``wait_s``."""
        deadline = time.monotonic() + wait_s
        while True:
            try:
                with socket.create_connection((self.host, self.port), timeout=max(0.1, wait_s / 5)):
                    return
            except OSError as exc:
                if time.monotonic() >= deadline:
                    reason = exc.strerror or exc.__class__.__name__
                    raise ConnectionError(
                        f"cannot reach the broker at {self.url} within {wait_s:g}s ({reason}); "
                        "start it, or check the broker setting (or TESTBED_BROKER)"
                    ) from None
                time.sleep(0.2)


class MqttLink:
    def __init__(
        self,
        broker: BrokerAddress,
        client_id: str,
        handler: Handler,
        on_connect: Callable[[MqttLink], Awaitable[None]],
        will: aiomqtt.Will | WillFactory | None = None,
        keepalive: int = 5,
        give_up_after: float | None = None,
    ) -> None:
        """``give_up_after``: ``run`` raises ``BrokerUnreachable`` once the broker has been out of
        reach (no connection accepted) for that many seconds; None: it retries for ever."""
        self.broker = broker
        self.client_id = client_id
        self.handler = handler
        self.on_connect = on_connect
        self.will = will
        self.keepalive = keepalive
        self.give_up_after = give_up_after
        self.connected = asyncio.Event()
        self.reconnects = 0
        self.session = 0
        self.handler_errors = 0
        """The number of the current (or last) connection: 1 for the first."""
        self._client: aiomqtt.Client | None = None
        self._outbox: asyncio.Queue[Outgoing] = asyncio.Queue()
        self._stopping = False
        self._task: asyncio.Task[None] | None = None

    def publish(self, topic: str, payload: bytes, retain: bool = False) -> None:
        """Queue a QoS 1 publication; it is sent (again after a reconnect) until acknowledged."""
        self._outbox.put_nowait((topic, payload, retain))

    async def publish_now(self, topic: str, payload: bytes, timeout: float = 1.0) -> bool:
        """Best-effort QoS 0 publication for data that is stale once missed (heartbeats).

        Gives up after ``timeout``: on a connection that just died, the client
        would otherwise wait for its default 10 s, and the caller with it.
        """
        client = self._client
        if client is None or not self.connected.is_set():
            return False
        try:
            await client.publish(topic, payload, qos=0, timeout=timeout)
        except aiomqtt.MqttError:
            return False
        return True

    @property
    def backlog(self) -> int:
        """Messages received from the broker but not yet given to the handler."""
        client = self._client
        return len(client.messages) if client is not None else 0

    async def subscribe(self, topic: str) -> None:
        assert self._client is not None
        await self._client.subscribe(topic, qos=1)

    async def run(self) -> None:
        delays = backoff_delays(0.05)
        reachable_t = time.monotonic()  # the start, then the end of each accepted connection
        while not self._stopping:
            error: aiomqtt.MqttError | None = None
            try:
                await self._session()
            except aiomqtt.MqttError as exc:
                if self._stopping:
                    return
                log.info("%s: broker connection lost (%s); retrying", self.client_id, exc)
                error = exc
            if self.connected.is_set():  # the broker had accepted this connection
                delays = backoff_delays(0.05)
                reachable_t = time.monotonic()
            else:
                self._check_patience(reachable_t, error)
            self.connected.clear()
            self._client = None
            if self._stopping:
                return
            await asyncio.sleep(next(delays))
            self.reconnects += 1

    def _check_patience(self, reachable_t: float, error: Exception | None) -> None:
        waited = time.monotonic() - reachable_t
        if self.give_up_after is not None and waited >= self.give_up_after:
            raise BrokerUnreachable(
                f"the broker at {self.broker.url} has been out of reach for {waited:.0f}s ({error})"
            )

    async def _session(self) -> None:
        self.session += 1
        will = self.will(self.session) if callable(self.will) else self.will
        async with aiomqtt.Client(
            self.broker.host,
            self.broker.port,
            identifier=self.client_id,
            username=self.broker.username,
            password=self.broker.password,
            will=will,
            keepalive=self.keepalive,
            clean_session=True,
            max_queued_incoming_messages=0,
            max_inflight_messages=MAX_IN_FLIGHT,
        ) as client:
            client.pending_calls_threshold = 2 * MAX_IN_FLIGHT  # it warns above this, by default 10
            self._client = client
            await self.on_connect(self)
            self.connected.set()
            sender = _Sender(client, self._outbox)
            workers = [
                asyncio.create_task(self._receive(client)),
                asyncio.create_task(sender.drain()),
            ]
            try:  # whichever ends first (a lost connection, a publish timeout) ends the session
                done, _ = await asyncio.wait([*workers, sender.failure], return_when=asyncio.FIRST_COMPLETED)
            finally:
                for worker in workers:
                    worker.cancel()
                await asyncio.gather(*workers, return_exceptions=True)
                await sender.requeue_unacknowledged()
            for worker in done:
                worker.result()

    async def _receive(self, client: aiomqtt.Client) -> None:
        async for message in client.messages:
            topic = str(message.topic)
            try:
                result = self.handler(topic, bytes(message.payload or b""))
                if asyncio.iscoroutine(result):
                    await result
            except Exception:  # one bad message must not end the actor's connection
                self.handler_errors += 1
                log.exception("%s: the handler failed on a message on %s", self.client_id, topic)
        raise aiomqtt.MqttError("the message stream ended")

    def start(self) -> asyncio.Task[None]:
        ignore_writers_of_closed_sockets(asyncio.get_running_loop())
        self._task = asyncio.create_task(self.run(), name=f"mqtt-{self.client_id}")
        return self._task

    async def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every queued publication has been acknowledged; False on timeout."""
        try:
            await asyncio.wait_for(self._outbox.join(), timeout)
        except TimeoutError:
            return False
        return True

    async def close(self) -> None:
        """Disconnect cleanly (no Last Will) and stop reconnecting."""
        self._stopping = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


class _Sender:
    """One session's publisher: sends from the outbox in order, up to ``MAX_IN_FLIGHT``
    awaiting their acknowledgement. A publication leaves the outbox (``task_done``)
    only when acknowledged; at the end of the session the unacknowledged ones go
    back to the front of the outbox, in their order, for the next session."""

    def __init__(self, client: aiomqtt.Client, outbox: asyncio.Queue[Outgoing]) -> None:
        self._client = client
        self._outbox = outbox
        self._window = asyncio.Semaphore(MAX_IN_FLIGHT)
        self._unacknowledged: dict[int, Outgoing] = {}
        self._confirming: set[asyncio.Task[None]] = set()
        self._numbers = itertools.count()
        self.failure: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        """Fails with the first publication that fails (ends the session)."""

    async def drain(self) -> None:
        while True:
            await self._window.acquire()
            item = await self._outbox.get()
            number = next(self._numbers)
            self._unacknowledged[number] = item
            task = asyncio.create_task(self._confirm(number, item))  # sends in creation order
            self._confirming.add(task)
            task.add_done_callback(self._confirming.discard)

    async def _confirm(self, number: int, item: Outgoing) -> None:
        topic, payload, retain = item
        try:
            await self._client.publish(topic, payload, qos=1, retain=retain)
        except Exception as exc:  # as when publications were awaited one by one: the session ends
            if not self.failure.done():
                self.failure.set_exception(exc)
            return
        del self._unacknowledged[number]
        self._outbox.task_done()
        self._window.release()

    async def requeue_unacknowledged(self) -> None:
        for task in self._confirming:
            task.cancel()
        await asyncio.gather(*self._confirming, return_exceptions=True)
        if not self.failure.done():
            self.failure.cancel()
        elif not self.failure.cancelled():
            self.failure.exception()  # retrieved: the session reports it
        unacknowledged = [self._unacknowledged[n] for n in sorted(self._unacknowledged)]
        rest = []
        while not self._outbox.empty():
            rest.append(self._outbox.get_nowait())
        for item in (*unacknowledged, *rest):  # put back before task_done: join() never sees zero
            self._outbox.put_nowait(item)
        for _ in range(len(unacknowledged) + len(rest)):
            self._outbox.task_done()


def ignore_writers_of_closed_sockets(loop: asyncio.AbstractEventLoop) -> None:
    """Silence aiomqtt's harmless race on a dropped connection, keep every other loop error.

    aiomqtt asks the loop to watch its socket for writing through
    ``call_soon_threadsafe(loop.add_writer, fd, ...)``; when the broker drops the
    connection in between, the socket is closed by the time the loop runs that call,
    and asyncio prints the ``EBADF`` with a traceback. The connection's loss is
    already handled (the link reconnects), so that one error is logged at debug level.
    """
    previous = loop.get_exception_handler()
    if getattr(previous, "ignores_closed_socket_writers", False):
        return

    def handler(loop: asyncio.AbstractEventLoop, context: dict) -> None:
        handle = context.get("handle")
        exception = context.get("exception")
        if (
            isinstance(exception, OSError)
            and exception.errno == errno.EBADF
            and "add_writer" in repr(handle)  # asyncio's and uvloop's handles alike
        ):
            log.debug("ignored a write watch on a closed MQTT socket: %s", exception)
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    handler.ignores_closed_socket_writers = True  # type: ignore[attr-defined]
    loop.set_exception_handler(handler)
