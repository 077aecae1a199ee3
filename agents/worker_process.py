"""Starting a task's worker process through the node's forkserver, and awaiting its outcome,
without blocking the agent's event loop."""

from __future__ import annotations

import asyncio
import logging
import weakref
from pathlib import Path
from typing import Any

from agents.forkserver_socket import forget_unreachable_forkserver
from agents.oom import death_outcome, oom_kill_count

log = logging.getLogger("agent")

WORKER_START_TRIES = 4
WORKER_RESTART_BACKOFF_S = 0.05
"""Pause before the second start, growing 4x per try: a forkserver killed mid-start may still
be exiting (its socket closed, not yet reaped), and a start then is refused again."""
_oom_kills_at_start: weakref.WeakKeyDictionary[Any, int | None] = weakref.WeakKeyDictionary()
"""The cgroup's OOM kill count when each worker was started (``agents.oom``)."""


async def start_worker(process: Any, node_group: Path | None) -> None:
    """Start a worker process through the node's forkserver, off the loop (the first start
    waits for the forkserver to preload the workloads). A forkserver that died (killed, or
    out of memory) fails the start in flight with EOFError or OSError; the next start
    launches a new forkserver, so a start is tried again before the task is failed. So does
    one whose socket was deleted (``agents.forkserver_socket``)."""
    _oom_kills_at_start[process] = oom_kill_count(node=node_group)
    for tries_left in range(WORKER_START_TRIES - 1, -1, -1):
        try:
            await asyncio.to_thread(process.start)
            return
        except (OSError, EOFError) as exc:
            if not tries_left:
                raise
            deleted = forget_unreachable_forkserver() if isinstance(exc, FileNotFoundError) else None
            if deleted is not None:
                log.warning("the task forkserver's socket %s was deleted; starting a new forkserver", deleted)
            else:
                log.warning("the task forkserver failed a worker start (%r); starting it again", exc)
            await asyncio.sleep(WORKER_RESTART_BACKOFF_S * 4 ** (WORKER_START_TRIES - 1 - tries_left))


async def receive_outcome(receiver: Any, process: Any, node_group: Path | None) -> dict[str, Any]:
    """Wait, without blocking the loop, until the worker sends its result or dies."""
    loop = asyncio.get_running_loop()
    readable = loop.create_future()
    loop.add_reader(receiver.fileno(), lambda: readable.done() or readable.set_result(None))
    try:
        await readable
    finally:
        loop.remove_reader(receiver.fileno())
    try:
        outcome = receiver.recv()
    except (EOFError, OSError):
        await asyncio.to_thread(process.join)
        return death_outcome(
            process.exitcode, _oom_kills_at_start.get(process), oom_kill_count(node=node_group)
        )
    finally:
        receiver.close()
    await asyncio.to_thread(process.join)
    return outcome
