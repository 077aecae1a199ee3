"""Input splits of user-supplied files: byte ranges aligned to records.

Line-oriented inputs use Hadoop's rule: a split that does not start at byte 0
skips the partial line it starts in, and every split reads past its end to
finish its last line. Together the splits cover every line exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from testbed.scenario.inputs import resolve_inputs


def byte_ranges(paths: list[Path], count: int, align: int = 1) -> list[dict[str, object]]:
    """About ``count`` ranges over the files, each a multiple of ``align`` bytes long."""
    sizes = [p.stat().st_size for p in paths]
    total = max(sum(sizes), 1)
    target = max(align, -(-total // max(count, 1)) // align * align)
    ranges: list[dict[str, object]] = []
    for path, size in zip(paths, sizes, strict=True):
        for start in range(0, max(size, 1), target):
            ranges.append({"path": str(path.resolve()), "start": start, "end": min(size, start + target)})
    return ranges


def line_splits(pattern: str, maps: int | None, split_mb: float) -> list[dict[str, object]]:
    """The ``file`` sources of a job reading text files: ``maps`` splits, by default one
    per ``split_mb`` of input."""
    paths = resolve_inputs(pattern)
    total_mb = sum(p.stat().st_size for p in paths) / 2**20
    count = maps or max(1, round(total_mb / split_mb))
    return [{"file": r} for r in byte_ranges(paths, count)]


def read_lines_range(path: str, start: int, end: int, chunk: int = 1 << 20) -> Iterator[bytes]:
    """Chunks of whole lines belonging to the split [start, end) of a file."""
    with open(path, "rb") as handle:
        handle.seek(start)
        if start > 0:
            handle.seek(start - 1)
            if handle.read(1) != b"\n":
                skipped = handle.readline()
                start += len(skipped)
        position = start
        while position < end:
            data = handle.read(min(chunk, end - position))
            if not data:
                return
            position += len(data)
            if not data.endswith(b"\n"):
                data += handle.readline()
                position = handle.tell()
            yield data


def read_records_range(path: str, start: int, end: int, record: int, chunk: int = 1 << 20) -> Iterator[bytes]:
    """Chunks of whole fixed-size records from [start, end) (both multiples of ``record``)."""
    chunk = max(record, chunk // record * record)
    with open(path, "rb") as handle:
        handle.seek(start)
        position = start
        while position < end:
            data = handle.read(min(chunk, end - position))
            if not data:
                return
            position += len(data)
            yield data
