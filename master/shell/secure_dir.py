"""A run directory only its owner can enter, and secrets written into it safely.

A run directory holds the journal, the outputs, the nodes' block files and
``master.json`` (the API token). It is created 0700, and an existing one given
with ``--out`` is refused when it is not ours or other users may write to it
(they could plant files, or swap it when its parent is writable), then made 0700.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


class RunDirError(OSError):
    """The run directory is not safe to use; the message names it and the fix."""


def _refuse_writable_by_others(path: Path, what: str, sticky_ok: bool) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o022 and not (sticky_ok and mode & stat.S_ISVTX):
        raise RunDirError(
            f"{path}: {what} is writable by other users (mode {mode:04o}); "
            "use a directory only you can write (chmod go-w)"
        )


def secure_run_dir(path: Path) -> Path:
    """Create ``path`` (0700) or check an existing one (ours, not writable by others, in a
    parent others cannot write to unless it is sticky like /tmp), then make it 0700."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        if path.is_symlink() or not path.is_dir():
            raise RunDirError(f"{path}: not a directory; give a directory for the run") from None
    owner = path.stat().st_uid
    if owner != os.geteuid():
        raise RunDirError(f"{path}: the run directory belongs to uid {owner}; use a directory of yours")
    _refuse_writable_by_others(path.parent.resolve(), "its parent", sticky_ok=True)
    _refuse_writable_by_others(path, "the run directory", sticky_ok=False)
    path.chmod(0o700)
    return path


def write_secret_file(path: Path, text: str) -> None:
    """Write ``text`` to a new file only its owner can read. A file already there is ours to
    replace only if we own it (a resumed run's own); it is removed, never written through."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        pass
    else:
        if info.st_uid != os.geteuid() or not stat.S_ISREG(info.st_mode):
            raise RunDirError(f"{path}: planted by someone else (uid {info.st_uid}); remove it and run again")
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
