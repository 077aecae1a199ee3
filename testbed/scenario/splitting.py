"""How a job's input files are cut into splits: byte ranges aligned to records, decided when
the job is planned (the tasks read them with ``testbed.workloads.splits``).

Line-oriented inputs use Hadoop's rule: a split that does not start at byte 0 skips the
partial line it starts in, and every split reads past its end to finish its last line.
Together the splits cover every line exactly once.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from testbed.scenario.inputs import resolve_inputs


def byte_ranges(paths: list[Path], count: int, align: int = 1) -> list[dict[str, object]]:
    """``count`` ranges over the files (a file's share by its size, one at least, and no more
    than it has ``align``-byte units), each a multiple of ``align`` bytes but a file's last."""
    sizes = [p.stat().st_size for p in paths]
    ranges: list[dict[str, object]] = []
    for path, size, share in zip(paths, sizes, _shares(sizes, count), strict=True):
        units = -(-size // align)
        pieces = max(1, min(share, units))
        bounds = [min(size, units * i // pieces * align) for i in range(pieces + 1)]
        ranges += [
            {"path": str(path.resolve()), "start": start, "end": end}
            for start, end in itertools.pairwise(bounds)
        ]
    return ranges


def _shares(sizes: list[int], count: int) -> list[int]:
    """``count`` (at least one per file) split over the files in proportion to their sizes,
    the largest remainders rounded up."""
    extra = max(count, len(sizes)) - len(sizes)
    exact = [extra * size / (sum(sizes) or 1) for size in sizes]
    shares = [int(value) for value in exact]
    by_remainder = sorted(range(len(sizes)), key=lambda i: shares[i] - exact[i])
    for i in by_remainder[: extra - sum(shares)]:
        shares[i] += 1
    return [1 + share for share in shares]


def line_splits(pattern: str, maps: int | None, split_mb: float) -> list[dict[str, object]]:
    """The ``file`` sources of a job reading text files: ``maps`` splits, by default one
    per ``split_mb`` of input."""
    paths = resolve_inputs(pattern)
    total_mb = sum(p.stat().st_size for p in paths) / 2**20
    count = maps or max(1, round(total_mb / split_mb))
    return [{"file": r} for r in byte_ranges(paths, count)]
