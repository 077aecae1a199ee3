"""A task attempt in its own worker process.

Each task runs in a process forked from the agent's forkserver, so the agent's
event loop never blocks, a cancel or an eviction is a kill, the task's peak
RSS is its own, and the kernel's OOM killer takes the task, not the agent.
The result goes back to the agent through a pipe as a plain dict.

A node may cap the memory of each task (``memory_limit_mb``): the worker's
address space is limited (``RLIMIT_AS``) to what it had at start plus the cap,
so a task that needs more gets ``MemoryError``, reported as ``oom``, as the
kernel's OOM killer would report it inside a memory-limited container.
"""

from __future__ import annotations

import contextlib
import encodings.idna  # noqa: F401 - loaded once in the forkserver, never mid-task under a memory cap
import errno
import http.client
import os
import resource
import time
import traceback
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from testbed.node.bandwidth import bind_worker
from testbed.wire.blocks import (
    TOKEN_HEADER,
    BlockWriter,
    delete_blocks,
    iter_frames,
    read_segment_chunks,
    segment,
)
from testbed.wire.protocol import TaskSpec
from testbed.workloads.base import (
    BlockFetcher,
    FetchFailed,
    InputDataError,
    TaskContext,
    WorkloadError,
    peak_rss_bytes,
    reset_peak_rss,
)
from testbed.workloads.catalog import COMBINERS, OPERATIONS
from testbed.workloads.progress import Progress
from testbed.workloads.replica_input import SplitReads, read_replica, replicated


@contextlib.contextmanager
def memory_cap(limit_mb: int | None):
    """Limit the address space to its current size plus ``limit_mb`` (lifted again on exit,
    so the outcome can still be sent)."""
    if limit_mb is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        current = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    cap = current + limit_mb * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (cap if hard == resource.RLIM_INFINITY else min(cap, hard), hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def execute(
    spec: TaskSpec, node_dir: Path, own_url: str, feed: Any = None, score: Any = None
) -> dict[str, Any]:
    """Run one attempt; ``feed`` brings the blocks of its streamed dependencies; ``score``: the
    shared double its progress score goes to (``testbed.workloads.progress``). It reads
    and uploads with the capabilities its spec carries, and holds no other secret."""
    blocks = node_dir / "blocks"
    scratch = node_dir / "scratch" / spec.block_id
    bind_worker(node_dir)
    fetcher = BlockFetcher(blocks, own_url)
    ctx = TaskContext(spec, blocks, scratch, fetcher, feed=feed, progress=Progress(score))
    reset_peak_rss()
    started, cpu_started = time.perf_counter(), time.process_time()
    outcome: dict[str, Any] = {"state": "succeeded"}
    reads = SplitReads() if replicated(spec) else None
    try:
        scratch.mkdir(parents=True, exist_ok=True)
        ctx.replica_params = read_replica(spec, fetcher, scratch, reads)
        outcome["result"] = OPERATIONS[spec.op](ctx) or {}
        if spec.final:
            upload(ctx.final_path, spec.output_url or "", spec.output_token)
    except FetchFailed as exc:
        outcome = {"state": "failed", "failure": "fetch", "error": str(exc), "lost_blocks": [exc.block]}
    except MemoryError:
        outcome = {"state": "failed", "failure": "oom", "error": "MemoryError"}
    except WorkloadError as exc:  # a plugin's own code: every attempt would fail alike
        outcome = {"state": "failed", "failure": "data", "error": f"workload plugin failed: {exc}"}
    except InputDataError as exc:  # every attempt would fail alike: not retried
        outcome = {"state": "failed", "failure": "data", "error": f"bad input: {exc}"}
    except OSError as exc:
        failure = {errno.ENOSPC: "enospc", errno.ENOMEM: "oom"}.get(exc.errno or 0, "error")
        outcome = {"state": "failed", "failure": failure, "error": f"{exc.__class__.__name__}: {exc}"}
    except Exception as exc:
        outcome = {"state": "failed", "failure": "error", "error": _short_trace(exc)}
    finally:
        ctx.cleanup()
        if outcome["state"] == "failed":  # e.g. a full disk: free what this attempt wrote
            discard_attempt(blocks, spec.block_id)
    ctx.metrics.compute_s = time.perf_counter() - started
    ctx.metrics.cpu_s = time.process_time() - cpu_started
    ctx.metrics.peak_rss_bytes = peak_rss_bytes()
    outcome["metrics"] = ctx.metrics.model_dump()
    outcome["partition_bytes"] = list(ctx.partition_bytes)
    if ctx.cache_report is not None:
        outcome["cache"] = ctx.cache_report.to_dict()
    if reads is not None:  # where its replicated split was read, even by an attempt that failed
        outcome["input_reads"] = reads.to_dict()
    return outcome


def discard_attempt(blocks: Path, block_id: str) -> None:
    """The attempt's block, committed or half-written: nobody will read it."""
    with contextlib.suppress(OSError):
        delete_blocks(blocks, f"{block_id}.")
        delete_blocks(blocks, f".{block_id}.")


def combine(op: str, members: list[str], block: str, partitions: int, node_dir: Path) -> dict[str, Any]:
    """Merge the stored outputs ``members`` of one op into the block ``block`` (Pado's
    partial aggregation); the block is committed whole, or not at all."""
    blocks = node_dir / "blocks"

    def frames_of(partition: int) -> Iterator[bytes]:
        for member in members:
            seg = segment(blocks, member, partition)
            if seg is None:
                raise LookupError(f"block {member} has no partition {partition} here")
            yield from iter_frames(read_segment_chunks(seg), seg.crc32)

    writer = BlockWriter(blocks, block, partitions)
    try:
        COMBINERS[op](frames_of, writer)
        return {"state": "succeeded", "partition_bytes": list(writer.commit())}
    except Exception as exc:
        writer.abort()
        return {"state": "failed", "failure": "error", "error": _short_trace(exc)}


def upload(path: Path, url: str, token: str) -> None:
    """Stream a final output file to the master's output sink (HTTP PUT)."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    try:
        with open(path, "rb") as body:
            headers = {TOKEN_HEADER: token, "Content-Length": str(path.stat().st_size)}
            conn.request("PUT", parts.path, body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        if response.status not in (200, 201, 204):
            raise OSError(f"output upload refused: HTTP {response.status}")
    finally:
        conn.close()


def _short_trace(exc: BaseException) -> str:
    return "".join(traceback.format_exception(exc, limit=-4))[-3000:]
