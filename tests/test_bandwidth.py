"""Node bandwidth: one token bucket per node and direction, shared by the agent and its workers."""

from __future__ import annotations

import asyncio
import multiprocessing
import time
from pathlib import Path

import pytest
from aiohttp.test_utils import TestServer

from agents.shuffle import make_app
from testbed.node.bandwidth import NodeLimits, SharedBucket, bind_worker
from testbed.wire.blocks import BlockWriter
from testbed.wire.capabilities import block_cap
from testbed.wire.protocol import BlockRef
from testbed.workloads.base import BlockFetcher


def _reserve_elsewhere(path: str, nbytes: int, out: multiprocessing.Queue) -> None:
    bucket = SharedBucket(Path(path))
    before = time.monotonic()  # the monotonic clock is one for every process of the host
    delay = bucket.reserve(nbytes)
    out.put((before, delay, time.monotonic()))


def test_a_second_process_queues_behind_the_first_on_the_same_bucket(tmp_path: Path) -> None:
    """Booked after this process's 100 s of link, not beside them: the two delays add up to
    200 s of link less the time between the bookings (bounded by clock readings around each
    booking, so a slow process start under load changes nothing)."""
    bucket = SharedBucket.create(tmp_path / "net-out", rate_bytes_s=1e6)
    before_mine = time.monotonic()
    mine = bucket.reserve(100_000_000)
    after_mine = time.monotonic()
    results: multiprocessing.Queue = multiprocessing.get_context("spawn").Queue()
    other = multiprocessing.get_context("spawn").Process(
        target=_reserve_elsewhere, args=(str(bucket.path), 100_000_000, results)
    )
    other.start()
    before_theirs, theirs, after_theirs = results.get(timeout=120)
    other.join()
    burst, rounding = 0.05, 1e-6  # float sums of clock readings near 1e5 s
    assert 100 - 2 * burst - (after_mine - before_mine) - rounding <= mine <= 100 - 2 * burst + rounding
    link_booked = 200 - 2 * burst  # both bookings, from the first one's start
    earliest, latest = link_booked - (after_theirs - before_mine), link_booked - (before_theirs - after_mine)
    assert earliest - rounding <= theirs <= latest + rounding


def test_an_idle_link_allows_only_a_short_burst(tmp_path: Path) -> None:
    bucket = SharedBucket.create(tmp_path / "disk", rate_bytes_s=1e6)
    assert bucket.reserve(40_000) == 0.0  # 40 ms of bytes: within the 50 ms burst
    assert bucket.reserve(1_000_000) > 0.9


def test_a_node_without_limit_files_is_unlimited(tmp_path: Path) -> None:
    limits = NodeLimits.open(tmp_path)
    assert limits.buckets == {}
    assert limits.delay("net-in", 1 << 30) == 0.0


def test_the_agent_makes_the_buckets_its_workers_open(tmp_path: Path) -> None:
    made = NodeLimits.create(tmp_path, network_mbps=80, disk_mb_s=None)
    opened = NodeLimits.open(tmp_path)
    assert sorted(opened.buckets) == ["net-in", "net-out"]
    assert opened.buckets["net-out"].rate_bytes_s == 10e6
    made.close()
    opened.close()


@pytest.mark.e2e
async def test_a_fetch_from_a_node_limited_to_8_mbps_moves_about_1_mb_a_second(tmp_path: Path) -> None:
    """The issue's 100 MB at 80 Mb/s in about 10 s, scaled down: 5 MB at 8 Mb/s in about 5 s."""
    server_dir, client_dir = tmp_path / "server", tmp_path / "client"
    writer = BlockWriter(server_dir / "blocks", "j.s0.t0.a0", 1)
    for _ in range(5):
        writer.write(0, bytes(1_000_000 - 16))
    writer.commit()
    limits = NodeLimits.create(server_dir, network_mbps=8, disk_mb_s=None)
    server = TestServer(make_app(server_dir / "blocks", "t", limits=limits))
    await server.start_server()
    try:
        bind_worker(client_dir)  # the fetching node has no limit of its own
        fetcher = BlockFetcher(client_dir / "blocks", "")
        url, cap = str(server.make_url("")).rstrip("/"), block_cap("t", "GET", "j.s0.t0.a0")
        ref = BlockRef(block="j.s0.t0.a0", partition=0, locations=(url,), caps=(cap,))
        started = time.monotonic()
        received = await asyncio.to_thread(lambda: sum(len(f) for f in fetcher.frames(ref)))
        elapsed = time.monotonic() - started
    finally:
        await server.close()
        limits.close()
    assert received >= 4_900_000
    assert 4.0 < elapsed < 8.0
