"""Where a sweep's cells run: a local pool (``--jobs N``, default the machine's cores) or the
workers of an existing Dask distributed cluster (``--dask ADDRESS``), with a progress bar.

Each cell is a ``testbed run`` child process (``testbed/app/sweep/cells.py``), so a pool of
threads that start them is a pool of processes; at most ``jobs`` cells (on Dask: the cluster's
worker threads) are in flight at once, and those are the ones shown as running. A real-backend
cell runs alone on its host unless ``share_host`` (``--parallel-real``): here no second real
cell is started while one is in flight, and on any host the cell takes the host's real-cell lock.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor
from concurrent.futures import wait as wait_local
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from testbed.app.sweep.cells import CellCommand, run_cell
from testbed.app.sweep.options import Executor
from testbed.app.usage import UsageError


@dataclass
class _Pool:
    """What the driver needs of an executor: submit a cell, wait for one to end, its slots."""

    submit: Callable[[CellCommand], Any]
    wait: Callable[[set[Any]], set[Any]]
    slots: int
    close: Callable[[], None]


def _local_pool(jobs: int) -> _Pool:
    threads = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="sweep-cell")
    return _Pool(
        submit=lambda command: threads.submit(run_cell, command),
        wait=lambda futures: wait_local(futures, return_when=FIRST_COMPLETED).done,
        slots=jobs,
        close=lambda: threads.shutdown(wait=True, cancel_futures=True),
    )


def _dask_pool(address: str) -> _Pool:
    try:
        import distributed
    except ImportError:
        raise UsageError(
            "--dask: needs the distributed package: pip install 'transient-testbed[dask]'"
        ) from None
    try:
        client = distributed.Client(address, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise UsageError(f"--dask {address}: cannot reach the scheduler ({exc}); check the address") from None
    threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
    if threads == 0:
        client.close()
        raise UsageError(f"--dask {address}: the cluster has no workers; start some (dask worker {address})")
    return _Pool(
        submit=lambda command: client.submit(run_cell, command, key=_task_key(command), pure=False),
        wait=lambda futures: set(distributed.wait(list(futures), return_when="FIRST_COMPLETED").done),
        slots=threads,
        close=client.close,
    )


def _task_key(command: CellCommand) -> str:
    """Unique on the cluster: two sweeps with a cell of the same name must not share a result."""
    return f"testbed-cell-{command.name}-{uuid.uuid4().hex[:8]}"


def run_cells(
    commands: list[CellCommand],
    executor: Executor,
    already_done: int,
    console: Console,
) -> dict[str, int]:
    """Run the cells (in their order, at most the executor's slots at once), each one's exit
    status by name; a progress bar over the whole grid (``already_done`` of it resumed)."""
    if not commands:
        return {}
    pool = _dask_pool(executor.dask) if executor.dask else _local_pool(max(1, executor.jobs))
    total = already_done + len(commands)
    statuses: dict[str, int] = {}
    with _progress(console) as progress:
        bar = progress.add_task("cells", total=total, completed=already_done, running=0, failed=0)
        try:
            for command, status, in_flight in _drive(commands, pool, executor.share_host):
                if command is None:
                    progress.update(bar, running=in_flight)
                    continue
                statuses[command.name] = status
                failed = sum(code != 0 for code in statuses.values())
                progress.update(bar, advance=1, failed=failed, running=in_flight)
                if not console.is_terminal:
                    console.print(f"[{already_done + len(statuses)}/{total}] {command.name}: exit {status}")
        finally:
            pool.close()
    return statuses


def _drive(
    commands: list[CellCommand], pool: _Pool, share_host: bool
) -> Iterable[tuple[CellCommand | None, int, int]]:
    """Submit the cells in order while a slot is free (a real cell only when no other real one
    is in flight, unless ``share_host``); yield ``(None, 0, in flight)`` after each round of
    submissions and ``(cell, exit status, in flight)`` as each ends."""
    waiting = list(commands)
    flying: dict[Any, CellCommand] = {}
    while waiting or flying:
        while waiting and len(flying) < pool.slots:
            index = _next_startable(waiting, flying.values(), share_host)
            if index is None:
                break
            command = waiting.pop(index)
            flying[pool.submit(command)] = command
        yield None, 0, len(flying)
        for future in pool.wait(set(flying)):
            command = flying.pop(future)
            yield command, _status(future), len(flying)


def _next_startable(
    waiting: list[CellCommand], flying: Iterable[CellCommand], share_host: bool
) -> int | None:
    if share_host or not any(c.real for c in flying):
        return 0
    return next((i for i, c in enumerate(waiting) if not c.real), None)


def _status(future: Any) -> int:
    """A cell's exit status; a cell whose task itself failed (a worker lost, a worker without the
    project) is status -1: flagged like a crashed run, its directory without a summary."""
    try:
        return int(future.result())
    except Exception:
        return -1


def _progress(console: Console) -> Progress:
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[running]} running, {task.fields[failed]} failed"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
    )
    return Progress(*columns, console=console, disable=not console.is_terminal, refresh_per_second=2)
