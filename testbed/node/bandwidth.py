"""A node's network and disk bandwidth, shared by its agent and its task workers.

A node's bytes move in several processes at once: the agent serves shuffle blocks,
pushes and receives copies, while each task worker fetches blocks and writes spill
files. One limit per node and direction must cover all of them, as one NIC or one disk
would. Each limit is a token bucket kept in a 16-byte file in the node's directory (its
rate and the time the link is next free, on the host-wide monotonic clock), updated under
``flock``: every process of the node reserves its bytes on the same bucket, with no
broker process and no message per chunk. A reservation returns how long the caller must
wait; callers sleep outside the lock, so a waiting transfer never blocks another's
reservation. Reservations are first come, first served, like packets on one link.

Buckets (files under ``<node dir>/limits/``): ``net-out`` (blocks served, pushes and
checkpoint copies sent), ``net-in`` (blocks fetched, pushes received) and ``disk``
(spill files written). A missing file means no limit.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

STATE = struct.Struct("=dd")
BURST_S = 0.05
"""How far ahead of its rate a link may run (a burst of 50 ms worth of bytes)."""
KINDS = ("net-out", "net-in", "disk")


def book(
    free_at: float, now: float, nbytes: float, rate: float, burst: float = BURST_S
) -> tuple[float, float]:
    """One booking of ``nbytes`` on a link of ``rate`` bytes/s that is next free at
    ``free_at``: ``(the link's new free time, the seconds the caller waits from now)``. An
    idle link's clock is set back ``burst`` and the wait is ``burst`` short of the booking's
    end, so an idle link lets ``2 x burst`` seconds of bytes through at once. The simulator
    books its model links with this arithmetic (``master.sim``), in its own seconds."""
    free_at = max(free_at, now - burst) + nbytes / rate
    return free_at, max(0.0, free_at - now - burst)


class SharedBucket:
    """One bucket file, opened by any process of the node."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)

    @classmethod
    def create(cls, path: Path, rate_bytes_s: float) -> SharedBucket:
        path.parent.mkdir(parents=True, exist_ok=True)
        staged = path.with_name(f".{path.name}.tmp")
        staged.write_bytes(STATE.pack(rate_bytes_s, 0.0))
        os.replace(staged, path)  # whole or absent: a reader never sees half a bucket
        return cls(path)

    @property
    def rate_bytes_s(self) -> float:
        return STATE.unpack(os.pread(self._fd, STATE.size, 0))[0]

    def reserve(self, nbytes: int) -> float:
        """Book ``nbytes`` on the link; the seconds the caller must wait before going on."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            rate, free_at = STATE.unpack(os.pread(self._fd, STATE.size, 0))
            now = time.monotonic()
            free_at, wait = book(free_at, now, nbytes, rate)
            os.pwrite(self._fd, STATE.pack(rate, free_at), 0)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        return wait

    def set_rate(self, rate_bytes_s: float) -> None:
        """From now on the link moves ``rate_bytes_s`` (a slowdown episode): bookings made
        stand, the next ones are at the new rate."""
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        try:
            _, free_at = STATE.unpack(os.pread(self._fd, STATE.size, 0))
            os.pwrite(self._fd, STATE.pack(rate_bytes_s, free_at), 0)
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)

    def close(self) -> None:
        os.close(self._fd)


@dataclass
class NodeLimits:
    """The buckets of one node (None: that direction is unlimited)."""

    buckets: dict[str, SharedBucket]

    @classmethod
    def create(cls, node_dir: Path, network_mbps: float | None, disk_mb_s: float | None) -> NodeLimits:
        """Made by the agent at start (a restarted node starts with idle links)."""
        rates = {"net-out": network_mbps, "net-in": network_mbps}
        rates = {kind: mbps * 1e6 / 8 for kind, mbps in rates.items() if mbps}
        if disk_mb_s:
            rates["disk"] = disk_mb_s * 1e6
        directory = limits_dir(node_dir)
        return cls({kind: SharedBucket.create(directory / kind, rate) for kind, rate in rates.items()})

    @classmethod
    def open(cls, node_dir: Path) -> NodeLimits:
        """Opened by a task worker: whatever buckets the agent made."""
        directory = limits_dir(node_dir)
        return cls({kind: SharedBucket(directory / kind) for kind in KINDS if (directory / kind).exists()})

    def delay(self, kind: str, nbytes: int) -> float:
        bucket = self.buckets.get(kind)
        return bucket.reserve(nbytes) if bucket is not None and nbytes > 0 else 0.0

    def pace(self, kind: str, nbytes: int) -> None:
        """Block until ``nbytes`` more may have moved (task workers)."""
        wait = self.delay(kind, nbytes)
        if wait > 0:
            time.sleep(wait)

    async def pace_async(self, kind: str, nbytes: int) -> None:
        """Wait, without blocking the loop, until ``nbytes`` more may have moved (the agent)."""
        wait = self.delay(kind, nbytes)
        if wait > 0:
            await asyncio.sleep(wait)

    def close(self) -> None:
        for bucket in self.buckets.values():
            bucket.close()


UNLIMITED = NodeLimits({})


def limits_dir(node_dir: Path) -> Path:
    return node_dir / "limits"


_worker_limits = UNLIMITED


def bind_worker(node_dir: Path) -> None:
    """A task worker serves one node for its whole life: its fetches and spills pace on it."""
    global _worker_limits
    _worker_limits = NodeLimits.open(node_dir)


def worker_limits() -> NodeLimits:
    """The node limits of this task worker (no limit outside a node's worker)."""
    return _worker_limits


def paced(chunks: Iterator[bytes], kind: str) -> Iterator[bytes]:
    """``chunks`` as they arrive, each booked on this worker's node bucket ``kind``."""
    limits = worker_limits()
    for chunk in chunks:
        limits.pace(kind, len(chunk))
        yield chunk
