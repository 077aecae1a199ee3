"""Wordcount: map with a combiner and hash partitioning, reduce by summing, both under a budget.

Tokenizer (exactly): decode the input as UTF-8 (invalid bytes become U+FFFD),
lowercase it with ``str.lower``, and take every maximal run matching the
regular expression ``[^\\W_]+`` (letters and digits of any script; underscore
and punctuation separate words). Words are partitioned by CRC32 of their UTF-8
bytes modulo the number of reducers. Output lines are ``word<TAB>count``,
sorted by word (code point order) within each part file.

The map reads its split in slices (the slice size shrinks with the budget),
counts each slice, and combines the counts into a ``PairBuffer`` that spills
sorted runs when it reaches ``BUFFER_FRACTION`` of the budget. The reduce
combines the fetched (word, count) frames into a ``PairBuffer`` too and feeds
the merged, summed, sorted pairs to the output.

Fast path of the tokenizer (same result, tested): ASCII separators are mapped
to spaces and ASCII letters lowered on the raw bytes (``bytes.translate``),
the bytes are split, and the tokens counted; only distinct tokens holding
non-ASCII bytes go through the exact rule above. Splitting at ASCII bytes is
safe because they never occur inside a UTF-8 sequence and end any invalid
one; a slice holding a capital sigma takes the exact rule whole, because
``str.lower`` lowers it by context (final sigma) across separators.
"""

from __future__ import annotations

import functools
import itertools
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

import msgpack
import numpy as np

from testbed.plan import Dependency, JobPlan, StagePlan
from testbed.scenario.splitting import line_splits
from testbed.wire.blocks import BlockWriter
from testbed.workloads.base import Combiner, TaskContext, TaskFunction
from testbed.workloads.pair_spill import PairBuffer
from testbed.workloads.progress import split_bytes
from testbed.workloads.reference_inputs import line_chunks, reference_files
from testbed.workloads.spill import SpillFiles
from testbed.workloads.splits import read_lines_range
from testbed.workloads.wordcount.lineage_dag import lineage as lineage

if TYPE_CHECKING:
    from testbed.scenario.schema import Scenario, WordcountJob
    from testbed.workloads.task_model import Role

WORD = re.compile(r"[^\W_]+")
SPLIT_MB = 8
BUFFER_FRACTION = 0.6
"""Share of the budget for the combining buffer; the rest is the working memory
of counting one slice (about 20 bytes per input byte, see ``slice_bytes``)."""
PAIRS_PER_FRAME = 1024
_ASCII_FOLD = bytes(
    32 if c < 128 and not chr(c).isalnum() else c + 32 if 65 <= c <= 90 else c for c in range(256)
)
_CAPITAL_SIGMA = "Σ".encode()
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zé", "ßa", "数据", "qu", "ex", "ly")


def tokenize(text: str) -> list[str]:
    return WORD.findall(text.lower())


def partition_of(word: str, partitions: int) -> int:
    return zlib.crc32(word.encode()) % partitions


# ------------------------------------------------------------------ generated input


class Vocabulary(NamedTuple):
    """Words packed in one buffer: a few bytes per word, where a list of Python strings
    costs about 60, so generating input stays within a small task's memory budget."""

    blob: bytes  # every word's UTF-8, word i at blob[offsets[i]:offsets[i + 1]]
    offsets: np.ndarray
    by_rank: np.ndarray  # by_rank[r] is the word of Zipf rank r

    def words(self, ranks: np.ndarray) -> np.ndarray:
        """The words of these ranks, as an object array of bytes."""
        distinct, where = np.unique(ranks, return_inverse=True)
        word = self.by_rank[distinct]
        spans = zip(self.offsets[word].tolist(), self.offsets[word + 1].tolist(), strict=True)
        chosen = np.array([self.blob[start:end] for start, end in spans], dtype=object)
        return chosen[where]


def spell(i: int) -> str:
    """Word i: i in base len(_SYLLABLES) with syllables as digits, so words are distinct by
    construction (some capitalised, some non-ASCII)."""
    digits, n = [], i
    while True:
        n, digit = divmod(n, len(_SYLLABLES))
        digits.append(_SYLLABLES[digit])
        if n == 0:
            break
    word = "".join(digits) + ("x" * (len(digits) == 1 and i >= len(_SYLLABLES)))
    return word.capitalize() if i % 5 == 0 else word


@functools.lru_cache(maxsize=4)
def vocabulary(size: int, seed: int) -> Vocabulary:
    """``size`` distinct synthetic words; the seed shuffles which word gets which rank."""
    chunks, lengths = [], np.empty(size, dtype=np.int64)
    for first in range(0, size, 65_536):
        encoded = [spell(i).encode() for i in range(first, min(size, first + 65_536))]
        lengths[first : first + len(encoded)] = [len(word) for word in encoded]
        chunks.append(b"".join(encoded))
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.uint32)
    by_rank = np.random.default_rng([seed, 0x70CAB]).permutation(size).astype(np.int32)
    return Vocabulary(b"".join(chunks), offsets, by_rank)


def generate_split(seed: int, index: int, nbytes: int, vocabulary_size: int) -> Iterator[bytes]:
    """About ``nbytes`` of Zipf-distributed text with punctuation, deterministic in (seed, index),
    in pieces of 20,000 words each ending with a newline."""
    vocab = vocabulary(vocabulary_size, seed)
    rng = np.random.default_rng([seed, index])
    separators = np.array([b" ", b" ", b" ", b", ", b". ", b"_", b"-", b"\n"], dtype=object)
    produced = 0
    while produced < nbytes:
        ranks = np.minimum(rng.zipf(1.3, 20_000), vocabulary_size) - 1
        tokens = np.empty(40_001, dtype=object)
        tokens[0:-1:2] = vocab.words(ranks)
        tokens[1:-1:2] = separators[rng.integers(0, len(separators), 20_000)]
        tokens[-1] = b"\n"
        piece = b"".join(tokens.tolist())
        produced += len(piece)
        yield piece


# ------------------------------------------------------------------ plan


def sources_of(job: WordcountJob, seed: int) -> list[dict[str, Any]]:
    if job.input:
        return line_splits(job.input, job.maps, SPLIT_MB)
    maps = job.maps or max(1, round(job.size_mb / SPLIT_MB))
    nbytes = int(job.size_mb * 2**20 / maps)
    return [
        {"generate": {"seed": seed, "index": i, "nbytes": nbytes, "vocabulary": job.vocabulary}}
        for i in range(maps)
    ]


def plan(job: WordcountJob, seed: int, scenario: Scenario | None = None) -> JobPlan:
    del scenario  # every workload's plan takes it (``catalog.plan_job``); this one needs none
    sources = sources_of(job, seed)
    return JobPlan(
        "wordcount",
        (
            StagePlan("wordcount.map", len(sources), job.reduces, task_params=tuple(sources)),
            StagePlan("wordcount.reduce", job.reduces, 1, (Dependency(0, "shuffle"),), final=True),
        ),
    )


def source_chunks(source: dict[str, Any]) -> Iterator[bytes]:
    if "generate" in source:
        g = source["generate"]
        yield from generate_split(g["seed"], g["index"], g["nbytes"], g["vocabulary"])
    else:
        f = source["file"]
        yield from read_lines_range(f["path"], f["start"], f["end"])


def slice_bytes(budget: int) -> int:
    """Bytes of input counted at once: 1/64 of the budget, between 4 KB and 1 MB."""
    return min(1 << 20, max(4096, budget // 64))


def slices(chunk: bytes, size: int) -> Iterator[bytes]:
    """Pieces of about ``size`` bytes, each cut just after a space or newline (a word boundary)."""
    start = 0
    while len(chunk) - start > size:
        end = start + size
        cut = max(chunk.rfind(b"\n", start, end), chunk.rfind(b" ", start, end))
        if cut < 0:
            found = [i for i in (chunk.find(b"\n", end), chunk.find(b" ", end)) if i >= 0]
            cut = min(found) if found else len(chunk) - 1
        yield chunk[start : cut + 1]
        start = cut + 1
    if start < len(chunk):
        yield chunk[start:]


def count_words(data: bytes) -> Iterator[tuple[str, int]]:
    """(word, count) pairs of a piece of text under the documented tokenizer (a word may repeat)."""
    if _CAPITAL_SIGMA in data:
        yield from Counter(tokenize(data.decode("utf-8", errors="replace"))).items()
        return
    for token, count in Counter(data.translate(_ASCII_FOLD).split()).items():
        if token.isascii():
            yield token.decode("ascii"), count
        else:
            for word in tokenize(token.decode("utf-8", errors="replace")):
                yield word, count


# ------------------------------------------------------------------ tasks


def new_buffer(ctx: TaskContext, partitions: int) -> PairBuffer:
    """A reduce's buffer (a task with inputs) advances its sort phase as it merges."""
    files = SpillFiles(ctx.scratch, ctx.metrics, progress=ctx.progress if ctx.spec.inputs else None)
    return PairBuffer(
        lambda word: partition_of(word, partitions),
        partitions,
        int(ctx.budget_bytes * BUFFER_FRACTION),
        files,
    )


def map_task(ctx: TaskContext) -> None:
    buffer = new_buffer(ctx, ctx.spec.partitions)
    size = slice_bytes(ctx.budget_bytes)
    split = split_bytes(ctx.params)
    for chunk in ctx.through_input_cache(source_chunks(ctx.params)):
        ctx.metrics.bytes_in += len(chunk)
        ctx.progress.read(ctx.metrics.bytes_in, split)
        for piece in slices(chunk, size):
            buffer.add_counts(count_words(piece))
    writer = ctx.open_output()
    for partition, pairs in buffer.finish():
        for frame in _frames(pairs):
            ctx.metrics.records_out += len(frame)
            writer.write(partition, msgpack.packb(frame))
    ctx.commit_output(writer)


def _frames(pairs: Iterator[tuple[str, int]]) -> Iterator[list[tuple[str, int]]]:
    while frame := list(itertools.islice(pairs, PAIRS_PER_FRAME)):
        yield frame


def combine_outputs(frames_of: Callable[[int], Iterator[bytes]], writer: BlockWriter) -> None:
    """Pado's partial aggregation of map outputs (section 3.2.7): each partition of several
    map tasks' outputs (``frames_of(partition)``) becomes one frame list of summed counts,
    sorted by word. Sums are commutative and associative, so the reducer gets the same
    totals whether it reads the map outputs or this aggregate."""
    for partition in range(writer.partitions):
        counts: Counter[str] = Counter()
        for frame in frames_of(partition):
            for word, count in msgpack.unpackb(frame, use_list=False):
                counts[word] += count
        for frame in _frames(iter(sorted(counts.items()))):
            writer.write(partition, msgpack.packb(frame))


def reduce_task(ctx: TaskContext) -> None:
    buffer = new_buffer(ctx, 1)
    for frame in ctx.input_frames(0):
        pairs = msgpack.unpackb(frame, use_list=False)
        ctx.metrics.records_in += len(pairs)
        buffer.add_counts(pairs)
    with open(ctx.final_path, "w", encoding="utf-8") as out:
        for _, pairs in buffer.finish():
            for word, count in pairs:
                out.write(f"{word}\t{count}\n")
                ctx.metrics.records_out += 1


# ------------------------------------------------------------------ reference


def reference_counts(texts: Iterable[bytes]) -> Counter[str]:
    """A plain single-process count with the exact tokenizer, the independent reference for tests."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(tokenize(text.decode("utf-8", errors="replace")))
    return counts


def reference_output(job: WordcountJob, seed: int) -> Counter[str]:
    """Word counts of the job's whole input (what ``read_output`` of a correct run returns).
    Input files are listed and read by ``reference_inputs``, not by the code under test."""
    if job.input:
        return reference_counts(chunk for path in reference_files(job.input) for chunk in line_chunks(path))
    return reference_counts(b"".join(source_chunks(source)) for source in sources_of(job, seed))


def read_output(directory: Path) -> Counter[str]:
    """Word counts of a job's output directory (a word in two parts would be summed;
    ``check_output`` reports that as an error)."""
    counts: Counter[str] = Counter()
    for part in sorted(Path(directory).glob("part-*")):
        for line in part.read_text(encoding="utf-8").splitlines():
            word, _, count = line.rpartition("\t")
            counts[word] += int(count)
    return counts


OPERATIONS: dict[str, TaskFunction] = {"wordcount.map": map_task, "wordcount.reduce": reduce_task}
"""The task functions of its ops (``testbed.workloads.catalog.OPERATIONS`` gathers every workload's)."""
COMBINERS: dict[str, Combiner] = {"wordcount.map": combine_outputs}
"""Ops whose outputs may be partially aggregated on their node before a push (Pado)."""
PROFILED_STAGES: dict[Role, int] = {"map": 0, "reduce": 1}
"""The stage ``testbed profile`` measures for each role (``testbed.workloads.profile``)."""
NEVER_SPILLS = False
"""Its buffers grow with its input: under a smaller budget it spills (``testbed.workloads.profile``)."""
RECORD_BYTES = 1
"""A generated split is sized in bytes."""


def check(job: WordcountJob, seed: int, directory: Path) -> list[str]:
    """Every part sorted by word, no word in two parts, and the counts a plain single-process
    count of the input's."""
    problems = []
    seen: dict[str, str] = {}
    for part in sorted(directory.glob("part-*")):
        words = [line.rpartition("\t")[0] for line in part.read_text(encoding="utf-8").splitlines()]
        if words != sorted(words) or len(set(words)) != len(words):
            problems.append(f"{part.name}: words are not sorted and distinct")
        for word in words:
            if word in seen:
                problems.append(f"{word!r} is in both {seen[word]} and {part.name}")
                break
            seen[word] = part.name
    got, expected = read_output(directory), reference_output(job, seed)
    if got != expected:
        wrong = sorted(w for w in got.keys() | expected.keys() if got[w] != expected[w])
        sample = ", ".join(f"{w!r}: {got[w]} (expected {expected[w]})" for w in wrong[:3])
        problems.append(f"{len(wrong)} words have wrong counts, e.g. {sample}")
    return problems


def generate(job: WordcountJob, seed: int, handle: IO[bytes]) -> None:
    """The generated text, as one file."""
    for source in sources_of(job, seed):
        for chunk in source_chunks(source):
            handle.write(chunk)
