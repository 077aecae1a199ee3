"""One input file per map split, written from the workloads' own generators, so that both engines
read the same bytes with the same partitioning (ours: ``input:`` a folder and ``maps:`` its file
count, one split a file; Spark: one partition a file, as files below its 32 MB split size are)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from testbed.scenario.schema import PagerankJob, SortJob, WordcountJob
from testbed.workloads import pagerank, sort, wordcount


def write_wordcount(job: WordcountJob, seed: int, folder: Path) -> list[Path]:
    return _write(folder, [wordcount.source_chunks(s) for s in wordcount.sources_of(job, seed)])


def write_sort(job: SortJob, seed: int, folder: Path) -> list[Path]:
    pieces = [(c.tobytes() for c in sort.source_chunks(s)) for s in sort.sources_of(job, seed)]
    return _write(folder, pieces)


def write_pagerank(job: PagerankJob, seed: int, folder: Path) -> list[Path]:
    return _write(folder, [_edge_lines(s) for s in pagerank.sources_of(job, seed)])


def _edge_lines(source: dict[str, object]):  # type: ignore[no-untyped-def]
    for chunk in pagerank.source_edges(source):
        pairs = np.column_stack([chunk.src, chunk.dst])
        yield "".join(f"{s} {d}\n" for s, d in pairs.tolist()).encode()


def _write(folder: Path, splits: list) -> list[Path]:  # type: ignore[type-arg]
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for index, chunks in enumerate(splits):
        path = folder / f"split-{index:05d}"
        with open(path, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
        paths.append(path)
    return paths
