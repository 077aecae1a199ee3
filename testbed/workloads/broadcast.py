"""A broadcast input read once per node, the worker's side (Spark keeps a broadcast variable
in each executor's block manager, fetched once per executor: TorrentBroadcast).

A task reads a block of a ``broadcast`` dependency (``TaskSpec.broadcast``: MLR's model, which
every gradient task reads whole) through its node's copy, a block of its own under
``<node>/broadcast/`` named ``<block>.p<partition>``: the first task of the node that needs it
fetches it, as any input, from the locations the master named, and keeps it; every later or
concurrent task of the node reads that copy. The block id names the job, the stage, the task
and the producing attempt, so a recomputed block (a new attempt) is fetched again, and a copy
is never stale.

Fetches in flight are shared: a task takes the copy's lock (``flock`` on ``.<name>.lock``,
released when the task closes it or its process dies) before it looks for the copy, and holds
it while it fetches, so a second task of the node waits for the first one's fetch, then reads
its copy. The copy is a block, committed whole or not at all: a fetch that fails leaves none
(the next task tries again, and fails alike if no location holds the block any more). Copies
live on the node's disk as its blocks do, until the node goes (an eviction deletes its
directory): a full disk fails the task as ``enospc``, as a block or a spill file would.
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable, Iterator
from pathlib import Path

from testbed.wire.blocks import BlockWriter, iter_frames, read_segment_chunks, segment
from testbed.wire.protocol import BlockRef

Fetch = Callable[[BlockRef], Iterator[bytes]]
"""A block partition's frames, from the first location that serves it (``BlockFetcher.frames``)."""


def copy_name(ref: BlockRef) -> str:
    """The block id of a node's copy of one partition of a block."""
    return f"{ref.block}.p{ref.partition}"


class BroadcastCopies:
    """The node's copies of broadcast inputs, in ``directory`` (``<node>/broadcast``)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def frames(self, ref: BlockRef, fetch: Fetch) -> Iterator[bytes]:
        """The partition's frames, from the node's copy, made first if there is none."""
        name = copy_name(ref)
        if segment(self.directory, name, 0) is None:
            self._copy(ref, name, fetch)
        seg = segment(self.directory, name, 0)
        if seg is None:  # made or found under the lock: only deleting the node's directory removes it
            raise LookupError(f"the node's copy of {ref.block} is gone")
        yield from iter_frames(read_segment_chunks(seg), seg.crc32)

    def _copy(self, ref: BlockRef, name: str, fetch: Fetch) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / f".{name}.lock", "ab") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another task of the node fetching it: wait for it
            if segment(self.directory, name, 0) is not None:
                return
            writer = BlockWriter(self.directory, name, 1)
            try:
                for frame in fetch(ref):
                    writer.write(0, frame)
                writer.commit()
            finally:
                writer.abort()  # nothing left to drop once committed
