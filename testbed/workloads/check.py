"""Output validation: a job's output directory against an independent reference.

``check_output(job, seed, directory)`` returns the problems found (empty when
the output is correct):

- sort: like valsort, keys in order across the part files (in partition
  order), and the record count and order-independent checksum equal the
  input's;
- wordcount: every part sorted by word, no word in two parts, and the counts
  equal a plain single-process count of the input;
- pagerank: the ranks sum to 1 and equal a single-process scipy.sparse power
  iteration within a relative 1e-9;
- mlr: the model equals a single-process numpy gradient descent within 1e-9 of its
  largest weight (``mlr.RTOL`` says why);
- sql: the rows equal DuckDB's answer to the same query on the same files (exactly but
  for floats, to ``reference.FLOAT_TOLERANCE``; in order where the query orders);
- a workload plugin: the output lines, as a multiset, equal the plugin's reference
  (its ``reference``, else its ``map`` and ``reduce`` in one process; ``user.py``).

``REFERENCES`` gives, per workload, ``reference_output(job, seed)`` and
``read_output(directory)`` whose results compare (for PageRank with
``Ranks.matches``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from testbed.scenario.schema import PluginJob
from testbed.workloads import mlr, pagerank_reference, sort, user, wordcount
from testbed.workloads.sql import check_sql

REFERENCES: dict[str, tuple[Callable[[Any, int], Any], Callable[[Path], Any]]] = {
    "sort": (sort.reference_output, lambda d: sort.read_output(d).comparable()),
    "wordcount": (wordcount.reference_output, wordcount.read_output),
    "pagerank": (pagerank_reference.reference_output, pagerank_reference.read_output),
    "mlr": (mlr.reference_output, mlr.read_output),
}


def check_output(job: Any, seed: int, directory: Path) -> list[str]:
    directory = Path(directory)
    if not directory.is_dir():
        return [f"{directory}: no such output directory"]
    if not list(directory.glob("part-*")):
        return [f"{directory}: no part-* files"]
    if isinstance(job, PluginJob):
        return user.check_plugin(job, seed, directory)
    checks = {
        "sort": _check_sort,
        "wordcount": _check_wordcount,
        "pagerank": _check_pagerank,
        "mlr": mlr.check,
        "sql": check_sql,
    }
    if job.workload not in checks:
        return [f"no output check for workload {job.workload!r}"]
    return checks[job.workload](job, seed, directory)


def _check_sort(job: Any, seed: int, directory: Path) -> list[str]:
    try:
        got = sort.read_output(directory)
    except ValueError as exc:
        return [str(exc)]
    expected = sort.input_summary(job, seed)
    problems = []
    if not got.ordered:
        problems.append(f"record {got.first_disorder} has a key smaller than the record before it")
    if got.records != expected.records:
        problems.append(f"{got.records} records, the input has {expected.records}")
    if got.checksum != expected.checksum:
        problems.append(f"checksum {got.checksum:016x} differs from the input's {expected.checksum:016x}")
    return problems


def _check_wordcount(job: Any, seed: int, directory: Path) -> list[str]:
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
    got, expected = wordcount.read_output(directory), wordcount.reference_output(job, seed)
    if got != expected:
        wrong = sorted(w for w in got.keys() | expected.keys() if got[w] != expected[w])
        sample = ", ".join(f"{w!r}: {got[w]} (expected {expected[w]})" for w in wrong[:3])
        problems.append(f"{len(wrong)} words have wrong counts, e.g. {sample}")
    return problems


def _check_pagerank(job: Any, seed: int, directory: Path) -> list[str]:
    try:
        got = pagerank_reference.read_output(directory)
    except ValueError as exc:
        return [f"unreadable output: {exc}"]
    expected = pagerank_reference.reference_output(job, seed)
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
