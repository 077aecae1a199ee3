"""Data-plane throughput: one shuffle block fetched between two processes over loopback.

Our figure: an agent's shuffle server (aiohttp, agents/shuffle.py) in its own
process serves a block of SIZE bytes; the reducer-side BlockFetcher (the code
tasks use) streams it, parsing frames and checking the CRC. Peer, in the same
run: raw loopback TCP, a server process ``sendfile``-ing the same data file to
a client that reads and discards it.

    python benchmarks/shuffle.py [--mb 1024]
"""

from __future__ import annotations

import argparse
import multiprocessing
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from testbed.blocks import BlockWriter, segment
from testbed.protocol import BlockRef
from testbed.workloads.base import BlockFetcher

TOKEN = "bench-token"
FRAME = 1 << 20


def write_block(directory: Path, megabytes: int) -> None:
    payload = bytes(range(256)) * (FRAME // 256)
    writer = BlockWriter(directory, "bench.s0.t0.a0", 1)
    for _ in range(megabytes):
        writer.write(0, payload)
    writer.commit()


def serve_blocks(directory: str, port: int) -> None:
    from aiohttp import web

    from agents.shuffle import make_app

    web.run_app(make_app(Path(directory), TOKEN), host="127.0.0.1", port=port, print=None)


def serve_raw(path: str, offset: int, length: int, port: int) -> None:
    """Send the data to the first connection that asks for it with one byte (probes ask nothing)."""
    with socket.create_server(("127.0.0.1", port)) as server:
        while True:
            conn, _ = server.accept()
            with conn:
                if conn.recv(1) == b"G":
                    with open(path, "rb") as handle:
                        conn.sendfile(handle, offset, length)
                    return


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_listening(port: int) -> None:
    for _ in range(500):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return
        except OSError:
            time.sleep(0.02)
    raise TimeoutError(port)


def fetch_ours(directory: Path, port: int) -> tuple[float, int]:
    fetcher = BlockFetcher(directory / "elsewhere", own_url="", token=TOKEN)
    ref = BlockRef(block="bench.s0.t0.a0", partition=0, locations=(f"http://127.0.0.1:{port}",))
    start = time.perf_counter()
    received = sum(len(frame) for frame in fetcher.frames(ref))
    return time.perf_counter() - start, received


def fetch_raw(port: int, length: int) -> tuple[float, int]:
    start = time.perf_counter()
    received = 0
    with socket.create_connection(("127.0.0.1", port)) as conn:
        conn.sendall(b"G")
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        write_block(directory, args.mb)
        seg = segment(directory, "bench.s0.t0.a0", 0)
        assert seg is not None
        port = free_port()
        server = multiprocessing.Process(target=serve_blocks, args=(str(directory), port), daemon=True)
        server.start()
        wait_listening(port)
        ours_s, ours_bytes = fetch_ours(directory, port)
        server.terminate()
        raw_port = free_port()
        raw = multiprocessing.Process(
            target=serve_raw, args=(str(seg.path), seg.offset, seg.length, raw_port)
        )
        raw.start()
        wait_listening(raw_port)  # the probe is accepted as the one connection: serve again
        raw.join()
        raw = multiprocessing.Process(
            target=serve_raw, args=(str(seg.path), seg.offset, seg.length, raw_port)
        )
        raw.start()
        time.sleep(0.2)
        raw_s, raw_bytes = fetch_raw(raw_port, seg.length)
        raw.join()
    ours = ours_bytes / ours_s / 2**20
    peer = raw_bytes / raw_s / 2**20
    print(
        f"testbed data plane (aiohttp + frames + CRC) {ours:8.0f} MB/s  ({ours_bytes / 2**20:.0f} MB payload)"
    )
    print(f"peer: raw loopback TCP (sendfile)          {peer:8.0f} MB/s  ({raw_bytes / 2**20:.0f} MB)")
    print(f"ratio ours / raw loopback: {ours / peer:.2f}")


if __name__ == "__main__":
    main()
