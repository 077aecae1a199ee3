"""Copying a stored block to another agent: Pado's push and Spark-checkpoint's copy.

The sender streams the chosen partitions' segments back to back with their index
(offset, length, CRC32 per partition) in a header; the receiver
(``agents.shuffle.receive_block``) stages the body, checks every CRC, and only
then renames the block into place, data first and index last, exactly as a
task commits its own output. A block without an index was never received.
"""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import aiohttp
import msgpack

from testbed.node.bandwidth import UNLIMITED, NodeLimits
from testbed.wire.blocks import TOKEN_HEADER, read_segment_chunks, segment
from testbed.wire.protocol import PushedPart

INDEX_HEADER = "X-Block-Index"
CHUNK = 1 << 18


def encode_index(index: Sequence[Sequence[int]]) -> str:
    return base64.b64encode(msgpack.packb([list(e) for e in index])).decode()


def decode_index(header: str) -> list[list[int]]:
    index = msgpack.unpackb(base64.b64decode(header.encode(), validate=True))
    if not isinstance(index, list) or not all(
        isinstance(e, list) and len(e) == 3 and all(isinstance(v, int) and v >= 0 for v in e) for e in index
    ):
        raise ValueError("a block index is a list of [offset, length, crc32]")
    return index


def subset_index(blocks_dir: Path, block: str, partitions: Sequence[int]) -> tuple[list[list[int]], list]:
    """The index of a block holding only ``partitions`` (others empty), and their segments."""
    first = segment(blocks_dir, block, 0)
    if first is None:
        raise FileNotFoundError(f"block {block} is not stored here")
    count = len(msgpack.unpackb((blocks_dir / f"{block}.index").read_bytes()))
    index = [[0, 0, 0] for _ in range(count)]
    segments = []
    offset = 0
    for partition in sorted(set(partitions)):
        seg = segment(blocks_dir, block, partition)
        if seg is None:
            raise LookupError(f"block {block} has no partition {partition}")
        index[partition] = [offset, seg.length, seg.crc32]
        offset += seg.length
        segments.append(seg)
    return index, segments


async def _body(segments: list, rate_bytes_s: float | None, limits: NodeLimits) -> AsyncIterator[bytes]:
    started = time.monotonic()
    sent = 0
    for seg in segments:
        for chunk in await asyncio.to_thread(lambda s=seg: list(read_segment_chunks(s, CHUNK))):
            await limits.pace_async("net-out", len(chunk))
            yield chunk
            sent += len(chunk)
            if rate_bytes_s:
                ahead = sent / rate_bytes_s - (time.monotonic() - started)
                if ahead > 0:
                    await asyncio.sleep(ahead)


async def push_block(
    session: aiohttp.ClientSession,
    blocks_dir: Path,
    block: str,
    url: str,
    partitions: Sequence[int],
    token: str,
    rate_bytes_s: float | None = None,
    limits: NodeLimits = UNLIMITED,
) -> tuple[PushedPart, ...]:
    """PUT the partitions of a local block to the agent at ``url``; the parts as sent (at most
    at ``rate_bytes_s``, and paced on the sending node's network ``limits``)."""
    index, segments = await asyncio.to_thread(subset_index, blocks_dir, block, partitions)
    headers = {TOKEN_HEADER: token, INDEX_HEADER: encode_index(index)}
    headers["Content-Length"] = str(sum(seg.length for seg in segments))
    body = _body(segments, rate_bytes_s, limits)
    async with session.put(f"{url}/blocks/{block}", data=body, headers=headers) as r:
        if r.status != 201:
            raise OSError(f"push of {block} to {url} refused: HTTP {r.status} {await r.text()}")
    return tuple(
        PushedPart(partition=p, nbytes=index[p][1], crc32=index[p][2]) for p in sorted(set(partitions))
    )
