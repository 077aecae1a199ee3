"""A task worker that allocates memory, started as the agent starts one: what a node's
container runs to see the kernel's OOM killer take a worker. It imports the agent alone (a
heavier import would count against the container's memory limit in every process)."""

from __future__ import annotations

from multiprocessing.connection import Connection

from agents.agent import _forkserver
from agents.worker_process import receive_outcome as _receive
from agents.worker_process import start_worker as _start_worker


def allocate(conn: Connection, megabytes: int) -> None:
    """A worker that touches ``megabytes`` of memory (every page written), then reports."""
    hog = b"\x01" * (megabytes << 20)
    conn.send({"state": "succeeded", "bytes": len(hog)})


async def run_allocating_worker(megabytes: int) -> dict:
    """Start ``allocate`` as the agent starts a task's worker and return the outcome it reads."""
    receiver, sender = _forkserver.Pipe(duplex=False)
    process = _forkserver.Process(target=allocate, args=(sender, megabytes), daemon=True)
    await _start_worker(process, None)
    sender.close()
    return await _receive(receiver, process, None)
