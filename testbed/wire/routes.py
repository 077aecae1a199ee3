"""The address a containerised agent or master advertises: the source address of its route to
a peer (its hostname may not resolve for others, its address does), found without blocking the
event loop. A name is looked up in the loop's resolver thread; an address needs no lookup."""

from __future__ import annotations

import asyncio
import logging
import socket
import time

log = logging.getLogger("agent")
RETRY_S = 0.5
"""How long to wait before looking a name up again that did not resolve."""


async def resolve(host: str, port: int = 0) -> str:
    """The first address ``host`` resolves to (itself when it is one); ``socket.gaierror``
    when it does not resolve."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return str(infos[0][4][0])


def source_address(peer: str) -> str:
    """This host's address on the route to the address ``peer`` (no lookup: an address only)."""
    with socket.socket(socket.AF_INET6 if ":" in peer else socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect((peer, 9))  # UDP: picks the route and the source address, sends nothing
        return str(probe.getsockname()[0])


async def route_address(peer_host: str, wait_s: float = 60.0) -> str:
    """This host's address on the route to ``peer_host``. Services of a Swarm stack start in
    any order, and a peer's name resolves only once its task is scheduled: a name that does not
    resolve is looked up again for up to ``wait_s`` seconds, then ``ValueError``."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return source_address(await resolve(peer_host))
        except socket.gaierror as exc:
            if time.monotonic() >= deadline:
                raise ValueError(f"{peer_host!r} did not resolve within {wait_s:g}s: {exc}") from exc
            log.info("%s does not resolve yet; retrying", peer_host)
            await asyncio.sleep(RETRY_S)
