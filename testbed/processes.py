"""Child processes of a run: the environment they need and how they are signalled."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
from pathlib import Path


def source_root() -> str:
    """The directory holding our packages, so children run the very code the parent runs."""
    return str(Path(__file__).resolve().parents[1])


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    existing = os.environ.get("PYTHONPATH")
    path = f"{source_root()}{os.pathsep}{existing}" if existing else source_root()
    return {**os.environ, **(extra or {}), "PYTHONPATH": path, PARENT_PID_ENV: str(os.getpid())}


def kill_group(pgid: int, signum: int) -> None:
    """Signal a whole process group (a child started with ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


PARENT_PID_ENV = "TESTBED_PARENT_PID"


class RunTerminated(Exception):
    """A run stopped by SIGTERM; everything it started has been stopped (exit status 143)."""


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the process that started it dies.

    Local agents and the embedded broker call this, so a master killed with
    SIGKILL leaves no orphans behind. A no-op elsewhere or when not asked for.
    """
    expected = os.environ.get(PARENT_PID_ENV)
    if not expected or not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != int(expected):  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)


def dying_with_parent(argv: list[str]) -> list[str]:
    """``argv`` run through this module: it asks for ``die_with_parent`` and then execs the
    program (the request survives exec), for children that are not ours to change (Mosquitto)."""
    return [sys.executable, "-m", "testbed.processes", *argv]


if __name__ == "__main__":
    die_with_parent()
    os.execv(sys.argv[1], sys.argv[1:])
