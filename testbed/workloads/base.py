"""What a task sees while it runs: its spec, its memory budget, its inputs and outputs.

Workload code is written against ``TaskContext`` only, so the same map or
reduce function runs in an agent's worker process (inputs fetched over HTTP)
and in a unit test (inputs read from local block files).
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import resource
import shutil
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from testbed.node.bandwidth import paced
from testbed.wire.blocks import (
    CRC_HEADER,
    TOKEN_HEADER,
    BlockWriter,
    CorruptBlock,
    iter_frames,
    read_segment_chunks,
    segment,
)
from testbed.wire.protocol import BlockRef, TaskMetrics, TaskSpec
from testbed.workloads.broadcast import BroadcastCopies
from testbed.workloads.input_cache import CacheReport, InputCache, input_cache_key
from testbed.workloads.progress import COPY, Progress


class InputDataError(ValueError):
    """The job's input data is malformed: every attempt would fail alike, so the job fails at once."""


class WorkloadError(InputDataError):
    """A workload plugin's own code failed (it raised, or emitted what the shuffle cannot
    carry): deterministic, so every attempt would fail alike; the job fails at once."""


class FetchFailed(Exception):
    """No location could serve a block: its producer must be recomputed."""

    def __init__(self, block: str, reason: str) -> None:
        super().__init__(f"cannot fetch block {block}: {reason}")
        self.block = block


@dataclass
class BlockFetcher:
    """Reads block partitions locally when they are here, over HTTP otherwise."""

    blocks_dir: Path
    own_url: str = ""
    timeout_s: float = 30.0

    def frames(self, ref: BlockRef) -> Iterator[bytes]:
        """The partition's frames from its first location that serves it (``located_frames``)."""
        for _, frame in self.located_frames(ref):
            yield frame

    def located_frames(self, ref: BlockRef) -> Iterator[tuple[str, bytes]]:
        """The partition's frames, each with the location that served it, from its first
        location that serves it. A location that fails part-way is followed by the next from
        the frame where it stopped (every copy of a block holds the same frames), so no frame
        reaches the reader twice; frames that fail their checksum once given cannot be taken
        back: the fetch fails."""
        reasons = []
        given = 0
        for location in ref.locations:
            try:
                source = self.local(ref) if location == self.own_url else self._remote(location, ref)
                for n, frame in enumerate(source):
                    if n >= given:
                        given += 1
                        yield location, frame
                return
            except (OSError, http.client.HTTPException, CorruptBlock, LookupError) as exc:
                if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
                    raise MemoryError(f"fetching {ref.block}: {exc}") from exc  # our fault, not the block's
                reasons.append(f"{location}: {exc}")
                if isinstance(exc, CorruptBlock) and given:
                    break
        raise FetchFailed(ref.block, "; ".join(reasons) or "no location")

    def local(self, ref: BlockRef) -> Iterator[bytes]:
        """The partition from this node's own blocks (LookupError: not stored here)."""
        seg = segment(self.blocks_dir, ref.block, ref.partition)
        if seg is None:
            raise LookupError("not stored here")
        yield from iter_frames(read_segment_chunks(seg), seg.crc32)

    def _remote(self, location: str, ref: BlockRef) -> Iterator[bytes]:
        url = urllib.parse.urlsplit(location)
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=self.timeout_s)
        try:
            headers = {TOKEN_HEADER: ref.cap_at(location)}
            conn.request("GET", f"/blocks/{ref.block}/{ref.partition}", headers=headers)
            response = conn.getresponse()
            if response.status != 200:
                raise LookupError(f"HTTP {response.status}")
            crc = int(response.getheader(CRC_HEADER, "0"))
            yield from iter_frames(paced(iter(lambda: response.read(1 << 20), b""), "net-in"), crc)
        finally:
            conn.close()


@dataclass
class TaskContext:
    spec: TaskSpec
    blocks_dir: Path
    scratch: Path
    fetcher: BlockFetcher
    metrics: TaskMetrics = field(default_factory=TaskMetrics)
    partition_bytes: tuple[int, ...] = ()
    budget_override: int | None = None
    """A budget in bytes instead of ``spec.memory_mb`` (profiling below 1 MB steps)."""
    writers: list[BlockWriter] = field(default_factory=list)
    cache_report: CacheReport | None = None
    """What the task did with the node's input cache (the agent's LRU learns it)."""
    feed: Any = None
    """Where the blocks of streamed dependencies arrive while the task runs (a pipe's
    reading end, ``TaskInputs`` as dicts), for ``input_frames``."""
    fed: dict[int, dict[str, Any]] = field(default_factory=dict)
    """The feed's latest message for each streamed dependency not being read when it came."""
    progress: Progress = field(default_factory=Progress)
    """Its progress score (``testbed.workloads.progress``), read by the agent's heartbeats."""
    blocks_read: int = 0
    """Input blocks read whole so far (the copy phase's count)."""
    replica_params: dict[str, Any] | None = None
    """``params`` reading the split from its replica's copy (``testbed.workloads.replica_input``)."""

    @property
    def budget_bytes(self) -> int:
        if self.budget_override is not None:
            return self.budget_override
        return self.spec.memory_mb * 1024 * 1024

    @property
    def params(self) -> dict[str, Any]:
        return self.spec.params if self.replica_params is None else self.replica_params

    def input_frames(self, dependency: int = 0) -> Iterator[bytes]:
        """Every frame of every block of one input dependency, block after block. For a
        streamed dependency, blocks named by the feed are read as they arrive, each once,
        until the feed says the last one has come (Pado's incremental receivers)."""
        refs, last = self.spec.inputs[dependency], dependency not in self.spec.streamed
        read = self._broadcast_frames if dependency in self.spec.broadcast else self.fetcher.frames
        seen: set[str] = set()
        while True:
            for ref in refs:
                if ref.block not in seen:
                    seen.add(ref.block)
                    for frame in read(ref):
                        self.metrics.bytes_in += len(frame)
                        yield frame
                    self.blocks_read += 1
                    self.progress.phase(COPY, self.blocks_read, self.blocks_to_fetch)
            if last:
                return
            refs, last = self._more_inputs(dependency)

    @property
    def blocks_to_fetch(self) -> int:
        """The copy phase's total: the blocks of its dependencies that are not streamed (a streamed
        one's blocks are not known until they come)."""
        streamed = set(self.spec.streamed)
        return sum(len(refs) for d, refs in enumerate(self.spec.inputs) if d not in streamed)

    def _broadcast_frames(self, ref: BlockRef) -> Iterator[bytes]:
        """A block read by broadcast: from this node's blocks if it holds it, else through the
        node's copy, fetched once for all its tasks (``testbed.workloads.broadcast``)."""
        held = self.fetcher.own_url in ref.locations
        if held and segment(self.blocks_dir, ref.block, ref.partition) is not None:
            return self.fetcher.local(ref)
        return BroadcastCopies(self.blocks_dir.parent / "broadcast").frames(ref, self.fetcher.frames)

    def _more_inputs(self, dependency: int) -> tuple[tuple[BlockRef, ...], bool]:
        """The feed's latest message for ``dependency``. A message for another streamed
        dependency that arrives meanwhile is kept for when that one is read (a task with two
        streamed parents, a join's, reads one whole, then the other); messages are cumulative,
        so its latest is all it needs."""
        if self.feed is None:
            raise RuntimeError(f"dependency {dependency} is streamed but the task has no feed")
        message = self.fed.pop(dependency, None)
        while message is None:
            received = self.feed.recv()  # blocks until the master commits more, EOFError if gone
            if received["dependency"] == dependency:
                message = received
            else:
                self.fed[received["dependency"]] = received
        return tuple(BlockRef.model_validate(r) for r in message["refs"]), message["last"]

    @property
    def caches_input(self) -> bool:
        """Whether the task reads a source through the node's input cache (``input_cache_mb``)."""
        return bool(self.spec.input_cache_mb) and input_cache_key(self.spec.op, self.spec.params) is not None

    def through_input_cache(self, produce: Iterable[bytes]) -> Iterator[bytes]:
        """The task's source chunks, read through the node's input cache when ``caches_input``;
        ``produce`` is lazy and not started on a hit."""
        key = input_cache_key(self.spec.op, self.spec.params)
        if not self.spec.input_cache_mb or key is None:
            yield from produce
            return
        cache = InputCache(self.blocks_dir.parent / "cache", self.scratch)
        yield from cache.read(key, produce)
        self.cache_report = cache.report
        if cache.report is not None and cache.report.hit:
            self.metrics.cache_hits += 1
            self.metrics.cache_bytes_read += cache.report.nbytes
        elif cache.report is not None:
            self.metrics.cache_misses += 1

    def open_output(self) -> BlockWriter:
        writer = BlockWriter(self.blocks_dir, self.spec.block_id, self.spec.partitions)
        self.writers.append(writer)
        return writer

    def commit_output(self, writer: BlockWriter) -> None:
        self.partition_bytes = writer.commit()
        self.metrics.bytes_out += sum(self.partition_bytes)

    @property
    def final_path(self) -> Path:
        """Where a final (job output) task writes its part file before it is uploaded."""
        return self.scratch / "final.out"

    def note_buffered(self, nbytes: int) -> None:
        self.metrics.peak_buffered_bytes = max(self.metrics.peak_buffered_bytes, nbytes)

    def cleanup(self) -> None:
        """Scratch files go; so does an output the task did not commit (e.g. a full disk)."""
        for writer in self.writers:
            writer.abort()
        shutil.rmtree(self.scratch, ignore_errors=True)


def reset_peak_rss() -> None:
    """Start the task's peak-RSS count now (Linux: writing 5 to clear_refs resets VmHWM)."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def peak_rss_bytes() -> int:
    """The kernel's high-water mark of this process's resident memory (VmHWM)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


TaskFunction = Callable[[TaskContext], dict[str, Any] | None]
Combiner = Callable[[Callable[[int], Iterator[bytes]], BlockWriter], None]
"""Merges several outputs of one op, partition by partition (``frames_of(partition)``),
into the writer's block (Pado's partial aggregation)."""
