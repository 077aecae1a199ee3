"""Isolation of one node: its CPU quota and its network bucket, measured.

CPU: the same CPU-bound work (a Python loop burning ``--cpu-s`` seconds of CPU) in a
node cgroup limited to 0.25, 0.5 and 1 core (ours), and in no cgroup (peer, the same
run); wall time, and the ratio to the 1-core run (a 0.25-core node should take ~4x).
A lone task on a 2-cpu, 2-slot node at ``--dilation`` d: in its slot's group (ours, one
core's share: d x its CPU seconds) and under the node's quota alone (peer, as before the
per-slot groups: 2 cores' share, d / 2 x).
Network: a 10 MB block fetched from an agent's shuffle server limited to 8 Mb/s (ours,
~10 s expected) and from an unlimited one (peer), through the task workers' fetcher.

    python benchmarks/fidelity_isolation.py [--cpu-s 1.0] [--block-mb 10] [--mbps 8]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from aiohttp.test_utils import TestServer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agents.shuffle import make_app
from testbed.node.bandwidth import UNLIMITED, NodeLimits, bind_worker
from testbed.node.cgroups import agent_group, detect, join, slot_group
from testbed.wire.blocks import BlockWriter
from testbed.wire.capabilities import block_cap
from testbed.wire.protocol import BlockRef
from testbed.workloads.base import BlockFetcher

BUSY = "import time\nwhile time.process_time() < {cpu_s}: pass\n"


def burn(cpu_s: float, group: Path | None) -> float:
    """Wall seconds a process (in ``group``, if given) takes to burn ``cpu_s`` of CPU."""
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", BUSY.format(cpu_s=cpu_s)],
        check=True,
        preexec_fn=(lambda: join(group, os.getpid())) if group is not None else None,
    )
    return time.monotonic() - started


def cpu_bench(cpu_s: float) -> None:
    cgroups = detect()
    run = f"bench-{os.getpid()}"
    walls: dict[str, float] = {}
    try:
        for cores in (1.0, 0.5, 0.25):
            group = cgroups.create(run, f"c{cores:g}", cores, 1)
            walls[f"{cores:g} core"] = burn(cpu_s, slot_group(group, 0))
            stats = cgroups.stats(group)
            print(
                f"ours: {cpu_s:g} s of CPU at {cores:g} core: {walls[f'{cores:g} core']:.2f} s wall, "
                f"{stats.throttled_ratio:.0%} of {stats.periods} periods throttled",
                flush=True,
            )
            while not cgroups.remove(group):
                time.sleep(0.05)
    finally:
        cgroups.remove_run(run)
    peer = burn(cpu_s, None)
    print(f"peer: {cpu_s:g} s of CPU in no cgroup: {peer:.2f} s wall")
    print(f"ratio 0.25 core / 1 core: {walls['0.25 core'] / walls['1 core']:.2f}x (4x on a quiet host)")


def lone_task_bench(cpu_s: float, dilation: float) -> None:
    """One CPU-bound task alone on a 2-cpu, 2-slot node: in its slot, then under the node's quota only."""
    cgroups = replace(detect(), core=1 / dilation)
    run = f"bench-{os.getpid()}"
    try:
        node = cgroups.create(run, "reserved-0", 2 / dilation, 2)
        ours, peer = burn(cpu_s, slot_group(node, 0)), burn(cpu_s, agent_group(node))
        while not cgroups.remove(node):
            time.sleep(0.05)
    finally:
        cgroups.remove_run(run)
    print(
        f"lone task, 2-cpu 2-slot node, dilation {dilation:g}: {cpu_s:g} s of CPU in its slot, {ours:.2f} s "
        f"(expected {cpu_s * dilation:.2f}: one core), under the node's quota only {peer:.2f} s "
        f"(expected {cpu_s * dilation / 2:.2f}: two cores)"
    )


async def fetch_seconds(block_mb: int, limits: NodeLimits, work: Path) -> float:
    blocks = work / "server" / "blocks"
    writer = BlockWriter(blocks, "bench.s0.t0.a0", 1)
    for _ in range(block_mb):
        writer.write(0, os.urandom(1_000_000 - 16))
    writer.commit()
    server = TestServer(make_app(blocks, "t", limits=limits))
    await server.start_server()
    try:
        bind_worker(work / "client")
        fetcher = BlockFetcher(work / "client" / "blocks")
        cap = block_cap("t", "GET", "bench.s0.t0.a0")
        location = str(server.make_url("")).rstrip("/")
        ref = BlockRef(block="bench.s0.t0.a0", partition=0, locations=(location,), caps=(cap,))
        started = time.monotonic()
        await asyncio.to_thread(lambda: sum(len(f) for f in fetcher.frames(ref)))
        return time.monotonic() - started
    finally:
        await server.close()


async def network_bench(block_mb: int, mbps: float) -> None:
    with tempfile.TemporaryDirectory() as ours_dir, tempfile.TemporaryDirectory() as peer_dir:
        limits = NodeLimits.create(Path(ours_dir) / "server", network_mbps=mbps, disk_mb_s=None)
        ours = await fetch_seconds(block_mb, limits, Path(ours_dir))
        peer = await fetch_seconds(block_mb, UNLIMITED, Path(peer_dir))
    expected = block_mb * 8 / mbps
    print(f"ours: {block_mb} MB from a node at {mbps:g} Mb/s: {ours:.2f} s (expected {expected:.1f} s)")
    print(f"peer: {block_mb} MB from an unlimited node: {peer:.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu-s", type=float, default=1.0)
    parser.add_argument("--block-mb", type=int, default=10)
    parser.add_argument("--mbps", type=float, default=8.0)
    parser.add_argument("--dilation", type=float, default=4.0, help="of the lone-task cell")
    args = parser.parse_args()
    print(f"load average: {' '.join(Path('/proc/loadavg').read_text().split()[:3])}")
    cpu_bench(args.cpu_s)
    lone_task_bench(args.cpu_s, args.dilation)
    asyncio.run(network_bench(args.block_mb, args.mbps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
