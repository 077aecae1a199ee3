"""The agent's data plane: an aiohttp server for its node-local shuffle blocks.

``GET /blocks/<block>/<partition>`` serves a stored partition; ``PUT
/blocks/<block>`` receives a pushed or checkpointed block (``agents.push``),
staged and CRC-checked before it is committed. Only callers presenting the run
token get in; block ids are validated against a strict pattern, so a request
can never leave the blocks directory.
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
from testbed.bandwidth import UNLIMITED, NodeLimits
from testbed.blocks import CRC_HEADER, TOKEN_HEADER, segment
from testbed.protocol import PushedPart
from testbed.tokens import token_matches

OnReceived = Callable[[str, tuple[PushedPart, ...]], None]

BLOCK_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")
PARTITION = re.compile(r"[0-9]{1,9}")
CHUNK = 1 << 20
BLOCKS_DIR = web.AppKey("blocks_dir", Path)
TOKEN = web.AppKey("token", str)
ON_RECEIVED: web.AppKey[OnReceived | None] = web.AppKey("on_received")
LIMITS = web.AppKey("limits", NodeLimits)


def make_app(
    blocks_dir: Path,
    token: str,
    on_received: OnReceived | None = None,
    identity: dict[str, str] | None = None,
    limits: NodeLimits = UNLIMITED,
) -> web.Application:
    """``on_received(block, parts)`` is told of every block received whole; ``identity``
    (node id, incarnation) is what ``/health`` answers, so a caller knows who answered;
    blocks served and received pace on the node's ``limits``."""
    app = web.Application(client_max_size=0)
    app[LIMITS] = limits
    app[BLOCKS_DIR] = blocks_dir
    app[TOKEN] = token
    app[ON_RECEIVED] = on_received
    app.router.add_get("/blocks/{block}/{partition}", serve_block)
    app.router.add_put("/blocks/{block}", receive_block)
    health = {"ok": True, **(identity or {})}

    async def answer_health(_: web.Request) -> web.Response:
        return web.json_response(health)

    app.router.add_get("/health", answer_health)
    return app


def authorised(request: web.Request) -> bool:
    return token_matches(request.headers.get(TOKEN_HEADER), request.app[TOKEN])


def checked_block_id(request: web.Request) -> str:
    if not authorised(request):
        raise web.HTTPForbidden(text="missing or wrong run token")
    block = request.match_info["block"]
    if not BLOCK_ID.fullmatch(block) or ".." in block:
        raise web.HTTPBadRequest(text="bad block id")
    return block


async def serve_block(request: web.Request) -> web.StreamResponse:
    block = checked_block_id(request)
    partition = request.match_info["partition"]
    if not partition.isdigit():
        raise web.HTTPBadRequest(text="bad partition")
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
    """Stage a pushed block, verify every partition's length and CRC, then commit it."""
    block = checked_block_id(request)
    try:
        index = decode_index(request.headers.get(INDEX_HEADER, ""))
    except ValueError as exc:
        raise web.HTTPBadRequest(text=f"bad block index: {exc}") from None
    blocks_dir: Path = request.app[BLOCKS_DIR]
    staged = blocks_dir / f".{block}.data.{os.urandom(4).hex()}.recv"
    try:
        with open(staged, "wb") as out:
            async for chunk in request.content.iter_chunked(1 << 20):
                await request.app[LIMITS].pace_async("net-in", len(chunk))
                await asyncio.to_thread(out.write, chunk)
        problem = await asyncio.to_thread(_verify, staged, index)
        if problem:
            raise web.HTTPBadRequest(text=f"block {block} rejected: {problem}")
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
