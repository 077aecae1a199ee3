"""Pushing a block to another agent: only the chosen partitions travel, the receiver
commits only what passes its CRC checks, only with the capability to store that block,
and never over a block it has committed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import TestServer

from agents.push import INDEX_HEADER, encode_index, push_block
from agents.shuffle import make_app
from testbed.wire.blocks import TOKEN_HEADER, BlockWriter, iter_frames, read_segment_chunks, segment
from testbed.wire.capabilities import block_cap
from testbed.wire.protocol import PushedPart

KEY = "the-receiving-node's-key"


def cap(block: str, verb: str = "PUT", key: str = KEY) -> str:
    return block_cap(key, verb, block)


@pytest.fixture
async def receiver(
    tmp_path: Path,
) -> AsyncIterator[tuple[TestServer, list[tuple[str, tuple[PushedPart, ...]]]]]:
    reports: list[tuple[str, tuple[PushedPart, ...]]] = []
    app = make_app(tmp_path / "dst", KEY, lambda block, parts: reports.append((block, parts)))
    (tmp_path / "dst").mkdir()
    server = TestServer(app)
    await server.start_server()
    try:
        yield server, reports
    finally:
        await server.close()


def write_block(directory: Path, block: str) -> None:
    writer = BlockWriter(directory, block, 3)
    for partition in range(3):
        for frame in range(50):
            writer.write(partition, f"p{partition}-frame{frame}".encode() * 20)
    writer.commit()


def frames(directory: Path, block: str, partition: int) -> list[bytes]:
    seg = segment(directory, block, partition)
    assert seg is not None
    return list(iter_frames(read_segment_chunks(seg), seg.crc32))


async def test_push_sends_the_chosen_partitions_and_the_receiver_commits_them(
    tmp_path: Path, receiver
) -> None:
    server, reports = receiver
    write_block(tmp_path / "src", "j.s0.t1.a0")
    async with aiohttp.ClientSession() as session:
        sent = await push_block(
            session, tmp_path / "src", "j.s0.t1.a0", str(server.make_url("")), (0, 2), cap("j.s0.t1.a0")
        )
    dst = tmp_path / "dst"
    for partition in (0, 2):
        assert frames(dst, "j.s0.t1.a0", partition) == frames(tmp_path / "src", "j.s0.t1.a0", partition)
    assert frames(dst, "j.s0.t1.a0", 1) == []
    assert [p.partition for p in sent] == [0, 2]
    assert reports == [("j.s0.t1.a0", sent)]


async def test_a_corrupt_or_unauthorised_push_commits_nothing(tmp_path: Path, receiver) -> None:
    server, reports = receiver
    body = b"\x05\x00\x00\x00hello"
    index = encode_index([[0, len(body), 12345]])  # a wrong CRC
    url = str(server.make_url("/blocks/j.s0.t0.a0"))
    async with aiohttp.ClientSession() as session:
        headers = {TOKEN_HEADER: cap("j.s0.t0.a0"), INDEX_HEADER: index}
        async with session.put(url, data=body, headers=headers) as r:
            assert r.status == 400
        for wrong in ("wrong", cap("j.s0.t0.a0", "GET"), cap("j.s0.t0.a1"), cap("j.s0.t0.a0", key="other")):
            async with session.put(url, data=body, headers={TOKEN_HEADER: wrong, INDEX_HEADER: index}) as r:
                assert r.status == 403
    assert not list((tmp_path / "dst").iterdir()) and reports == []


async def test_a_committed_block_is_never_replaced(tmp_path: Path, receiver) -> None:
    """The same push again is acknowledged (nothing rewritten); different bytes under the
    same block id are refused with 409, even with the capability to store that block."""
    server, reports = receiver
    block, base = "j.s0.t1.a0", str(server.make_url(""))
    write_block(tmp_path / "src", block)
    forged = tmp_path / "forged"
    writer = BlockWriter(forged, block, 3)
    writer.write(0, b"pwned")
    writer.commit()
    async with aiohttp.ClientSession() as session:
        first = await push_block(session, tmp_path / "src", block, base, (0, 2), cap(block))
        again = await push_block(session, tmp_path / "src", block, base, (0, 2), cap(block))
        with pytest.raises(OSError, match="409"):
            await push_block(session, forged, block, base, (0,), cap(block))
    assert first == again
    for partition in (0, 2):
        assert frames(tmp_path / "dst", block, partition) == frames(tmp_path / "src", block, partition)
    assert [b for b, _ in reports] == [block, block]
