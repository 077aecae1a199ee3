"""Data-plane throughput: one shuffle block fetched between two processes over loopback.

Our figure: an agent's shuffle server (aiohttp, agents/shuffle.py) in its own
process serves a block of SIZE bytes; the reducer-side BlockFetcher (the code
tasks use) streams it, parsing frames and checking the CRC. Peer, in the same
run: raw loopback TCP, a server process ``sendfile``-ing the same data file to
a client that reads and discards it.

    python benchmarks/shuffle.py [--mb 1024] [--repeat 5]
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testbed.wire.blocks import BlockWriter, segment
from testbed.wire.capabilities import block_cap
from testbed.wire.protocol import BlockRef
from testbed.workloads.base import BlockFetcher

TOKEN = "bench-token"
FRAME = 1 << 20


def write_block(directory: Path, megabytes: int) -> None:
    payload = bytes(range(256)) * (FRAME // 256)
    writer = BlockWriter(directory, "bench.s0.t0.a0", 1)
    for _ in range(megabytes):
        writer.write(0, payload)
    writer.commit()


def serve_blocks(directory: str, server: socket.socket) -> None:
    from aiohttp import web

    from agents.shuffle import make_app

    web.run_app(make_app(Path(directory), TOKEN), sock=server, print=None)


def serve_raw(path: str, offset: int, length: int, server: socket.socket) -> None:
    """Send the data to every connection, one after the other, until terminated."""
    with server, open(path, "rb") as handle:
        while True:
            conn, _ = server.accept()
            with conn:
                conn.sendfile(handle, offset, length)


def start_server(target: Callable[..., None], *args: object) -> tuple[multiprocessing.Process, int]:
    """A server process on a loopback port that is listening before the process starts: no
    readiness probe to race with (a probe of a port nobody listens on can even connect to itself)."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        process = multiprocessing.get_context("fork").Process(
            target=target, args=(*args, server), daemon=True
        )
        process.start()
        return process, server.getsockname()[1]


def fetch_ours(directory: Path, port: int) -> tuple[float, int]:
    fetcher = BlockFetcher(directory / "elsewhere", own_url="")
    block = "bench.s0.t0.a0"
    caps = (block_cap(TOKEN, "GET", block),)
    ref = BlockRef(block=block, partition=0, locations=(f"http://127.0.0.1:{port}",), caps=caps)
    start = time.perf_counter()
    received = sum(len(frame) for frame in fetcher.frames(ref))
    return time.perf_counter() - start, received


def fetch_raw(port: int, length: int) -> tuple[float, int]:
    start = time.perf_counter()
    received = 0
    with socket.create_connection(("127.0.0.1", port)) as conn:
        buffer = bytearray(FRAME)
        while received < length:
            n = conn.recv_into(buffer)
            if not n:
                break
            received += n
    return time.perf_counter() - start, received


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5, help="fetches of each kind (median reported)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write_block(directory, args.mb)
        seg = segment(directory, "bench.s0.t0.a0", 0)
        assert seg is not None
        server, port = start_server(serve_blocks, str(directory))
        raw, raw_port = start_server(serve_raw, str(seg.path), seg.offset, seg.length)
        ours, peer = [], []
        for _ in range(args.repeat):  # alternated, so both see the same machine
            ours.append(rate(*fetch_ours(directory, port)))
            peer.append(rate(*fetch_raw(raw_port, seg.length)))
        server.terminate()
        raw.terminate()
    ours_mb_s, peer_mb_s = statistics.median(ours), statistics.median(peer)
    fetches = f"median of {args.repeat} fetches of {args.mb} MB"
    print(f"testbed data plane (aiohttp + frames + CRC) {ours_mb_s:8.0f} MB/s  ({fetches})")
    print(f"peer: raw loopback TCP (sendfile)          {peer_mb_s:8.0f} MB/s  (same)")
    print(f"ratio ours / raw loopback: {ours_mb_s / peer_mb_s:.2f}")


def rate(seconds: float, received: int) -> float:
    return received / seconds / 2**20


if __name__ == "__main__":
    main()
