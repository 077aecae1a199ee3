"""A node's copies of its input splits as block files (``jobs[].input_replication``; issue
#43, point 5): the agent's side, which the agent and its block server import without the
workloads.

When a job arrives, the master tells each holder the splits it holds (``StoreInputs``, journaled
as ``inputs_stored``: ``master.core.input_holders``); its agent copies each split's bytes from
the source file into a block of its own (one partition,
framed, CRC-checked: ``store_replicas``), paced by the node's disk bucket. The copy spans the
bytes a line reader of the split may touch: from the byte before ``start`` (which says whether
the split begins mid-line) to the end of the line ``end`` falls in. While a split is being
stored, its readers wait (``hold_storing``, ``wait_stored``). The copy lives under the node's
directory, so an evicted node's replicas go with it. A map reads it through
``testbed.workloads.replica_input``.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from testbed.node.bandwidth import NodeLimits
from testbed.wire.blocks import BlockWriter, segment
from testbed.wire.protocol import InputSplit

CHUNK = 1 << 20


def span_start(start: int) -> int:
    """The first byte of a split's copy: the one before ``start``, which a line reader checks."""
    return max(start - 1, 0)


def _storing(blocks_dir: Path, block: str) -> Path:
    return blocks_dir / f".{block}.storing"


def hold_storing(blocks_dir: Path, block: str) -> int:
    """Taken while ``block`` is being stored (readers of it wait: ``wait_stored``); the lock's
    descriptor, for ``release_storing``."""
    fd = os.open(_storing(blocks_dir, block), os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def release_storing(blocks_dir: Path, block: str, fd: int) -> None:
    _storing(blocks_dir, block).unlink(missing_ok=True)
    os.close(fd)


def wait_stored(blocks_dir: Path, block: str) -> None:
    """Return once ``block`` is not being stored here (at once if it never was)."""
    try:
        fd = os.open(_storing(blocks_dir, block), os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH)
    finally:
        os.close(fd)


def _span_chunks(split: InputSplit) -> Iterator[bytes]:
    """The split's bytes from ``span_start`` to the end of the line ``end`` falls in."""
    with open(split.path, "rb") as handle:
        handle.seek(span_start(split.start))
        left = split.end - span_start(split.start)
        while left > 0:
            data = handle.read(min(CHUNK, left))
            if not data:
                return
            left -= len(data)
            yield data
        if split.end > 0:
            handle.seek(split.end - 1)
            if handle.read(1) != b"\n":
                yield handle.readline()


def span_bytes(path: str, start: int, end: int) -> int:
    """The bytes of the split's span (those ``_span_chunks`` gives, what a line reader of the split
    reads from its source), found without reading the span: its length, then its last line's end."""
    with open(path, "rb") as handle:
        body = max(min(end, os.fstat(handle.fileno()).st_size) - span_start(start), 0)
        if end > 0:
            handle.seek(end - 1)
            if handle.read(1) != b"\n":
                body += len(handle.readline())
    return body


def store_replicas(node_dir: Path, splits: Sequence[InputSplit]) -> None:
    """Copy each split into its block in the node's blocks (kept if stored already), paced by
    the node's disk bucket (opened here: a thread of its own, off the agent's loop)."""
    blocks, limits = node_dir / "blocks", NodeLimits.open(node_dir)
    try:
        for split in splits:
            if segment(blocks, split.block, 0) is None:
                _store(blocks, split, limits)
    finally:
        limits.close()


def _store(blocks_dir: Path, split: InputSplit, limits: NodeLimits) -> None:
    writer = BlockWriter(blocks_dir, split.block, 1)
    try:
        for chunk in _span_chunks(split):
            limits.pace("disk", len(chunk))
            writer.write(0, chunk)
        writer.commit()
    except BaseException:
        writer.abort()
        raise
