"""How a ``testbed`` command ends: its exit statuses, the one-line ``UsageError`` (status 2), and
the ``--out`` directory a command of many runs writes into."""

from __future__ import annotations

import os
from pathlib import Path

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
"""128 + the signal's number, as a shell reports a process that SIGINT or SIGTERM ended: the
run was stopped cleanly, but did not finish (scripts can tell it from a failed run, 1)."""


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 2."""


def sweep_dir(out: Path, command: str) -> Path:
    """``out`` created and writable, else a ``UsageError`` naming ``command``'s ``--out``."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"testbed {command} --out: cannot create the directory: {exc}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise UsageError(f"testbed {command} --out: cannot write into {out}; choose another directory")
    return out
