"""The MQTT link's loop error filter: aiomqtt's closed-socket race is quiet, other errors are not."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import uvloop

from testbed.wire.mqtt import ignore_writers_of_closed_sockets


async def run_callbacks(loop: asyncio.AbstractEventLoop, *callbacks: tuple) -> None:
    """Schedule the callbacks the way aiomqtt does, and wait until the loop has run them."""
    for callback, *args in callbacks:
        loop.call_soon_threadsafe(callback, *args)
    done = loop.create_future()
    loop.call_soon(done.set_result, None)
    await done


async def write_watch_on_a_closed_socket() -> None:
    loop = asyncio.get_running_loop()
    ignore_writers_of_closed_sockets(loop)
    sock = socket.socket()
    fd = sock.fileno()
    sock.close()  # the broker dropped the connection before the loop got to the call
    await run_callbacks(loop, (loop.add_writer, fd, lambda: None))


@pytest.mark.parametrize("run", [asyncio.run, uvloop.run], ids=["asyncio", "uvloop"])
def test_a_write_watch_on_a_closed_socket_is_logged_at_debug_only(
    caplog: pytest.LogCaptureFixture, run: Callable[[Coroutine[Any, Any, None]], None]
) -> None:
    with caplog.at_level(logging.DEBUG):
        run(write_watch_on_a_closed_socket())
    assert [r.levelno for r in caplog.records if "closed MQTT socket" in r.getMessage()] == [logging.DEBUG]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_other_loop_errors_still_reach_the_previous_handler() -> None:
    loop = asyncio.get_running_loop()
    seen: list[BaseException] = []
    loop.set_exception_handler(lambda _loop, context: seen.append(context["exception"]))
    ignore_writers_of_closed_sockets(loop)
    ignore_writers_of_closed_sockets(loop)  # idempotent: wraps the previous handler once

    def broken() -> None:
        raise ValueError("a real bug")

    await run_callbacks(loop, (broken,))
    assert [type(e) for e in seen] == [ValueError]
