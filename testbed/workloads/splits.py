"""Reading input splits of user-supplied files (byte ranges aligned to records, cut when
the job is planned by ``testbed.scenario.splitting``).

Line-oriented inputs use Hadoop's rule: a split that does not start at byte 0
skips the partial line it starts in, and every split reads past its end to
finish its last line. Together the splits cover every line exactly once.
"""

from __future__ import annotations

from collections.abc import Iterator


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
