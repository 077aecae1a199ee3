"""A job's ``input``: the files it names, and their fingerprints.

``input`` is a file, a directory (its files, not recursive) or a glob:
``*``, ``?`` and ``[...]`` match within one path component and never a
leading dot; a ``**`` component matches zero or more directories. Below the
glob's literal leading part no symlink to a directory is followed (as with
bash's ``globstar``; symlinks to files are), so a symlink loop cannot repeat or
hang a glob. Each file counts once, by its real path, and a glob gives up with
a clear error past ``MAX_INPUT_FILES`` files or ``MAX_SCANNED`` directory entries.

A fingerprint (size, modification time, SHA-256 of the first MiB) per input
file is recorded in a run directory, so a resumed run can refuse inputs that
changed under it.
"""

from __future__ import annotations

import hashlib
import os
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

MAX_INPUT_FILES = 10_000
"""More files than a job may have map tasks (each file gets at least one split)."""
MAX_SCANNED = 1_000_000
"""Directory entries a glob may look at."""
HEAD_BYTES = 1 << 20
MAGIC = frozenset("*?[")


class InputError(ValueError):
    """An input pattern that cannot be resolved within the bounds; the message says why."""


def has_magic(component: str) -> bool:
    return any(char in MAGIC for char in component)


def absolute_input(pattern: str) -> str:
    """The pattern anchored at the working directory (``~`` expanded), not normalised:
    ``a/../b`` keeps meaning what it meant through symlinks."""
    return os.path.join(os.getcwd(), os.path.expanduser(pattern))


def resolve_inputs(pattern: str) -> list[Path]:
    """The real paths of the files ``pattern`` names, each once, sorted."""
    path = os.path.expanduser(pattern)
    if os.path.isfile(path):
        return [Path(os.path.realpath(path))]
    walk = _Glob(path, ["*"]) if os.path.isdir(path) else _Glob(*_split(path))
    return sorted(Path(p) for p in walk.run())


def _split(path: str) -> tuple[str, list[str]]:
    """The literal leading directory of a glob, and the components after it."""
    parts = path.split("/")
    if parts[-1] == "**":  # a trailing ** matches the files at every depth too
        parts.append("*")
    literal = 0
    while literal < len(parts) - 1 and not has_magic(parts[literal]):
        literal += 1
    root = "/".join(parts[:literal]) or ("/" if path.startswith("/") else ".")
    return root, [part for part in parts[literal:] if part not in ("", ".")]


class _Glob:
    """A bounded, iterative walk of one pattern, component by component."""

    def __init__(self, root: str, parts: list[str]) -> None:
        self.root = root
        self.parts = parts
        self.scanned = 0
        self.found: set[str] = set()

    def run(self) -> set[str]:
        if self.parts and os.path.isdir(self.root):
            self._walk(self.root)
        return self.found

    def _walk(self, base: str) -> None:
        stack, seen = [(base, 0)], set()
        while stack:
            state = stack.pop()
            if state not in seen:
                seen.add(state)
                stack.extend(self._step(*state))

    def _step(self, directory: str, index: int) -> list[tuple[str, int]]:
        """Match ``parts[index]`` in ``directory``: files found are kept, directories to go on in returned."""
        part, last = self.parts[index], index == len(self.parts) - 1
        if part == "**":
            return [(directory, index + 1)] + [
                (entry.path, index) for entry in self._entries(directory) if _real_directory(entry, part)
            ]
        if not has_magic(part):
            target = os.path.join(directory, part)
            if last:
                self._keep(target)
                return []
            return [(target, index + 1)] if os.path.isdir(target) and not os.path.islink(target) else []
        next_steps = []
        for entry in self._entries(directory):
            if not fnmatchcase(entry.name, part) or (entry.name.startswith(".") and not part.startswith(".")):
                continue
            if last:
                self._keep(entry.path)
            elif _real_directory(entry, part):
                next_steps.append((entry.path, index + 1))
        return next_steps

    def _entries(self, directory: str) -> list[os.DirEntry[str]]:
        try:
            with os.scandir(directory) as listing:
                entries = list(listing)
        except OSError:
            return []
        self.scanned += len(entries)
        if self.scanned > MAX_SCANNED:
            raise InputError(
                f"the glob looks at more than {MAX_SCANNED:,} directory entries; "
                "give a narrower glob or a directory of the input files"
            )
        return entries

    def _keep(self, path: str) -> None:
        if os.path.isfile(path):
            self.found.add(os.path.realpath(path))
            if len(self.found) > MAX_INPUT_FILES:
                raise InputError(
                    f"the glob matches more than {MAX_INPUT_FILES:,} files; "
                    "give fewer, larger input files or a narrower glob"
                )


def _real_directory(entry: os.DirEntry[str], part: str) -> bool:
    """A directory a glob may go into: not a symlink, not hidden unless the pattern says so."""
    hidden = entry.name.startswith(".") and not part.startswith(".")
    return not hidden and entry.is_dir(follow_symlinks=False)


# ------------------------------------------------------------------ fingerprints


def fingerprint(path: Path) -> dict[str, Any]:
    """Size, modification time and SHA-256 of the first MiB of a file."""
    with open(path, "rb") as handle:
        stat = os.fstat(handle.fileno())
        head = hashlib.sha256(handle.read(HEAD_BYTES)).hexdigest()
    return {"path": str(path), "size": stat.st_size, "mtime_ns": stat.st_mtime_ns, "head_sha256": head}


def input_fingerprints(files: list[Path]) -> list[dict[str, Any]]:
    return [fingerprint(path) for path in files]


CHANGES = (("size", "its size"), ("mtime_ns", "its modification time"), ("head_sha256", "its content"))


def first_change(recorded: list[dict[str, Any]], files: list[Path]) -> str | None:
    """How ``files`` (a scenario's input files now) differ from the ``recorded`` fingerprints
    (the first difference, naming the file), or None when they are the same."""
    before = {entry["path"]: entry for entry in recorded}
    now = {entry["path"]: entry for entry in input_fingerprints(files)}
    for path in sorted(before.keys() | now.keys()):
        old, new = before.get(path), now.get(path)
        if new is None:
            gone = "no longer matched by the job's input" if os.path.exists(path) else "gone"
            return f"input file {path} is {gone}"
        if old is None:
            return f"input file {path} is new: the job's input did not match it when the run started"
        for field, what in CHANGES:
            if old[field] != new[field]:
                return f"input file {path} changed since the run started ({what} differs)"
    return None
