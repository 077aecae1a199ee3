"""Buffers that obey a task's memory budget by spilling sorted runs to disk.

Two engines implement the external merge sort of MapReduce-style shuffles:

- ``ArrayBuffer`` holds numpy record arrays (sort records, PageRank
  contributions). Its memory is the arrays' ``nbytes``, counted exactly.
- ``PairBuffer`` (``pair_spill.py``, on this module's merge plan and spill files)
  holds ``key -> count`` pairs in a dict, combining on insert (wordcount). Its
  memory is estimated conservatively per entry from CPython's object sizes
  (see ``pair_spill.PAIR_ENTRY_BYTES``).

Both are partitioned: every record belongs to one output partition. When the
buffer is full it is sorted by (partition, key), combined when the workload
has a combiner, and written as one *run*: a file holding each partition's
sorted section back to back, plus the section offsets kept in memory. At the
end the runs and what is still buffered are merged partition by partition
(k-way, streaming, a bounded read buffer per run), as Hadoop's reducer does:

- What is still buffered stays in memory for the final merge when the merge's
  read buffers fit beside it; otherwise it is spilled as one more run (Hadoop
  spills the in-memory segments over its limit before the final merge).
- The final merge reads at most ``SORT_FACTOR`` sources at once (Hadoop's
  ``mapreduce.task.io.sort.factor``, 10 by default), fewer only when the budget
  cannot hold that many read buffers. With more runs than that, intermediate
  *merge passes* first merge the smallest runs, as Hadoop's ``Merger`` plans
  them (``merge_plan``): the first takes just enough runs that every later one
  takes ``SORT_FACTOR``, and they stop as soon as the final merge can read every
  run. Only the runs merged are rewritten, not all of them each round.
- Merging sorts the concatenation of sorted pieces with a sort that finds the
  pieces (``ArrayKind.merge_order``, a stable timsort: O(n log k)), not a
  quicksort that would sort them again from scratch.

The final merge counts as a pass too.

Every spill file lives in the task's scratch directory, is deleted as soon as
it is merged, and the scratch directory goes when the task ends. Counters go
to ``TaskMetrics``: ``spill_bytes`` (bytes written to spill files, including
intermediate merge passes), ``spills``, ``merge_passes`` and
``peak_buffered_bytes``.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

import numpy as np

from testbed.node.bandwidth import worker_limits
from testbed.wire.protocol import TaskMetrics
from testbed.workloads.progress import SORT, Progress

SORT_FACTOR = 10
"""Most sources one merge reads at once: Hadoop's ``mapreduce.task.io.sort.factor`` (default 10)."""
READ_BYTES = 64 * 1024
"""Read buffer per source wanted for the final merge (a typical ``io.file.buffer.size``):
the buffered records stay in memory for the final merge only when these fit beside them."""
Run = TypeVar("Run")
MIN_READ_BYTES = 4 * 1024
"""Smallest read buffer per source: Hadoop's default ``io.file.buffer.size`` (the kernel's
read-ahead still reads each spill file sequentially in larger pieces)."""


def merge_plan(sizes: list[int], factor: int) -> list[list[int]]:
    """Which runs each intermediate merge pass takes (indices into ``sizes``, run lengths;
    a pass's output is appended after the runs) so that at most ``factor`` remain for the
    final merge. Hadoop's ``Merger``: every pass merges the smallest runs left, the first
    ``(n - 1) % (factor - 1) + 1`` of them (when that is not 1) and every later one
    ``factor``, so that the last pass leaves exactly ``factor`` runs."""
    if factor < 2:
        raise ValueError(f"a merge needs a factor of at least 2, not {factor}")
    live = list(range(len(sizes)))
    lengths = list(sizes)
    passes: list[list[int]] = []
    while len(live) > factor:
        take = factor
        if not passes:
            mod = (len(live) - 1) % (factor - 1)
            take = factor if mod == 0 else mod + 1
        chosen = sorted(live, key=lambda i: (lengths[i], i))[:take]
        passes.append(sorted(chosen))
        live = [i for i in live if i not in chosen] + [len(lengths)]
        lengths.append(sum(lengths[i] for i in chosen))
    return passes


def run_passes(
    runs: list[Run],
    factor: int,
    length: Callable[[Run], int],
    merge: Callable[[list[Run]], Run],
    passed: Callable[[int, int], None] = lambda done, total: None,
) -> list[Run]:
    """The runs left for the final merge after the passes of ``merge_plan`` (``merge`` makes
    one run of several, ``length`` sizes a run; ``passed(done, planned)`` after each pass)."""
    runs = list(runs)
    plan = merge_plan([length(run) for run in runs], factor)
    for done, chosen in enumerate(plan, 1):
        runs.append(merge([runs[i] for i in chosen]))
        passed(done, len(plan))
    merged = {i for chosen in plan for i in chosen}
    return [run for i, run in enumerate(runs) if i not in merged]


def fan_in(free_bytes: int, buffers_per_source: int) -> int:
    """Sources a merge may read at once with ``free_bytes`` for its read buffers."""
    return max(2, min(SORT_FACTOR, free_bytes // (buffers_per_source * MIN_READ_BYTES)))


def settle(handle: BinaryIO) -> None:
    """Push a finished spill file to the disk and drop it from the page cache.

    Without this a spill costs a memory copy: every emulated node shares one
    page cache. Like the YARN-ME paper's measurements (direct I/O), a spill
    then pays a real write, and the merge a real read.
    """
    handle.flush()
    worker_limits().pace("disk", handle.tell())
    os.fsync(handle.fileno())
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(handle.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


class SpillFiles:
    """Names spill files in a scratch directory and accounts for them in the metrics."""

    def __init__(
        self, scratch: Path, metrics: TaskMetrics, base_bytes: int = 0, progress: Progress | None = None
    ) -> None:
        """``base_bytes``: memory the task holds besides the buffer (reported with it);
        ``progress``: a reduce task's score, whose sort phase its merge passes advance."""
        self.scratch = scratch
        self.metrics = metrics
        self.base_bytes = base_bytes
        self.progress = progress
        self._count = 0
        scratch.mkdir(parents=True, exist_ok=True)

    def new_path(self) -> Path:
        self._count += 1
        return self.scratch / f"spill-{self._count:05d}.run"

    def sorted(self, done: int, planned: int) -> None:
        """``done`` of the ``planned`` intermediate merge passes are over (the sort phase; with
        none planned it is over when the final merge starts)."""
        if self.progress is not None:
            self.progress.phase(SORT, done, planned)

    def note_buffered(self, nbytes: int) -> None:
        self.metrics.peak_buffered_bytes = max(self.metrics.peak_buffered_bytes, self.base_bytes + nbytes)


# ====================================================================== numpy records


@dataclass(frozen=True)
class ArrayKind:
    """How to sort, search and combine one kind of numpy record.

    ``order`` returns the permutation sorting a batch by key; ``keys`` returns
    a key column that ``np.searchsorted`` orders the same way; ``combine``
    (optional) turns a key-sorted batch into one record per key.
    """

    dtype: np.dtype
    order: Callable[[np.ndarray], np.ndarray]
    keys: Callable[[np.ndarray], np.ndarray]
    combine: Callable[[np.ndarray], np.ndarray] | None = None
    keyed: bool = True
    """False when a run needs only to be grouped by partition, not sorted by key (a sort's map side)."""
    merge_order: Callable[[np.ndarray], np.ndarray] | None = None
    """The permutation sorting a batch made of key-sorted pieces (a merge round); a stable
    sort finds the pieces and merges them. None: ``order``."""

    def merging(self, batch: np.ndarray) -> np.ndarray:
        return (self.merge_order or self.order)(batch)


@dataclass
class ArrayRun:
    """A spilled run: sections of records per partition, stored back to back."""

    path: Path
    dtype: np.dtype
    bounds: list[int]  # record offsets, one per partition plus the end

    def section(self, partition: int, chunk_records: int) -> Iterator[np.ndarray]:
        start, end = self.bounds[partition], self.bounds[partition + 1]
        with open(self.path, "rb") as handle:
            handle.seek(start * self.dtype.itemsize)
            while start < end:
                count = min(chunk_records, end - start)
                chunk = np.fromfile(handle, dtype=self.dtype, count=count)
                if len(chunk) != count:
                    raise OSError(f"spill run {self.path} is shorter than its index")
                start += count
                yield chunk


def merge_sorted(sources: list[Iterator[np.ndarray]], kind: ArrayKind) -> Iterator[np.ndarray]:
    """K-way merge of key-sorted chunk streams into key-sorted batches.

    Each round takes, from every source's current chunk, the records whose key
    is at most the smallest *last* key among the current chunks: no record not
    yet read can be smaller, so the round's records can be emitted after one
    sort (of concatenated sorted pieces). The source holding that smallest last
    key is used up, so every round reads at least one new chunk. Keys never
    decrease across batches; equal keys may straddle two batches.
    """
    heads: list[tuple[np.ndarray, Iterator[np.ndarray]]] = []
    for source in sources:
        first = next(source, None)
        if first is not None and len(first):
            heads.append((first, source))
    while heads:
        bound = min(kind.keys(chunk)[-1] for chunk, _ in heads)
        pieces, remaining = [], []
        for chunk, source in heads:
            cut = int(np.searchsorted(kind.keys(chunk), bound, side="right"))
            pieces.append(chunk[:cut])
            rest = chunk[cut:] if cut < len(chunk) else next(source, None)
            if rest is not None and len(rest):
                remaining.append((rest, source))
        heads = remaining
        batch = np.concatenate(pieces) if len(pieces) > 1 else pieces[0]
        yield batch[kind.merging(batch)] if len(pieces) > 1 else batch


def combine_stream(batches: Iterable[np.ndarray], kind: ArrayKind) -> Iterator[np.ndarray]:
    """Combine a key-sorted batch stream, holding back the last key of each batch
    because its records may continue in the next batch."""
    assert kind.combine is not None
    carry: np.ndarray | None = None
    for batch in batches:
        if carry is not None:
            batch = np.concatenate([carry, batch])
        combined = kind.combine(batch)
        keys = kind.keys(combined)
        split = int(np.searchsorted(keys, keys[-1], side="left"))
        carry = combined[split:]
        if split:
            yield combined[:split]
    if carry is not None and len(carry):
        yield carry


@dataclass
class _Ordered:
    """Buffered records with the permutation that sorts them by (partition, key).

    Records are gathered into that order chunk by chunk when written, so a
    spill needs no second full-size copy of the buffer.
    """

    records: np.ndarray
    parts: np.ndarray  # already in sorted order
    order: np.ndarray | None  # None: records are already in order

    @property
    def nbytes(self) -> int:
        extra = self.order.nbytes if self.order is not None else 0
        return self.records.nbytes + self.parts.nbytes + extra

    def bounds(self, partitions: int) -> list[int]:
        return np.searchsorted(self.parts, np.arange(partitions + 1)).tolist()

    def chunks(self, start: int, end: int, size: int) -> Iterator[np.ndarray]:
        for low in range(start, end, size):
            high = min(end, low + size)
            if self.order is None:
                yield self.records[low:high]
            else:
                yield self.records.take(self.order[low:high])


class ArrayBuffer:
    """Partitioned numpy records under a byte limit; spills sorted runs when full.

    The limit bounds the records (and their partition numbers) held in the
    buffer; sorting them takes at most one key column and one index array on
    top, so a task sets the limit to a fraction of its budget.
    """

    def __init__(self, kind: ArrayKind, partitions: int, limit_bytes: int, files: SpillFiles) -> None:
        self.kind = kind
        self.partitions = partitions
        self.limit = max(limit_bytes, kind.dtype.itemsize)
        self.files = files
        self.runs: list[ArrayRun] = []
        self._records: list[np.ndarray] = []
        self._parts: list[np.ndarray] = []
        self._bytes = 0

    @property
    def buffered_bytes(self) -> int:
        return self._bytes

    def add(self, records: np.ndarray, partitions: np.ndarray) -> None:
        """Buffer records, ``partitions[i]`` being record i's partition (an integer array)."""
        self._records.append(records)
        self._parts.append(partitions)
        self._bytes += records.nbytes + partitions.nbytes
        self.files.note_buffered(self._bytes)
        if self._bytes >= self.limit:
            self._compact()

    def _compact(self) -> None:
        """Combine in memory when that frees at least half the buffer; spill otherwise."""
        ordered = self._ordered()
        if self.kind.combine is not None and ordered.nbytes <= self.limit // 2:
            self._records, self._parts = [ordered.records], [ordered.parts]
            self._bytes = ordered.records.nbytes + ordered.parts.nbytes
            return
        self._spill(ordered)

    def _ordered(self) -> _Ordered:
        records = np.concatenate(self._records) if len(self._records) > 1 else self._records[0]
        parts = np.concatenate(self._parts) if len(self._parts) > 1 else self._parts[0]
        self._records, self._parts, self._bytes = [], [], 0
        if self.kind.keyed:
            order = self.kind.order(records)
            order = order[np.argsort(parts[order], kind="stable")]
        else:
            order = np.argsort(parts, kind="stable")
        ordered = _Ordered(records, parts[order], order)
        if self.kind.combine is not None:
            ordered = self._combined(ordered)
        return ordered

    def _combined(self, ordered: _Ordered) -> _Ordered:
        assert self.kind.combine is not None
        pieces, part_pieces = [], []
        bounds = ordered.bounds(self.partitions)
        for partition in range(self.partitions):
            start, end = bounds[partition], bounds[partition + 1]
            if end > start:
                combined = self.kind.combine(next(ordered.chunks(start, end, end - start)))
                pieces.append(combined)
                part_pieces.append(np.full(len(combined), partition, dtype=ordered.parts.dtype))
        if not pieces:
            return _Ordered(ordered.records[:0], ordered.parts[:0], None)
        return _Ordered(np.concatenate(pieces), np.concatenate(part_pieces), None)

    def _spill(self, ordered: _Ordered) -> None:
        path = self.files.new_path()
        chunk = max(1, READ_BYTES * 16 // self.kind.dtype.itemsize)
        with open(path, "wb") as handle:
            for records in ordered.chunks(0, len(ordered.records), chunk):
                records.tofile(handle)
            settle(handle)
        self.files.metrics.spill_bytes += ordered.records.nbytes
        self.files.metrics.spills += 1
        self.runs.append(ArrayRun(path, self.kind.dtype, ordered.bounds(self.partitions)))

    def finish(self, max_chunk_bytes: int = 1 << 20) -> Iterator[tuple[int, Iterator[np.ndarray]]]:
        """(partition, stream of record chunks) for every partition in order; for a keyed
        kind each stream is sorted by key (and combined, when the kind combines).

        What is still buffered stays in memory for the final merge (as in
        Hadoop, hence the sawtooth of runtime over memory) unless the merge's
        read buffers (``READ_BYTES`` per source) would not fit beside it; then it
        is spilled too.
        """
        empty = np.empty(0, self.kind.dtype)
        ordered = self._ordered() if self._records else _Ordered(empty, empty.view(np.uint8), None)
        free = self.limit - ordered.nbytes
        sources = min(SORT_FACTOR, len(self.runs) + 1) if self.kind.keyed else 1
        if self.runs and len(ordered.records) and free < 3 * READ_BYTES * sources:
            self._spill(ordered)
            ordered, free = _Ordered(empty, empty.view(np.uint8), None), self.limit
        chunk_bytes = max_chunk_bytes
        if self.runs:
            self._reduce_runs(fan_in(free, 3), free, retained=len(ordered.records) > 0)
            self.files.metrics.merge_passes += 1
            reading = len(self.runs) + 1 if self.kind.keyed else 1
            chunk_bytes = min(max_chunk_bytes, max(MIN_READ_BYTES, free // (3 * reading)))
        self.files.sorted(1, 1)
        chunk_records = max(1, chunk_bytes // self.kind.dtype.itemsize)
        bounds = ordered.bounds(self.partitions) if len(ordered.records) else [0] * (self.partitions + 1)
        for partition in range(self.partitions):
            streams = [run.section(partition, chunk_records) for run in self.runs]
            start, end = bounds[partition], bounds[partition + 1]
            if end > start:
                streams.append(ordered.chunks(start, end, chunk_records))
            yield partition, self._merged(streams)
        for run in self.runs:
            run.path.unlink(missing_ok=True)
        self.runs = []

    def _merged(self, sources: list[Iterator[np.ndarray]]) -> Iterator[np.ndarray]:
        if not self.kind.keyed or len(sources) <= 1:
            return itertools.chain.from_iterable(sources)
        merged = merge_sorted(sources, self.kind)
        return combine_stream(merged, self.kind) if self.kind.combine is not None else merged

    def _reduce_runs(self, factor: int, free: int, retained: bool) -> None:
        """Intermediate merge passes (``merge_plan``) until the final merge reads at most
        ``factor`` sources, the records kept in memory being one (a kind that only
        concatenates reads one run at a time and needs none)."""
        if not self.kind.keyed:
            return
        final_runs = factor - 1 if retained else factor
        chunk_records = max(1, free // (3 * factor) // self.kind.dtype.itemsize)
        self.runs = run_passes(
            self.runs,
            max(2, final_runs),
            lambda run: run.bounds[-1],
            lambda g: self._merge_group(g, chunk_records),
            self.files.sorted,
        )

    def _merge_group(self, group: list[ArrayRun], chunk_records: int) -> ArrayRun:
        path = self.files.new_path()
        bounds, written = [0], 0
        with open(path, "wb") as handle:
            for partition in range(self.partitions):
                for chunk in self._merged([run.section(partition, chunk_records) for run in group]):
                    chunk.tofile(handle)
                    written += len(chunk)
                bounds.append(written)
            settle(handle)
        for run in group:
            run.path.unlink(missing_ok=True)
        self.files.metrics.spill_bytes += written * self.kind.dtype.itemsize
        self.files.metrics.merge_passes += 1
        return ArrayRun(path, self.kind.dtype, bounds)
