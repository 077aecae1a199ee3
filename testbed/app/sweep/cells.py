"""One cell of a sweep as a self-contained command, and the function that runs it.

A ``CellCommand`` holds everything a cell needs as plain data (absolute paths, the
``testbed run`` arguments, the working directory), so that the function ``run_cell`` runs it
the same wherever it is called: in this process's thread pool or on a Dask worker (which
imports this module from its own install of the project; it needs the scenario's files at the
same paths). A cell's outcome is its run directory, never the return value, so every executor
leaves the same directories behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from testbed.node.processes import child_env

REAL_CELL_LOCK = "testbed-real-cell.lock"
"""A file in the host's temporary directory: a real-backend cell holds it while it runs, so that
real cells run one at a time per host (they measure the host) whichever sweep or worker starts them."""


@dataclass(frozen=True)
class CellCommand:
    name: str
    arguments: tuple[str, ...]
    """``testbed run``'s arguments (after ``python -m testbed.app.cli``)."""
    run_dir: str
    cwd: str
    """Where the sweep was started: a scenario's relative paths mean the same on a worker."""
    real: bool
    """A real-backend cell: it takes the host's real-cell lock unless ``share_host``."""
    share_host: bool = False

    @property
    def log_path(self) -> Path:
        run_dir = Path(self.run_dir)
        return run_dir.parent / "logs" / f"{run_dir.name}.log"


def cell_command(
    scenario_path: Path, overrides: list[str], run_dir: Path, name: str, real: bool, share_host: bool
) -> CellCommand:
    arguments = ["run", str(scenario_path.resolve()), "--out", str(run_dir.resolve())]
    for assignment in overrides:
        arguments += ["--set", assignment]
    return CellCommand(name, tuple(arguments), str(run_dir.resolve()), str(Path.cwd()), real, share_host)


def run_cell(command: CellCommand) -> int:
    """Run one unfinished cell from scratch, its exit status: a directory left by an interrupted
    run of it goes first (``testbed run`` wants a new or empty directory); its output goes to
    ``logs/<cell>.log`` beside the cells."""
    shutil.rmtree(command.run_dir, ignore_errors=True)
    log_path = command.log_path
    log_path.parent.mkdir(parents=True, exist_ok=True)
    args = [sys.executable, "-m", "testbed.app.cli", *command.arguments]
    cwd = command.cwd if Path(command.cwd).is_dir() else None
    with _host_lock(command.real and not command.share_host), open(log_path, "wb") as log:
        return subprocess.run(
            args, stdout=log, stderr=subprocess.STDOUT, env=child_env(), cwd=cwd, check=False
        ).returncode


@contextlib.contextmanager
def _host_lock(wanted: bool) -> Iterator[None]:
    """The host's real-cell lock, held until the cell ends (released by the kernel if this
    process dies); nothing when not ``wanted``."""
    if not wanted:
        yield
        return
    with open(Path(tempfile.gettempdir()) / REAL_CELL_LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
