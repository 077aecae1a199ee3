"""The agent's data plane: an aiohttp server for its node-local shuffle blocks.

Only callers presenting the run token get blocks; block ids are validated
against a strict pattern, so a request can never leave the blocks directory.
"""

from __future__ import annotations

import asyncio
import hmac
import re
from pathlib import Path

from aiohttp import web

from testbed.blocks import CRC_HEADER, TOKEN_HEADER, segment

BLOCK_ID = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}$")
CHUNK = 1 << 20


def make_app(blocks_dir: Path, token: str) -> web.Application:
    app = web.Application()
    app["blocks_dir"] = blocks_dir
    app["token"] = token
    app.router.add_get("/blocks/{block}/{partition}", serve_block)
    app.router.add_get("/health", lambda _: web.json_response({"ok": True}))
    return app


def authorised(request: web.Request) -> bool:
    return hmac.compare_digest(request.headers.get(TOKEN_HEADER, ""), request.app["token"])


async def serve_block(request: web.Request) -> web.StreamResponse:
    if not authorised(request):
        raise web.HTTPForbidden(text="missing or wrong run token")
    block = request.match_info["block"]
    partition = request.match_info["partition"]
    if not BLOCK_ID.match(block) or ".." in block or not partition.isdigit():
        raise web.HTTPBadRequest(text="bad block id")
    seg = await asyncio.to_thread(segment, request.app["blocks_dir"], block, int(partition))
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
            await response.write(chunk)
    await response.write_eof()
    return response
