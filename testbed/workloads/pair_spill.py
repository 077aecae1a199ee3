"""``key -> count`` pairs spilled under a task's budget: ``PairBuffer`` (wordcount) and the
pair runs that ``groups.GroupBuffer`` shares, on ``spill``'s merge plan, passes and spill files
(the external merge sort is described there)."""

from __future__ import annotations

import heapq
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import msgpack

from testbed.workloads.spill import (
    MIN_READ_BYTES,
    READ_BYTES,
    SORT_FACTOR,
    SpillFiles,
    fan_in,
    run_passes,
    settle,
)

PAIR_ENTRY_BYTES = 120
"""Conservative bytes per dict entry besides the key's characters: a str header
(49 bytes on CPython 3.11), a boxed int (28-32), the dict's index and entry
slots at its worst load factor (~40)."""

PAIRS_PER_FRAME = 512


def pair_bytes(key: str) -> int:
    return PAIR_ENTRY_BYTES + len(key) * (1 if key.isascii() else 4)


@dataclass
class PairRun:
    path: Path
    bounds: list[int]  # byte offsets per partition plus the end


@dataclass
class PairBuffer:
    """``key -> count`` pairs combined by summing, partitioned, spilled when over the limit."""

    partition_of: Callable[[str], int]
    partitions: int
    limit: int
    files: SpillFiles
    runs: list[PairRun] = field(default_factory=list)
    _counts: dict[str, int] = field(default_factory=dict)
    _bytes: int = 0

    @property
    def buffered_bytes(self) -> int:
        return self._bytes

    def add_counts(self, counts: Iterable[tuple[str, int]]) -> None:
        """Combine pairs into the buffer, spilling whenever it reaches the limit."""
        buffer = self._counts
        for key, count in counts:
            old = buffer.get(key)
            if old is None:
                buffer[key] = count
                self._bytes += pair_bytes(key)
                if self._bytes >= self.limit:
                    self.files.note_buffered(self._bytes)
                    self._spill()
                    buffer = self._counts
            else:
                buffer[key] = old + count
        self.files.note_buffered(self._bytes)

    def _grouped(self) -> list[Iterator[tuple[str, int]]]:
        """Sorted pairs per partition. Only the keys are grouped and sorted (one pointer
        per entry); the pairs are made as they are consumed."""
        groups: list[list[str]] = [[] for _ in range(self.partitions)]
        partition_of = self.partition_of
        for key in self._counts:
            groups[partition_of(key)].append(key)
        for group in groups:
            group.sort()
        counts = self._counts
        return [((key, counts[key]) for key in group) for group in groups]

    def _spill(self) -> None:
        path = self.files.new_path()
        with open(path, "wb") as handle:
            bounds = write_pair_sections(handle, self._grouped())
            settle(handle)
        self.files.metrics.spill_bytes += bounds[-1]
        self.files.metrics.spills += 1
        self.runs.append(PairRun(path, bounds))
        self._counts = {}
        self._bytes = 0

    def finish(self) -> Iterator[tuple[int, Iterator[tuple[str, int]]]]:
        """(partition, word-sorted combined pairs) for every partition in order; what is
        still buffered stays in memory for the final merge when the read buffers fit beside it."""
        if must_spill_remainder(len(self.runs), bool(self._counts), self.limit - self._bytes):
            self._spill()
        groups = self._grouped()
        read_bytes = READ_BYTES
        if self.runs:
            final_runs, read_bytes = final_merge(bool(self._counts), self.limit - self._bytes)
            self.runs = reduce_runs(
                self.runs, self.partitions, final_runs, read_bytes, self.files, _sum_sorted
            )
            self.files.metrics.merge_passes += 1
        self.files.sorted(1, 1)
        for partition, group in enumerate(groups):
            sources = [read_pair_section(run, partition, read_bytes) for run in self.runs]
            yield partition, _sum_sorted([*sources, group]) if sources else group
        for run in self.runs:
            run.path.unlink(missing_ok=True)
        self.runs = []
        self._counts = {}


PairMerge = Callable[[list[Iterator[tuple]]], Iterator[tuple]]
"""Folds key-sorted pair streams into one key-sorted stream."""


def must_spill_remainder(runs: int, buffered: bool, free_bytes: int) -> bool:
    """Whether the still-buffered pairs go to disk before the final merge: its read buffers
    (``READ_BYTES`` twice per source) do not fit beside them."""
    return runs > 0 and buffered and free_bytes < 2 * READ_BYTES * min(SORT_FACTOR, runs + 1)


def final_merge(buffered: bool, free_bytes: int) -> tuple[int, int]:
    """(runs the final merge reads at once, besides the buffered pairs; its read buffer per run)."""
    factor = fan_in(free_bytes, 2)
    final_runs = max(2, factor - 1 if buffered else factor)
    return final_runs, max(MIN_READ_BYTES, min(READ_BYTES, free_bytes // (2 * factor)))


def reduce_runs(
    runs: list[PairRun],
    partitions: int,
    final_runs: int,
    read_bytes: int,
    files: SpillFiles,
    merge: PairMerge,
) -> list[PairRun]:
    """Hadoop's merge passes (``run_passes``) over pair runs until ``final_runs`` are left
    (``merge`` folds key-sorted streams into one)."""
    return run_passes(
        runs,
        final_runs,
        lambda run: run.bounds[-1],
        lambda group: _merge_group(group, partitions, read_bytes, files, merge),
        files.sorted,
    )


def _merge_group(
    group: list[PairRun], partitions: int, read_bytes: int, files: SpillFiles, merge: PairMerge
) -> PairRun:
    path = files.new_path()
    with open(path, "wb") as handle:
        sections = (
            merge([read_pair_section(run, p, read_bytes) for run in group]) for p in range(partitions)
        )
        bounds = write_pair_sections(handle, sections)
        settle(handle)
    for run in group:
        run.path.unlink(missing_ok=True)
    files.metrics.spill_bytes += bounds[-1]
    files.metrics.merge_passes += 1
    return PairRun(path, bounds)


def write_pair_sections(handle, sections: Iterable[Iterator[tuple[str, int]]]) -> list[int]:
    bounds = [0]
    for pairs in sections:
        while frame := list(itertools.islice(pairs, PAIRS_PER_FRAME)):
            handle.write(msgpack.packb(frame))
        bounds.append(handle.tell())
    return bounds


def read_pair_section(run: PairRun, partition: int, read_bytes: int = READ_BYTES) -> Iterator[tuple]:
    start, end = run.bounds[partition], run.bounds[partition + 1]
    unpacker = msgpack.Unpacker(use_list=False)
    with open(run.path, "rb") as handle:
        handle.seek(start)
        left = end - start
        while left > 0:
            data = handle.read(min(read_bytes, left))
            if not data:
                raise OSError(f"spill run {run.path} is shorter than its index")
            left -= len(data)
            unpacker.feed(data)
            for frame in unpacker:
                yield from frame


def _sum_sorted(sources: list[Iterator[tuple[str, int]]]) -> Iterator[tuple[str, int]]:
    """Merge key-sorted pair streams, summing the counts of equal keys."""
    merged = heapq.merge(*sources, key=operator.itemgetter(0))
    for key, group in itertools.groupby(merged, key=operator.itemgetter(0)):
        yield key, sum(count for _, count in group)
