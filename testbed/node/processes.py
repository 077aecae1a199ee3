"""Child processes of a run: the environment they need and how they are signalled."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import signal
import sys
from pathlib import Path

import testbed


def source_root() -> str:
    """The directory holding our packages, so children run the very code the parent runs."""
    return str(Path(testbed.__file__).resolve().parent.parent)


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without its secrets (``SECRET_ENV``), plus ``extra``."""
    existing = os.environ.get("PYTHONPATH")
    path = f"{source_root()}{os.pathsep}{existing}" if existing else source_root()
    inherited = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    return {**inherited, **(extra or {}), "PYTHONPATH": path, PARENT_PID_ENV: str(os.getpid())}


def kill_group(pgid: int, signum: int) -> None:
    """Signal a whole process group (a child started with ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signum)


PARENT_PID_ENV = "TESTBED_PARENT_PID"


class RunTerminated(Exception):
    """A run stopped by SIGTERM; everything it started has been stopped (exit status 143)."""


class StartupFailed(Exception):
    """The run's initial cluster did not come up: printed as one line, exit status 1."""


def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the process that started it dies.

    Local agents and the embedded broker call this, so a master killed with
    SIGKILL leaves no orphans behind. A no-op elsewhere or when not asked for.
    """
    expected = os.environ.get(PARENT_PID_ENV)
    if expected:
        die_with(int(expected))


def die_with(parent: int) -> None:
    """Ask Linux to SIGKILL this process when ``parent``, the process that started it, dies
    (at once if it is already gone). A no-op off Linux."""
    if not sys.platform.startswith("linux"):
        return
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_pdeathsig = 1
    libc.prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os.kill(os.getpid(), signal.SIGKILL)


def dying_with_parent(argv: list[str]) -> list[str]:
    """``argv`` run through this module: it asks for ``die_with_parent`` and then execs the
    program (the request survives exec), for children that are not ours to change (Mosquitto)."""
    return [sys.executable, "-m", "testbed.node.processes", *argv]


SECRETS_FILE_ENV = "TESTBED_SECRETS_FILE"
SECRET_ENV = (
    "TESTBED_MQTT_USERNAME",
    "TESTBED_MQTT_PASSWORD",
    "TESTBED_RUN_TOKEN",
    "TESTBED_NODE_KEY",
    "TESTBED_AGENT_SECRET",
)
"""Variables that carry secrets: never inherited by a child; ``private_env`` moves them to a file."""


def private_env(secrets: dict[str, str], directory: Path, name: str) -> dict[str, str]:
    """The environment that hands ``secrets`` to a child without showing them in its
    ``/proc/PID/environ``: the path of a new file (0600, created exclusively in
    ``directory``, which should be private) that the child reads and deletes
    (``take_secrets``)."""
    path = directory / f"{name}.secrets"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(secrets, handle)
    return {SECRETS_FILE_ENV: str(path)}


def take_secrets() -> dict[str, str]:
    """This process's secrets: from the file ``TESTBED_SECRETS_FILE`` names (``private_env``'s,
    or one the Docker provider put in a container: deleted once read; a Docker secret of
    compose or Swarm, mounted read-only, stays), else from the environment; removed from
    ``os.environ`` either way, so no child inherits them."""
    found = {name: os.environ.pop(name) for name in SECRET_ENV if name in os.environ}
    path = os.environ.pop(SECRETS_FILE_ENV, None)
    if path:
        with open(path, encoding="utf-8") as handle:
            found.update(json.load(handle))
        try:
            os.unlink(path)
        except OSError as exc:
            if exc.errno not in READ_ONLY:
                raise
    return found


READ_ONLY = (errno.EROFS, errno.EBUSY, errno.EACCES, errno.EPERM)
"""Why a Docker secret cannot be deleted: a read-only file system (Swarm), a bind-mounted
file (compose), a directory only root may write."""


if __name__ == "__main__":
    die_with_parent()
    os.execv(sys.argv[1], sys.argv[1:])
