"""The agent's CPU seconds per MB of a block copy (sent and received) and of a block served.

``python -m agents.copy_cpu [--mb 4] [--repeats 8]`` runs the real data plane between two
processes on this host: a receiving agent's HTTP app (``agents.shuffle.make_app``: staging,
CRC check, fsync and commit) in a child process, and this process pushing one stored block
to it with ``agents.push.push_block`` (reading its segments, the upload), then fetching a
partition of it back (the child serving it). Each side's CPU is its process's user + system
seconds around the transfers (``/proc/<pid>/stat`` for the child), less an idle baseline of
the same length; printed as JSON, per MB, with the pushes' wall seconds per MB (one after
another, unpaced: the data plane's own speed, fsync included). ``--receiver-cgroup DIR``
puts the receiving agent in that CPU control group first (a v1 ``cpu`` group or a v2 group,
made by the caller with the quota to try: how a node's quota stretches a copy).
``testbed calibrate`` runs it for the simulator's ``copy_*_cpu_s_per_mb`` defaults
(docs/simulation.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web

from agents.push import push_block
from agents.shuffle import make_app
from testbed.wire.blocks import TOKEN_HEADER, BlockWriter
from testbed.wire.capabilities import block_cap

KEY = "copy-cpu-benchmark-key"
MB = 2**20
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_of(pid: int) -> float:
    """User + system CPU seconds of a process (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _write_block(directory: Path, block: str, nbytes: int) -> None:
    writer = BlockWriter(directory, block, 1)
    frame = os.urandom(64 * 1024)
    for _ in range(max(1, nbytes // len(frame))):
        writer.write(0, frame)
    writer.commit()


def _serve(directory: Path, port: int) -> None:
    web.run_app(make_app(directory, KEY), host="127.0.0.1", port=port, print=None)


async def _wait_up(session: aiohttp.ClientSession, url: str) -> None:
    for _ in range(200):
        try:
            async with session.get(f"{url}/health") as r:
                if r.status == 200:
                    return
        except aiohttp.ClientError:
            await asyncio.sleep(0.05)
    raise RuntimeError("the receiving agent did not come up")


async def measure(mb: float, repeats: int, receiver_cgroup: Path | None = None) -> dict[str, float]:
    """CPU seconds per MB: ``send`` (this process's push), ``receive`` and ``serve`` (the child's)."""
    with tempfile.TemporaryDirectory(prefix="copy-cpu-") as tmp:
        sender_dir, receiver_dir = Path(tmp, "sender"), Path(tmp, "receiver")
        receiver_dir.mkdir()
        blocks = [f"b{i}" for i in range(repeats)]
        for block in blocks:
            _write_block(sender_dir, block, int(mb * MB))
        nbytes = sum((sender_dir / f"{b}.data").stat().st_size for b in blocks)
        port = _free_port()
        child = subprocess.Popen(
            [sys.executable, "-m", "agents.copy_cpu", "--serve", str(receiver_dir), "--port", str(port)]
        )
        try:
            if receiver_cgroup is not None:
                (receiver_cgroup / "cgroup.procs").write_text(str(child.pid))
            url = f"http://127.0.0.1:{port}"
            async with aiohttp.ClientSession() as session:
                await _wait_up(session, url)
                idle_s = 0.5
                mine, theirs, t0 = time.process_time(), _cpu_of(child.pid), time.monotonic()
                await asyncio.sleep(idle_s)
                idle_mine = (time.process_time() - mine) / idle_s
                idle_theirs = (_cpu_of(child.pid) - theirs) / idle_s
                mine, theirs, t0 = time.process_time(), _cpu_of(child.pid), time.monotonic()
                for block in blocks:
                    await push_block(session, sender_dir, block, url, [0], block_cap(KEY, "PUT", block))
                pushed_s = time.monotonic() - t0
                send = time.process_time() - mine - idle_mine * pushed_s
                receive = _cpu_of(child.pid) - theirs - idle_theirs * pushed_s
                theirs, t0 = _cpu_of(child.pid), time.monotonic()
                for block in blocks:
                    headers = {TOKEN_HEADER: block_cap(KEY, "GET", block)}
                    async with session.get(f"{url}/blocks/{block}/0", headers=headers) as r:
                        async for _ in r.content.iter_chunked(1 << 20):
                            pass
                serve = _cpu_of(child.pid) - theirs - idle_theirs * (time.monotonic() - t0)
        finally:
            child.terminate()
            child.wait()
    total_mb = nbytes / MB
    return {
        "copy_send_cpu_s_per_mb": round(max(0.0, send) / total_mb, 5),
        "copy_receive_cpu_s_per_mb": round(max(0.0, receive) / total_mb, 5),
        "serve_cpu_s_per_mb": round(max(0.0, serve) / total_mb, 5),
        "push_wall_s_per_mb": round(pushed_s / total_mb, 5),
        "mb": round(total_mb, 2),
        "copies": repeats,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.copy_cpu", description=__doc__)
    parser.add_argument("--mb", type=float, default=4.0, help="size of each copied block")
    parser.add_argument("--repeats", type=int, default=8, help="copies (and fetches) measured")
    parser.add_argument("--receiver-cgroup", type=Path, help="a CPU control group for the receiver")
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        _serve(args.serve, args.port)
        return 0
    print(json.dumps(asyncio.run(measure(args.mb, args.repeats, args.receiver_cgroup))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
