"""Wordcount: map with a combiner and hash partitioning, reduce by summing.

Tokenizer (exactly): decode the input as UTF-8 (invalid bytes become U+FFFD),
lowercase it with ``str.lower``, and take every maximal run matching the
regular expression ``[^\\W_]+`` (letters and digits of any script; underscore
and punctuation separate words). Words are partitioned by CRC32 of their UTF-8
bytes modulo the number of reducers. Output lines are ``word<TAB>count``,
sorted by word within each part file.
"""

from __future__ import annotations

import functools
import re
import zlib
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from testbed.scenario import WordcountJob, resolve_inputs
from testbed.workloads.base import TaskContext
from testbed.workloads.plan import Dependency, JobPlan, StagePlan
from testbed.workloads.splits import byte_ranges, read_lines_range

WORD = re.compile(r"[^\W_]+")
SPLIT_MB = 8
_SYLLABLES = ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "zé", "ßa", "数据", "qu", "ex", "ly")


def tokenize(text: str) -> list[str]:
    return WORD.findall(text.lower())


def partition_of(word: str, partitions: int) -> int:
    return zlib.crc32(word.encode()) % partitions


# ------------------------------------------------------------------ generated input


@functools.lru_cache(maxsize=4)
def vocabulary(size: int, seed: int) -> list[str]:
    """Distinct synthetic words (some capitalised, some non-ASCII), deterministic in seed.

    Word i spells i in base len(_SYLLABLES) with syllables as digits, so words
    are distinct by construction; the seed shuffles which word gets which rank.
    """
    base = len(_SYLLABLES)
    words = []
    for i in range(size):
        digits, n = [], i
        while True:
            n, digit = divmod(n, base)
            digits.append(_SYLLABLES[digit])
            if n == 0:
                break
        word = "".join(digits) + ("x" * (len(digits) == 1 and i >= base))
        words.append(word.capitalize() if i % 5 == 0 else word)
    order = np.random.default_rng([seed, 0x70CAB]).permutation(size)
    return [words[j] for j in order]


def generate_split(seed: int, index: int, nbytes: int, vocabulary_size: int) -> bytes:
    """About ``nbytes`` of Zipf-distributed text with punctuation, deterministic in (seed, index)."""
    vocab = np.array(vocabulary(vocabulary_size, seed), dtype=object)
    rng = np.random.default_rng([seed, index])
    separators = np.array([" ", " ", " ", ", ", ". ", "_", "-", "\n"], dtype=object)
    out: list[str] = []
    produced = 0
    while produced < nbytes:
        ranks = np.minimum(rng.zipf(1.3, 20_000), vocabulary_size) - 1
        seps = separators[rng.integers(0, len(separators), 20_000)]
        piece = "".join((vocab[ranks] + seps).tolist()) + "\n"
        out.append(piece)
        produced += len(piece.encode())
    return "".join(out).encode()


# ------------------------------------------------------------------ plan


def plan(job: WordcountJob, seed: int) -> JobPlan:
    if job.input:
        paths = resolve_inputs(job.input)
        total_mb = sum(p.stat().st_size for p in paths) / 2**20
        maps = job.maps or max(1, round(total_mb / SPLIT_MB))
        sources = [{"file": r} for r in byte_ranges(paths, maps)]
    else:
        maps = job.maps or max(1, round(job.size_mb / SPLIT_MB))
        nbytes = int(job.size_mb * 2**20 / maps)
        sources = [
            {"generate": {"seed": seed, "index": i, "nbytes": nbytes, "vocabulary": job.vocabulary}}
            for i in range(maps)
        ]
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
        yield generate_split(g["seed"], g["index"], g["nbytes"], g["vocabulary"])
    else:
        f = source["file"]
        yield from read_lines_range(f["path"], f["start"], f["end"])


# ------------------------------------------------------------------ tasks


def map_task(ctx: TaskContext) -> None:
    counts: Counter[str] = Counter()
    for chunk in source_chunks(ctx.params):
        ctx.metrics.bytes_in += len(chunk)
        words = tokenize(chunk.decode("utf-8", errors="replace"))
        ctx.metrics.records_in += len(words)
        counts.update(words)
    ctx.note_buffered(sum(len(w) + 8 for w in counts))
    write_partitioned(ctx, counts.items())


def write_partitioned(ctx: TaskContext, pairs: Iterable[tuple[str, int]]) -> None:
    partitions = ctx.spec.partitions
    buckets: list[list[tuple[str, int]]] = [[] for _ in range(partitions)]
    for word, count in pairs:
        buckets[partition_of(word, partitions)].append((word, count))
    writer = ctx.open_output()
    for partition, bucket in enumerate(buckets):
        bucket.sort()
        ctx.metrics.records_out += len(bucket)
        if bucket:
            writer.write(partition, msgpack.packb(bucket))
    ctx.commit_output(writer)


def reduce_task(ctx: TaskContext) -> None:
    counts: Counter[str] = Counter()
    for frame in ctx.input_frames(0):
        for word, count in msgpack.unpackb(frame, use_list=False):
            counts[word] += count
            ctx.metrics.records_in += 1
    ctx.note_buffered(sum(len(w) + 8 for w in counts))
    with open(ctx.final_path, "w", encoding="utf-8") as out:
        for word in sorted(counts):
            out.write(f"{word}\t{counts[word]}\n")
    ctx.metrics.records_out = len(counts)


# ------------------------------------------------------------------ reference


def reference_counts(texts: Iterable[bytes]) -> Counter[str]:
    """A plain single-process count, the independent reference for tests."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(tokenize(text.decode("utf-8", errors="replace")))
    return counts


def read_output(directory: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for part in sorted(directory.glob("part-*")):
        for line in part.read_text(encoding="utf-8").splitlines():
            word, _, count = line.rpartition("\t")
            counts[word] += int(count)
    return counts
