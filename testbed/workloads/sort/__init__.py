"""Sort (TeraSort-like): 100-byte records ordered by their first 10 bytes.

Records have the layout of ``gensort -a``: a 10-byte key of printable ASCII,
two spaces, the record number as 32 hex digits, two spaces, 52 filler bytes
and ``\\r\\n``; so a generated file is also a text file GNU ``sort`` orders the
same way (``LC_ALL=C``). User files may hold any bytes: only the length (a
multiple of 100) and the key position matter.

The planner samples keys (from the generator, or from the files at seeded
offsets) and gives the reducers' key ranges to every map task as
``boundaries``. A map task routes each record to the range holding its key;
reducer r sorts its records within its memory budget (in memory when they
fit, external merge sort otherwise) and writes part r. Concatenated in
partition order the part files are globally sorted. Equal keys keep no
particular order.

Validation (``validate``) follows valsort: keys in order across parts, the
record count, and an order-independent checksum (sum of a 64-bit hash of every
record) equal to the input's.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

import numpy as np

from testbed.plan import Dependency, JobPlan, StagePlan
from testbed.scenario.inputs import resolve_inputs
from testbed.scenario.splitting import byte_ranges
from testbed.workloads.base import Combiner, TaskContext, TaskFunction
from testbed.workloads.progress import REDUCE, split_bytes
from testbed.workloads.reference_inputs import record_chunks, reference_files
from testbed.workloads.sort.lineage_dag import lineage as lineage
from testbed.workloads.spill import ArrayBuffer, ArrayKind, SpillFiles
from testbed.workloads.splits import read_records_range

if TYPE_CHECKING:
    from testbed.scenario.schema import Scenario, SortJob
    from testbed.workloads.task_model import Role

RECORD = 100
KEY = 10
SPLIT_MB = 16
PIECE_RECORDS = 10_000
"""The generator makes a map's records in pieces of this many (1 MB)."""
BUFFER_FRACTION = 0.4
"""Share of the budget for buffered records: sorting needs a concatenated copy,
an index and key columns besides (about 2.3x the records at the peak)."""
RECORD_DTYPE = np.dtype([("key", f"S{KEY}"), ("rest", f"V{RECORD - KEY}")])
SortKind = Literal["quicksort", "stable"]
_HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)


# ------------------------------------------------------------------ keys and ordering


def key_order(records: np.ndarray, kind: SortKind = "quicksort") -> np.ndarray:
    """The permutation sorting records by key: a sort on the first 8 key bytes (as a
    big-endian integer), refined by all 10 bytes only when those 8 tie."""
    raw = records.view(np.uint8).reshape(-1, RECORD)
    high = np.ascontiguousarray(raw[:, :8]).view(">u8").ravel().astype(np.uint64)
    order = np.argsort(high, kind=kind)
    ordered = high[order]
    if len(ordered) > 1 and bool(np.any(ordered[1:] == ordered[:-1])):
        low = (raw[:, 8].astype(np.uint16) << 8) | raw[:, 9]
        order = np.lexsort((low, high))
    return order


def record_keys(records: np.ndarray) -> np.ndarray:
    return records["key"]


def merge_order(records: np.ndarray) -> np.ndarray:
    """``key_order`` for a batch of key-sorted pieces: timsort finds and merges them."""
    return key_order(records, "stable")


SORT_KIND = ArrayKind(RECORD_DTYPE, key_order, record_keys, merge_order=merge_order)
MAP_KIND = ArrayKind(RECORD_DTYPE, key_order, record_keys, keyed=False)

_MIX = np.random.default_rng(0x5EED).integers(1, 2**63, size=RECORD // 4, dtype=np.uint64) | np.uint64(1)


def record_hashes(records: np.ndarray) -> np.ndarray:
    """A 64-bit hash of every record (weighted word sum, then a multiply-xorshift mix)."""
    words = records.view(np.uint8).reshape(-1, RECORD).view("<u4").astype(np.uint64)
    with np.errstate(over="ignore"):
        h = (words * _MIX).sum(axis=1, dtype=np.uint64)
        h ^= h >> np.uint64(29)
        h *= np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(32)
    return h


def as_records(data: bytes | bytearray | memoryview) -> np.ndarray:
    if len(data) % RECORD:
        raise ValueError(f"{len(data)} bytes are not a whole number of {RECORD}-byte records")
    return np.frombuffer(data, dtype=RECORD_DTYPE)


# ------------------------------------------------------------------ generated input


def generate_piece(seed: int, index: int, piece: int, first: int, count: int) -> np.ndarray:
    """Records ``first .. first+count`` (global numbers) of piece ``piece`` of map ``index``.

    The keys of a piece come from a generator seeded by (seed, index, piece),
    so any piece can be made alone (the planner samples first pieces).
    """
    rng = np.random.default_rng([seed, index, piece])
    out = np.empty((count, RECORD), dtype=np.uint8)
    out[:, :KEY] = rng.integers(32, 127, size=(count, KEY), dtype=np.uint8)
    out[:, KEY : KEY + 2] = ord(" ")
    numbers = np.arange(first, first + count, dtype=np.uint64)
    digits = (numbers[:, None] >> (np.arange(15, -1, -1, dtype=np.uint64) * np.uint64(4))) & np.uint64(15)
    out[:, 12:28] = ord("0")
    out[:, 28:44] = _HEX[digits]
    out[:, 44:46] = ord(" ")
    out[:, 46:98] = np.tile(out[:, 40:44], 13)
    out[:, 98] = ord("\r")
    out[:, 99] = ord("\n")
    return out.view(RECORD_DTYPE).ravel()


def generate_split(seed: int, index: int, first: int, count: int) -> Iterator[np.ndarray]:
    for piece, start in enumerate(range(0, count, PIECE_RECORDS)):
        yield generate_piece(seed, index, piece, first + start, min(PIECE_RECORDS, count - start))


def generated_sources(job: SortJob, seed: int) -> list[dict[str, Any]]:
    total = max(1, int(job.size_mb * 2**20) // RECORD)
    maps = min(job.maps or max(1, round(job.size_mb / SPLIT_MB)), total)
    edges = [total * i // maps for i in range(maps + 1)]
    return [
        {"generate": {"seed": seed, "index": i, "first": edges[i], "count": edges[i + 1] - edges[i]}}
        for i in range(maps)
    ]


def file_sources(job: SortJob) -> list[dict[str, Any]]:
    paths = resolve_inputs(job.input or "")
    for path in paths:
        if path.stat().st_size % RECORD:
            raise ValueError(
                f"{path}: {path.stat().st_size} bytes is not a multiple of {RECORD}-byte records"
            )
    total_mb = sum(p.stat().st_size for p in paths) / 2**20
    maps = job.maps or max(1, round(total_mb / SPLIT_MB))
    return [{"file": r} for r in byte_ranges(paths, maps, align=RECORD) if r["end"] > r["start"]]


def sources_of(job: SortJob, seed: int) -> list[dict[str, Any]]:
    return file_sources(job) if job.input else generated_sources(job, seed)


def source_chunks(source: dict[str, Any], chunk_bytes: int = 1 << 20) -> Iterator[np.ndarray]:
    if "generate" in source:
        g = source["generate"]
        yield from generate_split(g["seed"], g["index"], g["first"], g["count"])
    else:
        f = source["file"]
        for data in read_records_range(f["path"], f["start"], f["end"], RECORD, chunk_bytes):
            yield as_records(data)


# ------------------------------------------------------------------ sampling and plan


def sample_keys(sources: list[dict[str, Any]], wanted: int, seed: int) -> np.ndarray:
    """Sorted sample keys: each generated split's first keys, or records at seeded offsets of files."""
    per_source = max(1, math.ceil(wanted / len(sources)))
    keys = []
    rng = np.random.default_rng([seed, 0x5A4D])
    for source in sources:
        if "generate" in source:
            g = source["generate"]
            count = min(PIECE_RECORDS, g["count"])
            keys.append(generate_piece(g["seed"], g["index"], 0, g["first"], count)["key"][:per_source])
        else:
            keys.append(_sample_file(source["file"], per_source, rng))
    return np.sort(np.concatenate(keys))


def _sample_file(split: dict[str, Any], count: int, rng: np.random.Generator) -> np.ndarray:
    records = (split["end"] - split["start"]) // RECORD
    picks = np.sort(rng.choice(records, size=min(count, records), replace=False))
    keys = np.empty(len(picks), dtype=f"S{KEY}")
    with open(split["path"], "rb") as handle:
        for i, pick in enumerate(picks.tolist()):
            handle.seek(split["start"] + pick * RECORD)
            keys[i] = handle.read(KEY)
    return keys


def boundaries_from_sample(sample: np.ndarray, reduces: int) -> list[str]:
    """``reduces - 1`` split keys (hex), the sample's quantiles."""
    if len(sample) == 0:
        return []
    picks = [sample[min(len(sample) - 1, len(sample) * r // reduces)] for r in range(1, reduces)]
    return [bytes(k).ljust(KEY, b"\0").hex() for k in picks]


def plan(job: SortJob, seed: int, scenario: Scenario | None = None) -> JobPlan:
    """In a simulated run (``scenario.backend`` sim): the plan's shape and sizes only, no key
    boundaries (nothing is generated or read: the simulator's tasks sort no record)."""
    sample = scenario is None or scenario.backend != "sim"
    sources = sources_of(job, seed)
    shared: dict[str, Any] = {}
    if sample:
        keys = sample_keys(sources, min(100_000, max(1_000, 100 * job.reduces)), seed)
        shared["boundaries"] = boundaries_from_sample(keys, job.reduces)
    return JobPlan(
        "sort",
        (
            StagePlan(
                "sort.map", len(sources), job.reduces, task_params=tuple(sources), shared_params=shared
            ),
            StagePlan("sort.reduce", job.reduces, 1, (Dependency(0, "shuffle"),), final=True),
        ),
    )


# ------------------------------------------------------------------ tasks


def chunk_bytes_for(budget: int) -> int:
    """Read and write granularity: 1 MB, or less under a small budget."""
    return int(min(1 << 20, max(16 * RECORD, budget // 32)) // RECORD * RECORD)


def map_task(ctx: TaskContext) -> None:
    boundaries = np.array([bytes.fromhex(b) for b in ctx.params["boundaries"]], dtype=f"S{KEY}")
    budget = ctx.budget_bytes
    files = SpillFiles(ctx.scratch, ctx.metrics)
    split, read = split_bytes(ctx.params, RECORD), 0
    buffer = ArrayBuffer(MAP_KIND, ctx.spec.partitions, int(budget * BUFFER_FRACTION), files)
    chunks = source_chunks(ctx.params, chunk_bytes_for(budget))
    if ctx.caches_input:
        chunks = map(as_records, ctx.through_input_cache(r.tobytes() for r in chunks))
    for records in chunks:
        ctx.metrics.bytes_in += records.nbytes
        ctx.metrics.records_in += len(records)
        read += records.nbytes
        ctx.progress.read(read, split)
        parts = np.searchsorted(boundaries, records["key"], side="right").astype(np.uint16)
        buffer.add(records, parts)
    writer = ctx.open_output()
    for partition, chunks in buffer.finish(chunk_bytes_for(budget)):
        for chunk in chunks:
            writer.write(partition, chunk.tobytes())
            ctx.metrics.records_out += len(chunk)
    ctx.commit_output(writer)


def reduce_task(ctx: TaskContext) -> None:
    budget = ctx.budget_bytes
    files = SpillFiles(ctx.scratch, ctx.metrics, progress=ctx.progress)
    buffer = ArrayBuffer(SORT_KIND, 1, int(budget * BUFFER_FRACTION), files)
    for frame in ctx.input_frames(0):
        records = as_records(frame)
        ctx.metrics.records_in += len(records)
        buffer.add(records, np.zeros(len(records), dtype=np.uint8))
    with open(ctx.final_path, "wb") as out:
        for _, chunks in buffer.finish(chunk_bytes_for(budget)):
            for chunk in chunks:
                chunk.tofile(out)
                ctx.metrics.records_out += len(chunk)
                ctx.progress.phase(REDUCE, ctx.metrics.records_out, ctx.metrics.records_in)


# ------------------------------------------------------------------ validation and references


@dataclass(frozen=True, slots=True)
class SortSummary:
    """What valsort reports: record count, order-independent checksum, and whether keys are in order."""

    records: int
    checksum: int
    ordered: bool = True
    first_disorder: int | None = None
    """Record number (0-based, across parts) of the first key smaller than its predecessor."""

    def comparable(self) -> tuple[int, int, bool]:
        return (self.records, self.checksum, self.ordered)


def summarize(chunks: Iterable[np.ndarray]) -> SortSummary:
    count, checksum = 0, 0
    previous: bytes | None = None
    disorder: int | None = None
    for records in chunks:
        if len(records) == 0:
            continue
        keys = records["key"]
        if disorder is None:
            if previous is not None and keys[0] < previous:
                disorder = count
            else:
                bad = np.flatnonzero(keys[1:] < keys[:-1])
                if len(bad):
                    disorder = count + int(bad[0]) + 1
        previous = keys[-1]
        checksum = (checksum + int(record_hashes(records).sum(dtype=np.uint64))) % 2**64
        count += len(records)
    return SortSummary(count, checksum, disorder is None, disorder)


def output_parts(directory: Path) -> list[Path]:
    return sorted(directory.glob("part-*"))


def read_output(directory: Path) -> SortSummary:
    """Summary of a job's output: its part files concatenated in partition order."""
    return summarize(chunk for part in output_parts(Path(directory)) for chunk in _file_chunks(part))


def input_summary(job: SortJob, seed: int) -> SortSummary:
    """Count and checksum of the job's input (``ordered`` is set, as a correct output must be).
    Input files are listed and read by ``reference_inputs``, not by the code under test."""
    if job.input:
        files = reference_files(job.input)
        chunks = (as_records(data) for path in files for data in record_chunks(path, RECORD))
    else:
        chunks = (chunk for source in sources_of(job, seed) for chunk in source_chunks(source))
    summary = summarize(chunks)
    return SortSummary(summary.records, summary.checksum)


def reference_output(job: SortJob, seed: int) -> tuple[int, int, bool]:
    """What a correct output's ``read_output(...).comparable()`` must equal."""
    return input_summary(job, seed).comparable()


def _file_chunks(path: Path, chunk: int = 1 << 20) -> Iterator[np.ndarray]:
    size = path.stat().st_size
    if size % RECORD:
        raise ValueError(f"{path}: {size} bytes is not a whole number of {RECORD}-byte records")
    yield from (as_records(data) for data in read_records_range(str(path), 0, size, RECORD, chunk))


OPERATIONS: dict[str, TaskFunction] = {"sort.map": map_task, "sort.reduce": reduce_task}
"""The task functions of its ops (``testbed.workloads.catalog.OPERATIONS`` gathers every workload's)."""
PROFILED_STAGES: dict[Role, int] = {"map": 0, "reduce": 1}
"""The stage ``testbed profile`` measures for each role (``testbed.workloads.profile``)."""
COMBINERS: dict[str, Combiner] = {}
"""None of its ops' outputs is aggregated before a push."""
NEVER_SPILLS = False
"""Its buffers grow with its input: under a smaller budget it spills (``testbed.workloads.profile``)."""
RECORD_BYTES = RECORD
"""A generated split counts records of ``RECORD`` bytes."""


def check(job: SortJob, seed: int, directory: Path) -> list[str]:
    """Like valsort: keys in order across the part files (in partition order), and the record
    count and order-independent checksum the input's."""
    try:
        got = read_output(directory)
    except ValueError as exc:
        return [str(exc)]
    expected = input_summary(job, seed)
    problems = []
    if not got.ordered:
        problems.append(f"record {got.first_disorder} has a key smaller than the record before it")
    if got.records != expected.records:
        problems.append(f"{got.records} records, the input has {expected.records}")
    if got.checksum != expected.checksum:
        problems.append(f"checksum {got.checksum:016x} differs from the input's {expected.checksum:016x}")
    return problems


def generate(job: SortJob, seed: int, handle: IO[bytes]) -> None:
    """The generated records, as one file of whole records."""
    for source in sources_of(job, seed):
        for records in source_chunks(source):
            records.tofile(handle)
