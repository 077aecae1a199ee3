"""Node-local block files: the storage format of shuffle outputs.

A block is one task attempt's output, split into partitions. It is stored as a
data file holding each partition's segment back to back, plus an index with
each segment's offset, length and CRC32 (Spark's sort-shuffle layout). A
segment is a sequence of frames, ``<u32 little-endian length><payload>``, so a
reader can stream it without loading it whole. The index is written last and
renamed into place: a block without an index was never committed.
"""

from __future__ import annotations

import contextlib
import os
import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import msgpack

FRAME_HEADER = struct.Struct("<I")
TOKEN_HEADER = "X-Testbed-Token"
"""HTTP header carrying the run token on every data-plane and API request."""
CRC_HEADER = "X-Block-CRC32"
"""HTTP header carrying a served segment's CRC32."""


@dataclass(frozen=True, slots=True)
class Segment:
    path: Path
    offset: int
    length: int
    crc32: int


class BlockWriter:
    """Writes a block's partitions in non-decreasing partition order."""

    def __init__(self, directory: Path, block_id: str, partitions: int) -> None:
        self.directory = directory
        self.block_id = block_id
        self.partitions = partitions
        directory.mkdir(parents=True, exist_ok=True)
        self._tmp = directory / f".{block_id}.data.tmp"
        self._file: BinaryIO = open(self._tmp, "wb")  # noqa: SIM115 - closed in commit/abort
        self._index: list[list[int]] = [[0, 0, 0] for _ in range(partitions)]
        self._current = 0
        self._offset = 0

    def write(self, partition: int, payload: bytes | memoryview) -> None:
        if partition < self._current:
            raise ValueError("partitions must be written in non-decreasing order")
        if partition != self._current:
            self._current = partition
        entry = self._index[partition]
        if entry[1] == 0:
            entry[0] = self._offset
        header = FRAME_HEADER.pack(len(payload))
        self._file.write(header)
        self._file.write(payload)
        entry[2] = zlib.crc32(payload, zlib.crc32(header, entry[2]))
        size = len(header) + len(payload)
        entry[1] += size
        self._offset += size

    @property
    def partition_bytes(self) -> tuple[int, ...]:
        return tuple(entry[1] for entry in self._index)

    def commit(self) -> tuple[int, ...]:
        with self._file:
            self._file.flush()
            os.fsync(self._file.fileno())
        data = self.directory / f"{self.block_id}.data"
        os.replace(self._tmp, data)
        index_tmp = self.directory / f".{self.block_id}.index.tmp"
        index_tmp.write_bytes(msgpack.packb(self._index))
        os.replace(index_tmp, self.directory / f"{self.block_id}.index")
        return self.partition_bytes

    def abort(self) -> None:
        """Drop the block unless it was committed (then nothing is left to drop). Closing
        flushes what is buffered, which fails on a full disk: the file is closed anyway."""
        with contextlib.suppress(OSError):
            self._file.close()
        self._tmp.unlink(missing_ok=True)


def segment(directory: Path, block_id: str, partition: int) -> Segment | None:
    """The stored segment of one partition, or None when the block is not committed here."""
    try:
        index = msgpack.unpackb((directory / f"{block_id}.index").read_bytes())
    except (OSError, ValueError):
        return None
    if not 0 <= partition < len(index):
        return None
    offset, length, crc = index[partition]
    return Segment(directory / f"{block_id}.data", offset, length, crc)


def read_segment_chunks(seg: Segment, chunk_size: int = 1 << 20) -> Iterator[bytes]:
    with open(seg.path, "rb") as handle:
        handle.seek(seg.offset)
        left = seg.length
        while left > 0:
            chunk = handle.read(min(chunk_size, left))
            if not chunk:
                raise OSError(f"block file {seg.path} is shorter than its index says")
            left -= len(chunk)
            yield chunk


class CorruptBlock(Exception):
    """A segment's bytes do not match its checksum or its framing."""


def iter_frames(chunks: Iterable[bytes], expected_crc: int | None = None) -> Iterator[bytes]:
    """Payloads from a stream of segment chunks, checking framing and (optionally) the CRC."""
    buffer = bytearray()
    crc = 0
    for chunk in chunks:
        if expected_crc is not None:
            crc = zlib.crc32(chunk, crc)
        buffer += chunk
        start = 0
        while len(buffer) - start >= FRAME_HEADER.size:
            (size,) = FRAME_HEADER.unpack_from(buffer, start)
            end = start + FRAME_HEADER.size + size
            if end > len(buffer):
                break
            yield bytes(buffer[start + FRAME_HEADER.size : end])
            start = end
        del buffer[:start]
    if buffer:
        raise CorruptBlock(f"{len(buffer)} trailing bytes do not form a whole frame")
    if expected_crc is not None and crc != expected_crc:
        raise CorruptBlock(f"checksum mismatch: expected {expected_crc:#x}, got {crc:#x}")


def delete_blocks(directory: Path, prefix: str) -> int:
    """Remove every block whose id starts with ``prefix``; returns how many files went."""
    removed = 0
    for path in directory.glob(f"{prefix}*"):
        path.unlink(missing_ok=True)
        removed += 1
    return removed
