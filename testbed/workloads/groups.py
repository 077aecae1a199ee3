"""A budgeted, partitioned buffer of (key, value) records for user workloads (plugins).

The general form of ``pair_spill.PairBuffer``: records are any msgpack values, keys any
msgpack values that sort (str, int, float, bytes, tuples of them; one type per job),
and an optional *combiner* ``combine(key, values) -> value`` folds the values of one
key whenever the buffer is sorted (at a spill and in the final merge), as Hadoop runs
a combiner on each spill.

Every record is round-tripped through msgpack when it is added, so the functions of
a plugin see the same values whether a record was spilled, shuffled or neither (lists
come back as tuples). Memory is estimated per record from its packed size
(``record_bytes``); the buffer spills a run (each partition's key-sorted section back
to back, the same run files as ``PairBuffer``) when the estimate reaches the limit,
and merges runs (k-way, a bounded read buffer per run, extra passes when there are
more runs than the budget reads at once) at the end.
"""

from __future__ import annotations

import heapq
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import msgpack

from testbed.workloads.base import WorkloadError
from testbed.workloads.pair_spill import (
    PairRun,
    final_merge,
    must_spill_remainder,
    read_pair_section,
    reduce_runs,
    write_pair_sections,
)
from testbed.workloads.spill import READ_BYTES, SpillFiles, settle

RECORD_OVERHEAD_BYTES = 150
"""Conservative bytes per buffered record besides its data: the pair tuple (56), the
key's and value's object headers (about 50 each), the list slot (8)."""

Pair = tuple[Any, Any]
Combine = Callable[[Any, list[Any]], Any]


class RecordError(WorkloadError):
    """A key or value that msgpack cannot carry, or keys that do not sort together."""


def record_bytes(packed: bytes) -> int:
    """Estimated memory of one buffered record whose msgpack form is ``packed``: its
    objects hold about twice the packed bytes (str and int headers, tuples)."""
    return RECORD_OVERHEAD_BYTES + 2 * len(packed)


def pack_pair(key: Any, value: Any) -> bytes:
    try:
        return msgpack.packb((key, value))
    except (TypeError, ValueError, OverflowError) as exc:
        raise RecordError(f"msgpack cannot carry the record ({key!r:.60}, {value!r:.60}): {exc}") from None


def sort_pairs(pairs: list[Pair]) -> None:
    try:
        pairs.sort(key=operator.itemgetter(0))
    except TypeError as exc:
        raise RecordError(f"keys that do not sort together (emit keys of one type): {exc}") from None


def merge_pairs(sources: list[Iterator[Pair]]) -> Iterator[Pair]:
    """K-way merge of key-sorted pair streams (keys of different types: ``RecordError``)."""
    merged = heapq.merge(*sources, key=operator.itemgetter(0))
    while True:
        try:
            pair = next(merged)
        except StopIteration:
            return
        except TypeError as exc:
            raise RecordError(f"keys that do not sort together (emit keys of one type): {exc}") from None
        yield pair


def combined(pairs: Iterable[Pair], combine: Combine | None) -> Iterator[Pair]:
    """Key-sorted pairs with the values of each key folded by ``combine`` (None: as they are)."""
    if combine is None:
        yield from pairs
        return
    for key, group in itertools.groupby(pairs, key=operator.itemgetter(0)):
        yield key, combine(key, [value for _, value in group])


@dataclass
class GroupBuffer:
    """Partitioned (key, value) records under a byte limit; spills key-sorted runs when full."""

    partition_of: Callable[[Any], int]
    partitions: int
    limit: int
    files: SpillFiles
    combine: Combine | None = None
    runs: list[PairRun] = field(default_factory=list)
    _pairs: list[list[Pair]] = field(default_factory=list)
    _bytes: int = 0

    def __post_init__(self) -> None:
        self._pairs = [[] for _ in range(self.partitions)]

    @property
    def buffered_bytes(self) -> int:
        return self._bytes

    def add(self, key: Any, value: Any) -> None:
        packed = pack_pair(key, value)
        key, value = msgpack.unpackb(packed, use_list=False)
        self._pairs[self.partition_of(key)].append((key, value))
        self._bytes += record_bytes(packed)
        if self._bytes >= self.limit:
            self.files.note_buffered(self._bytes)
            self._spill()

    def _sections(self) -> list[Iterator[Pair]]:
        """Each partition's buffered pairs, sorted by key and combined."""
        for pairs in self._pairs:
            sort_pairs(pairs)
        return [combined(pairs, self.combine) for pairs in self._pairs]

    def _spill(self) -> None:
        path = self.files.new_path()
        with open(path, "wb") as handle:
            bounds = write_pair_sections(handle, self._sections())
            settle(handle)
        self.files.metrics.spill_bytes += bounds[-1]
        self.files.metrics.spills += 1
        self.runs.append(PairRun(path, bounds))
        self._pairs = [[] for _ in range(self.partitions)]
        self._bytes = 0

    def finish(self) -> Iterator[tuple[int, Iterator[Pair]]]:
        """(partition, key-sorted combined pairs) for every partition in order; what is still
        buffered stays in memory for the final merge when the read buffers fit beside it."""
        self.files.note_buffered(self._bytes)
        buffered = any(self._pairs)
        if must_spill_remainder(len(self.runs), buffered, self.limit - self._bytes):
            self._spill()
            buffered = False
        sections = self._sections()
        read_bytes = READ_BYTES
        if self.runs:
            final_runs, read_bytes = final_merge(buffered, self.limit - self._bytes)
            self.runs = reduce_runs(
                self.runs, self.partitions, final_runs, read_bytes, self.files, self._merged
            )
            self.files.metrics.merge_passes += 1
        for partition, section in enumerate(sections):
            sources = [read_pair_section(run, partition, read_bytes) for run in self.runs]
            yield partition, self._merged([*sources, section]) if sources else section
        for run in self.runs:
            run.path.unlink(missing_ok=True)
        self.runs = []
        self._pairs = [[] for _ in range(self.partitions)]

    def _merged(self, sources: list[Iterator[Pair]]) -> Iterator[Pair]:
        return combined(merge_pairs(sources), self.combine)
