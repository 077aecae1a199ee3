"""The agent's data plane: an aiohttp server for its node-local shuffle blocks.

``GET /blocks/<block>/<partition>`` serves a stored partition; ``PUT
/blocks/<block>`` receives a pushed or checkpointed block (``agents.push``),
staged and CRC-checked before it is committed. Each request presents the
capability for that verb and that block, which only the master mints (from this
node's key, ``testbed.wire.capabilities``); a committed block is never replaced.
Block ids are validated against a strict pattern, so a request can never leave
the blocks directory. ``GET /health`` is open: it answers only that this agent
process lives (its node id and random incarnation, no data, no secret).
"""

from __future__ import annotations

import asyncio
import os
import re
import zlib
from collections.abc import Callable
from pathlib import Path

import msgpack
from aiohttp import web

from agents.push import INDEX_HEADER, decode_index
from testbed.node.bandwidth import UNLIMITED, NodeLimits
from testbed.wire.blocks import CRC_HEADER, TOKEN_HEADER, segment
from testbed.wire.capabilities import block_cap
from testbed.wire.protocol import PushedPart
from testbed.wire.replica_blocks import wait_stored
from testbed.wire.tokens import token_matches

OnReceived = Callable[[str, tuple[PushedPart, ...]], None]

BLOCK_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")
PARTITION = re.compile(r"[0-9]{1,9}")
CHUNK = 1 << 20
BLOCKS_DIR = web.AppKey("blocks_dir", Path)
NODE_KEY = web.AppKey("node_key", str)
COMMITTING = web.AppKey("committing", asyncio.Lock)
ON_RECEIVED: web.AppKey[OnReceived | None] = web.AppKey("on_received")
LIMITS = web.AppKey("limits", NodeLimits)


def make_app(
    blocks_dir: Path,
    node_key: str,
    on_received: OnReceived | None = None,
    identity: dict[str, str] | None = None,
    limits: NodeLimits = UNLIMITED,
) -> web.Application:
    """``node_key`` checks the capabilities callers present; ``on_received(block, parts)``
    is told of every block received whole; ``identity`` (node id, incarnation) is what
    ``/health`` answers, so a caller knows who answered; blocks served and received pace
    on the node's ``limits``."""
    app = web.Application(client_max_size=0)
    app[LIMITS] = limits
    app[BLOCKS_DIR] = blocks_dir
    app[NODE_KEY] = node_key
    app[COMMITTING] = asyncio.Lock()
    app[ON_RECEIVED] = on_received
    app.router.add_get("/blocks/{block}/{partition}", serve_block)
    app.router.add_put("/blocks/{block}", receive_block)
    health = {"ok": True, **(identity or {})}

    async def answer_health(_: web.Request) -> web.Response:
        return web.json_response(health)

    app.router.add_get("/health", answer_health)
    return app


def checked_block_id(request: web.Request, verb: str) -> str:
    """The request's block id, if the caller holds the capability to ``verb`` it here."""
    block = request.match_info["block"]
    if not BLOCK_ID.fullmatch(block) or ".." in block:
        raise web.HTTPBadRequest(text="bad block id")
    expected = block_cap(request.app[NODE_KEY], verb, block)
    if not request.app[NODE_KEY] or not token_matches(request.headers.get(TOKEN_HEADER), expected):
        raise web.HTTPForbidden(text=f"missing or wrong capability to {verb} this block")
    return block


async def serve_block(request: web.Request) -> web.StreamResponse:
    block = checked_block_id(request, "GET")
    partition = request.match_info["partition"]
    if not PARTITION.fullmatch(partition):
        raise web.HTTPBadRequest(text="bad partition")
    await asyncio.to_thread(wait_stored, request.app[BLOCKS_DIR], block)  # an input replica being copied
    seg = await asyncio.to_thread(segment, request.app[BLOCKS_DIR], block, int(partition))
    if seg is None:
        raise web.HTTPNotFound(text=f"block {block} partition {partition} is not here")
    response = web.StreamResponse(headers={CRC_HEADER: str(seg.crc32)})
    response.content_length = seg.length
    await response.prepare(request)
    with open(seg.path, "rb") as handle:
        await asyncio.to_thread(handle.seek, seg.offset)
        left = seg.length
        while left > 0:
            chunk = await asyncio.to_thread(handle.read, min(CHUNK, left))
            if not chunk:
                break
            left -= len(chunk)
            await request.app[LIMITS].pace_async("net-out", len(chunk))
            await response.write(chunk)
    await response.write_eof()
    return response


async def receive_block(request: web.Request) -> web.Response:
    """Stage a pushed block, verify every partition's length and CRC, then commit it.

    A committed block is immutable: the same block again is acknowledged (a repeated
    push), a different one is refused with 409."""
    block = checked_block_id(request, "PUT")
    try:
        index = decode_index(request.headers.get(INDEX_HEADER, ""))
    except ValueError as exc:
        raise web.HTTPBadRequest(text=f"bad block index: {exc}") from None
    blocks_dir: Path = request.app[BLOCKS_DIR]
    if await asyncio.to_thread(_committed_index, blocks_dir, block) not in (None, index):
        raise web.HTTPConflict(text=f"block {block} is committed here already")
    staged = blocks_dir / f".{block}.data.{os.urandom(4).hex()}.recv"
    try:
        with open(staged, "wb") as out:
            async for chunk in request.content.iter_chunked(1 << 20):
                await request.app[LIMITS].pace_async("net-in", len(chunk))
                await asyncio.to_thread(out.write, chunk)
        problem = await asyncio.to_thread(_verify, staged, index)
        if problem:
            raise web.HTTPBadRequest(text=f"block {block} rejected: {problem}")
        async with request.app[COMMITTING]:  # two pushes of one block: the first one wins
            existing = await asyncio.to_thread(_committed_index, blocks_dir, block)
            if existing not in (None, index):
                raise web.HTTPConflict(text=f"block {block} is committed here already")
            if existing is None:
                await asyncio.to_thread(_commit, blocks_dir, block, staged, index)
    finally:
        staged.unlink(missing_ok=True)
    parts = tuple(
        PushedPart(partition=p, nbytes=length, crc32=crc)
        for p, (_, length, crc) in enumerate(index)
        if length
    )
    callback = request.app[ON_RECEIVED]
    if callback is not None:
        callback(block, parts)
    return web.Response(status=201)


def _committed_index(blocks_dir: Path, block: str) -> list[list[int]] | None:
    try:
        return msgpack.unpackb((blocks_dir / f"{block}.index").read_bytes())
    except FileNotFoundError:
        return None
    except ValueError:  # an unreadable index: committed all the same, never replaced
        return []


def _verify(path: Path, index: list[list[int]]) -> str | None:
    data = path.read_bytes()
    expected = sum(length for _, length, _ in index)
    if len(data) != expected:
        return f"{len(data)} bytes received, the index says {expected}"
    for partition, (offset, length, crc) in enumerate(index):
        if length and zlib.crc32(data[offset : offset + length]) != crc:
            return f"partition {partition} fails its CRC check"
    return None


def _commit(blocks_dir: Path, block: str, staged: Path, index: list[list[int]]) -> None:
    with open(staged, "rb+") as handle:
        os.fsync(handle.fileno())
    os.replace(staged, blocks_dir / f"{block}.data")
    index_tmp = blocks_dir / f".{block}.index.{os.urandom(4).hex()}.tmp"
    index_tmp.write_bytes(msgpack.packb(index))
    os.replace(index_tmp, blocks_dir / f"{block}.index")
