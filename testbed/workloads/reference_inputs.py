"""A job's input files and their contents, for the output check only.

The check must not share the code it checks (``testbed.scenario.inputs`` lists a job's
files, ``testbed.workloads.splits`` reads them for the tasks), so this module
does both its own way, with the same documented rules: ``os.walk``, which
follows no symlink to a directory, lists every file below the pattern's literal
leading directory; each path is matched against the pattern component by
component (``**`` = zero or more directories; no wildcard matches a leading
dot); files are kept by real path in a set; files are read whole, in chunks of
whole lines or records.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
from collections.abc import Iterator
from fnmatch import fnmatchcase
from pathlib import Path

WILDCARD = re.compile(r"[*?\[]")
LINES_PER_CHUNK = 65_536


def reference_files(pattern: str) -> list[Path]:
    """The real paths of the files ``pattern`` names: a file, a directory's files, or a glob."""
    path = os.path.expanduser(pattern)
    if os.path.isfile(path):
        return [Path(os.path.realpath(path))]
    if os.path.isdir(path):
        names = [n for n in os.listdir(path) if not n.startswith(".")]
        return sorted({Path(os.path.realpath(os.path.join(path, n))) for n in names if _is_file(path, n)})
    components = path.split("/")
    if components[-1] == "**":
        components.append("*")
    first_wild = next((i for i, c in enumerate(components) if WILDCARD.search(c)), len(components) - 1)
    top = "/".join(components[:first_wild]) or ("/" if path.startswith("/") else ".")
    pattern_parts = tuple(c for c in components[first_wild:] if c not in ("", "."))
    found: set[Path] = set()
    for directory, _, files in os.walk(top, followlinks=False):
        below = os.path.relpath(directory, top)
        prefix = () if below == "." else tuple(below.split(os.sep))
        for name in files:
            if _matches(pattern_parts, (*prefix, name)) and _is_file(directory, name):
                found.add(Path(os.path.realpath(os.path.join(directory, name))))
    return sorted(found)


def _is_file(directory: str, name: str) -> bool:
    return os.path.isfile(os.path.join(directory, name))


@functools.lru_cache(maxsize=65_536)
def _matches(pattern: tuple[str, ...], names: tuple[str, ...]) -> bool:
    if not pattern:
        return not names
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        deeper = len(names) > 1 and not names[0].startswith(".") and _matches(pattern, names[1:])
        return _matches(rest, names) or deeper
    return bool(names) and _name_matches(head, names[0]) and _matches(rest, names[1:])


def _name_matches(part: str, name: str) -> bool:
    return fnmatchcase(name, part) and (part.startswith(".") or not name.startswith("."))


def line_chunks(path: Path) -> Iterator[bytes]:
    """A file in pieces of whole lines (the last line may lack its newline)."""
    with open(path, "rb") as handle:
        while lines := list(itertools.islice(handle, LINES_PER_CHUNK)):
            yield b"".join(lines)


def record_chunks(path: Path, record: int, records_per_chunk: int = 10_000) -> Iterator[bytes]:
    """A file in pieces of whole fixed-size records; a torn last record raises ValueError."""
    with open(path, "rb") as handle:
        while data := handle.read(record * records_per_chunk):
            if len(data) % record:
                raise ValueError(f"{path}: its size is not a whole number of {record}-byte records")
            yield data
