"""PageRank's single-process reference and its output reader, for ``check-output`` and tests.

The reference is a power iteration with scipy.sparse over the whole graph. Input files
are listed and read by ``testbed.workloads.reference_inputs`` and numbered by a parser
of their own (dense ids, no hashing), so it shares none of the distributed job's code
for user inputs; generated graphs are regenerated with the workload's own generator.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from testbed.scenario.schema import PagerankJob
from testbed.workloads.pagerank import parse_edges, source_edges, sources_of
from testbed.workloads.reference_inputs import line_chunks, reference_files


@dataclass(frozen=True)
class Ranks:
    """Nodes (their ids, or names as the input wrote them, sorted) and their ranks."""

    ids: np.ndarray
    ranks: np.ndarray

    @classmethod
    def by_name(cls, names: list[str], ranks: list[float] | np.ndarray) -> Ranks:
        order = sorted(range(len(names)), key=names.__getitem__)
        return cls(np.array([names[i] for i in order], dtype=object), np.asarray(ranks, dtype=float)[order])

    def matches(self, other: Ranks, rtol: float = 1e-9) -> bool:
        """Same nodes and ranks equal within ``rtol`` (summation order differs between runs)."""
        return bool(
            np.array_equal(self.ids, other.ids) and np.allclose(self.ranks, other.ranks, rtol=rtol, atol=0)
        )


def job_edges(job: PagerankJob, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The edges of a job as the workload's own parser reads them (64-bit ids), for the
    reference: input files are listed and read by ``reference_inputs``, not by the code under test."""
    if job.input:
        files = reference_files(job.input)
        pieces = [parse_edges(chunk, str(path)) for path in files for chunk in line_chunks(path)]
    else:
        pieces = [chunk for source in sources_of(job, seed) for chunk in source_edges(source)]
    if not pieces:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate([c.src for c in pieces]), np.concatenate([c.dst for c in pieces])


@dataclass(frozen=True)
class LinkMatrix:
    """A graph as the column-stochastic matrix of the single-process reference."""

    ids: np.ndarray
    matrix: Any
    dangling: np.ndarray

    def step(self, ranks: np.ndarray, damping: float) -> np.ndarray:
        """One power iteration: dangling pages spread their rank evenly over all pages."""
        n = len(self.ids)
        return (1 - damping) / n + damping * (self.matrix @ ranks + ranks[self.dangling].sum() / n)


def link_matrix(src: np.ndarray, dst: np.ndarray) -> LinkMatrix:
    """Duplicate edges count once; pages are the ids that appear in any edge."""
    import scipy.sparse as sp

    ids, inverse = np.unique(np.concatenate([src, dst]), return_inverse=True)
    n = len(ids)
    s, t = inverse[: len(src)], inverse[len(src) :]
    unique = np.unique(s.astype(np.int64) * n + t)
    s, t = unique // n, unique % n
    outdeg = np.bincount(s, minlength=n).astype(float)
    matrix = sp.csr_matrix((1.0 / outdeg[s], (t, s)), shape=(n, n))
    return LinkMatrix(ids, matrix, outdeg == 0)


def reference_ranks(
    src: np.ndarray, dst: np.ndarray, damping: float, iterations: int, tolerance: float | None = None
) -> Ranks:
    """Single-process power iteration with scipy.sparse, the same formula and stopping rule."""
    links = link_matrix(src, dst)
    ranks = np.full(len(links.ids), 1.0 / len(links.ids))
    for _ in range(iterations):
        new = links.step(ranks, damping)
        change = np.abs(new - ranks).sum()
        ranks = new
        if tolerance and change < tolerance:
            break
    return Ranks(links.ids, ranks)


def reference_output(job: PagerankJob, seed: int) -> Ranks:
    """The ranks by node name: files are read by a parser of their own, which numbers the
    distinct tokens densely (no hashing), generated graphs keep their integer ids."""
    if job.input:
        names, src, dst = _dense_edges(reference_files(job.input))
    else:
        src, dst = job_edges(job, seed)
        names = None
    ranks = reference_ranks(src, dst, job.damping, job.iterations, job.tolerance)
    ids = ranks.ids.tolist() if names is None else [names[i] for i in ranks.ids.tolist()]
    return Ranks.by_name([str(i) for i in ids], ranks.ranks)


def _dense_edges(paths: list[Path]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Every node token numbered 0..N-1 in order of first appearance, and the edges so numbered."""
    numbers: dict[bytes, int] = {}
    ends: list[int] = []
    for path in paths:
        for line in (line for chunk in line_chunks(path) for line in chunk.splitlines()):
            tokens = line.split(b"#", 1)[0].split()
            if len(tokens) not in (0, 2):
                found = line[:80].decode("utf-8", errors="replace")
                raise ValueError(f"{path}: expected 'src dst' per line, found {found!r}")
            ends.extend(numbers.setdefault(t, len(numbers)) for t in tokens)
    pairs = np.array(ends, dtype=np.int64).reshape(-1, 2)
    names = [t.decode("utf-8", errors="surrogateescape") for t in numbers]
    return names, pairs[:, 0], pairs[:, 1]


def read_output(directory: Path) -> Ranks:
    names, ranks = [], []
    for part in sorted(Path(directory).glob("part-*")):
        for line in part.read_bytes().splitlines():
            node, _, rank = line.partition(b"\t")
            names.append(node.decode("utf-8", errors="surrogateescape"))
            ranks.append(float(rank))
    return Ranks.by_name(names, ranks)


def check_ranks(job: PagerankJob, seed: int, directory: Path) -> list[str]:
    """The problems of a job's ranks against ``reference_output``'s (empty: none)."""
    try:
        got = read_output(directory)
    except ValueError as exc:
        return [f"unreadable output: {exc}"]
    expected = reference_output(job, seed)
    problems = []
    total = math.fsum(got.ranks.tolist())
    if abs(total - 1.0) > 1e-9:
        problems.append(f"ranks sum to {total!r}, not 1")
    if not np.array_equal(got.ids, expected.ids):
        problems.append(
            f"{len(got.ids)} nodes in the output, {len(expected.ids)} in the graph (or other ids)"
        )
    elif not got.matches(expected):
        worst = int(np.argmax(np.abs(got.ranks - expected.ranks)))
        problems.append(
            f"node {got.ids[worst]} has rank {got.ranks[worst]!r}, expected {expected.ranks[worst]!r}"
        )
    return problems
