"""The three built-in workloads as PySpark RDD programs, with our semantics (the same tokenizer and
word partitioner, the same key order, PageRank's dangling mass and damping), so that their outputs
must equal ours byte for byte (wordcount), record for record (sort) or within 1e-9 (PageRank).

Each job writes its part files itself (``part-NNNNN``, in our layouts, so our readers and checks
read them), each written to a temporary name and renamed, so a task attempt that a killed executor
left half done, or a recomputed one, leaves a whole part."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from operator import add
from pathlib import Path
from typing import Any

from testbed.workloads import wordcount

SORT_KEY_BYTES = 10
SORT_RECORD_BYTES = 100


def write_part(folder: str, index: int, chunks: Iterable[bytes]) -> None:
    final = Path(folder) / f"part-{index:05d}"
    temporary = final.with_name(f".{final.name}.{os.getpid()}")
    with open(temporary, "wb") as out:
        for chunk in chunks:
            out.write(chunk)
    os.replace(temporary, final)


def _writer(folder: str, render: Callable[[Iterator[Any]], Iterable[bytes]]):  # type: ignore[no-untyped-def]
    def write(index: int, rows: Iterator[Any]) -> Iterator[int]:
        write_part(folder, index, render(rows))
        yield index

    return write


def _word_lines(rows: Iterator[tuple[str, int]]) -> Iterable[bytes]:
    return [f"{word}\t{count}\n".encode() for word, count in sorted(rows)]


def run_wordcount(sc: Any, inputs: str, reduces: int, out: str) -> None:
    """Our wordcount: ``tokenize`` per line (a word never spans a line), summed per word with a
    combiner, partitioned by ``partition_of`` (CRC32), each part sorted by word."""
    counts = (
        sc.textFile(inputs)
        .flatMap(wordcount.tokenize)
        .map(lambda word: (word, 1))
        .reduceByKey(add, reduces, lambda word: wordcount.partition_of(word, reduces))
    )
    counts.mapPartitionsWithIndex(_writer(out, _word_lines)).count()


def _sort_key(record: bytes) -> tuple[bytes, bytes]:
    return record[:SORT_KEY_BYTES], record


def _records(rows: Iterator[tuple[bytes, bytes]]) -> Iterable[bytes]:
    return (record for _key, record in rows)


def run_sort(sc: Any, inputs: str, reduces: int, out: str) -> None:
    """Our sort: 100-byte records ordered by their first 10 bytes, range-partitioned on a sample
    (Spark's ``sortByKey`` samples the keys itself, in a job of its own)."""
    records = sc.binaryRecords(inputs, SORT_RECORD_BYTES).map(bytes).map(_sort_key)
    ordered = records.sortByKey(numPartitions=reduces)
    ordered.mapPartitionsWithIndex(_writer(out, _records)).count()


def _edges(line: str) -> list[tuple[int, int]]:
    fields = line.split("#", 1)[0].split()
    return [(int(fields[0]), int(fields[1]))] if len(fields) >= 2 else []


def _contributions(entry: tuple[int, tuple[float, list[int] | None]]) -> list[tuple[int, float]]:
    _node, (rank, outs) = entry
    return [(dst, rank / len(outs)) for dst in outs] if outs else []


def _rank_lines(rows: Iterator[tuple[int, float]]) -> Iterable[bytes]:
    return [f"{node}\t{rank!r}\n".encode() for node, rank in rows]


def _new_rank(base: float, damping: float) -> Callable[[tuple[float, float | None]], float]:
    """This iteration's rank from (old rank, contributions received), ``base`` bound now."""
    return lambda pair: base + damping * (pair[1] or 0.0)


def run_pagerank(sc: Any, inputs: str, reduces: int, out: str, iterations: int, damping: float) -> None:
    """Our PageRank: duplicate edges collapse, every id seen is a node, ranks start at 1/N and
    ``r'[v] = (1-d)/N + d * (sum over u->v of r[u]/outdeg(u) + D/N)`` with D the dangling nodes'
    rank. Links are cached and co-partitioned with the ranks (the RDD paper's program); D is a
    ``sum()`` per iteration, so Spark runs one job per iteration where ours runs one job."""
    edges = sc.textFile(inputs).flatMap(_edges)
    links = edges.distinct(reduces).groupByKey(reduces).mapValues(sorted).cache()
    nodes = edges.flatMap(lambda edge: edge).distinct(reduces)
    count = nodes.count()
    ranks = nodes.map(lambda node: (node, 1.0 / count)).partitionBy(reduces)
    for _ in range(iterations):
        joined = ranks.leftOuterJoin(links, reduces)
        dangling = joined.filter(lambda e: not e[1][1]).map(lambda e: e[1][0]).sum()
        sums = joined.flatMap(_contributions).reduceByKey(add, reduces)
        base = (1 - damping) / count + damping * dangling / count
        ranks = ranks.leftOuterJoin(sums, reduces).mapValues(_new_rank(base, damping))
    ranks.mapPartitionsWithIndex(_writer(out, _rank_lines)).count()
