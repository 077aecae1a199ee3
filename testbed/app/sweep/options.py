"""Where a command's cells run, as its options say: ``--jobs N``, ``--dask ADDRESS``,
``--parallel-real`` (``testbed sweep``, ``crosscheck``, ``calibrate``); light, for the CLI's
parser (``testbed/app/sweep/executor.py`` runs them)."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass

from testbed.app.usage import UsageError


def machine_cores() -> int:
    """The cores this process may run on (its affinity: a container's or taskset's share)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@dataclass(frozen=True)
class Executor:
    jobs: int = 1
    """Cells at once in a local pool (each a ``testbed run`` child process)."""
    dask: str | None = None
    """A Dask scheduler's address (``tcp://host:8786``): the cells run on its workers instead."""
    share_host: bool = False
    """Real-backend cells may run side by side on a host (``--parallel-real``)."""


SERIAL = Executor()
"""One cell at a time, here: what a caller that names no executor gets."""


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--jobs",
        type=int,
        default=None,
        metavar="N",
        help=f"cells at once in a local process pool (default: this machine's cores, {machine_cores()})",
    )
    parser.add_argument(
        "--dask",
        metavar="ADDRESS",
        help="run the cells as tasks on an existing Dask distributed cluster (tcp://host:8786); its "
        "workers need the project installed and the scenario's files at the same paths",
    )
    parser.add_argument(
        "--parallel-real",
        action="store_true",
        help="let real-backend cells run side by side on a host (by default one at a time: they measure it)",
    )


def executor_of(args: argparse.Namespace) -> Executor:
    """The options' executor; a ``UsageError`` for a bad ``--jobs`` or both options."""
    if args.jobs is not None and args.jobs < 1:
        raise UsageError("--jobs: expected a whole number >= 1")
    if args.jobs is not None and args.dask:
        raise UsageError("--jobs and --dask: choose one (on Dask, as many cells run as it has threads)")
    return Executor(args.jobs or machine_cores(), args.dask, args.parallel_real)
