"""The address a containerised agent or master advertises: the source address of its route to a
peer, looked up without blocking the event loop."""

from __future__ import annotations

import asyncio
import re

import pytest

from testbed.wire.routes import resolve, route_address, source_address


async def test_the_route_to_loopback_starts_at_loopback() -> None:
    assert await route_address("127.0.0.1") == "127.0.0.1"
    assert await route_address("localhost") == "127.0.0.1"


async def test_an_address_is_its_own_resolution_and_routes_with_no_lookup() -> None:
    assert await resolve("127.0.0.1", 1883) == "127.0.0.1"
    assert source_address("127.0.0.1") == "127.0.0.1"


async def test_a_name_that_never_resolves_is_a_clear_error_after_the_wait() -> None:
    with pytest.raises(ValueError, match=re.escape("'no-such-peer.invalid' did not resolve within 0s")):
        await route_address("no-such-peer.invalid", wait_s=0)


async def test_waiting_for_a_name_leaves_the_event_loop_running() -> None:
    """An agent waiting for its broker's name still serves, heartbeats and stops on a signal: the
    wait (up to --broker-wait, 300 s) never holds the loop (it once did, with time.sleep)."""
    waiting = asyncio.create_task(route_address("no-such-peer.invalid", wait_s=60.0))
    for _ in range(3):  # three turns of the loop while the name does not resolve
        await asyncio.sleep(0.01)
    assert not waiting.done()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
