from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from testbed.wire.protocol import TaskMetrics
from testbed.workloads import pagerank, sort
from testbed.workloads.pair_spill import PairBuffer
from testbed.workloads.spill import ArrayBuffer, SpillFiles, merge_plan, merge_sorted

PARTS = 3


def contributions(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    records = np.empty(count, dtype=pagerank.CONTRIB_DTYPE)
    records["dst"] = rng.integers(0, 5_000, count)
    records["value"] = rng.random(count)
    return records, (records["dst"] % PARTS).astype(np.uint16)


def drain(buffer) -> dict[int, list]:
    return {
        p: [x for chunk in chunks for x in (chunk.tolist() if hasattr(chunk, "tolist") else [chunk])]
        for p, chunks in buffer.finish()
    }


@pytest.mark.parametrize(("limit", "spills"), [(1 << 30, False), (60_000, True), (20_000, True)])
def test_array_buffer_combines_sorts_and_spills(tmp_path: Path, limit: int, spills: bool):
    metrics = TaskMetrics()
    buffer = ArrayBuffer(pagerank.CONTRIBS, PARTS, limit, SpillFiles(tmp_path, metrics))
    expected: dict[int, Counter] = {p: Counter() for p in range(PARTS)}
    for seed in range(30):
        records, parts = contributions(2_000, seed)
        buffer.add(records, parts)
        for dst, value in records.tolist():
            expected[dst % PARTS][dst] += value
    for partition, chunks in buffer.finish(1 << 16):
        got = np.concatenate(list(chunks))
        assert np.all(np.diff(got["dst"]) > 0), "sorted and one record per key"
        assert got["dst"].tolist() == sorted(expected[partition])
        assert np.allclose(got["value"], [expected[partition][d] for d in got["dst"].tolist()])
    assert (metrics.spill_bytes > 0) == spills
    assert metrics.peak_buffered_bytes >= min(limit, 30 * 2_000 * 18) // 2
    assert not list(tmp_path.iterdir())


def test_small_limits_merge_in_several_passes(tmp_path: Path):
    metrics = TaskMetrics()
    buffer = ArrayBuffer(pagerank.EDGES_SORTED, 1, 100_000, SpillFiles(tmp_path, metrics))
    rng = np.random.default_rng(2)
    edges = np.empty(200_000, dtype=pagerank.EDGE_DTYPE)
    edges["src"], edges["dst"] = rng.integers(0, 30_000, (2, len(edges)))
    for start in range(0, len(edges), 5_000):
        buffer.add(edges[start : start + 5_000], np.zeros(5_000, np.uint8))
    got = np.concatenate([c for _, chunks in buffer.finish(1 << 16) for c in chunks])
    assert got.tolist() == sorted(set(edges.tolist()))
    assert metrics.spills > 10 and metrics.merge_passes >= 2
    assert not list(tmp_path.iterdir())


def test_merge_sorted_keeps_every_record_in_order():
    kind = pagerank.CONTRIBS
    rng = np.random.default_rng(4)
    runs = []
    for _ in range(5):
        r = np.empty(rng.integers(1, 400), dtype=kind.dtype)
        r["dst"] = np.sort(rng.integers(0, 50, len(r)))
        r["value"] = 1.0
        runs.append(r)
    sources = [iter(np.array_split(r, 7)) for r in runs]
    merged = np.concatenate(list(merge_sorted(sources, kind)))
    assert merged["dst"].tolist() == sorted(np.concatenate(runs)["dst"].tolist())


@pytest.mark.parametrize("limit", [1 << 30, 30_000])
def test_pair_buffer_sums_counts_under_a_limit(tmp_path: Path, limit: int):
    metrics = TaskMetrics()
    buffer = PairBuffer(lambda w: len(w) % PARTS, PARTS, limit, SpillFiles(tmp_path, metrics))
    rng = np.random.default_rng(1)
    expected: Counter[str] = Counter()
    for _ in range(20):
        pairs = [
            (f"w{n}", int(c))
            for n, c in zip(rng.integers(0, 3_000, 500), rng.integers(1, 9, 500), strict=True)
        ]
        expected.update(dict(Counter({w: 0 for w, _ in pairs})))
        for w, c in pairs:
            expected[w] += c
        buffer.add_counts(pairs)
    got: Counter[str] = Counter()
    for partition, pairs in buffer.finish():
        items = list(pairs)
        assert [w for w, _ in items] == sorted({w for w, _ in items})
        assert all(len(w) % PARTS == partition for w, _ in items)
        got.update(dict(items))
    assert got == expected
    assert (metrics.spill_bytes > 0) == (limit < 1 << 30)
    if limit < 1 << 30:
        assert metrics.merge_passes >= 2
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(
    ("runs", "factor", "takes"),
    [
        (9, 10, []),
        (10, 10, []),
        (11, 10, [2]),
        (19, 10, [10]),
        (33, 10, [6, 10, 10]),
        (5, 2, [2, 2, 2]),
    ],
)
def test_merge_plan_follows_hadoops_merger(runs: int, factor: int, takes: list[int]):
    """Hadoop's Merger: the first pass takes just enough runs that every later one takes
    ``factor``, and the final merge reads exactly ``factor`` runs (or all, if fewer)."""
    sizes = list(range(runs, 0, -1))  # the last runs are the smallest
    plan = merge_plan(sizes, factor)
    assert [len(p) for p in plan] == takes
    if plan:
        assert plan[0] == list(range(runs - takes[0], runs)), "the smallest runs first"
        assert runs - sum(t - 1 for t in takes) == factor
    seen = [i for p in plan for i in p]
    assert len(seen) == len(set(seen)), "a run is merged once"


def test_merge_plan_refuses_a_factor_below_two():
    with pytest.raises(ValueError, match="at least 2"):
        merge_plan([1, 2, 3], 1)


def test_intermediate_passes_rewrite_only_the_smallest_runs(tmp_path: Path):
    """13 runs and a sort factor of 10: one pass over the 4 smallest runs, then the final
    merge (before: the fan-in came from the memory left beside the last buffer, 2 here,
    and every pass rewrote every run: 4 passes, about 4 times the input spilled)."""
    metrics = TaskMetrics()
    buffer = ArrayBuffer(sort.SORT_KIND, 1, 200_000, SpillFiles(tmp_path, metrics))
    records = np.concatenate(list(sort.generate_split(3, 0, 0, 24_500)))
    for start in range(0, len(records), 500):
        piece = records[start : start + 500]
        buffer.add(piece, np.zeros(len(piece), np.uint8))
    got = np.concatenate([c for _, chunks in buffer.finish(1 << 16) for c in chunks])
    assert got["key"].tolist() == sorted(records["key"].tolist())
    assert sorted(sort.record_hashes(got).tolist()) == sorted(sort.record_hashes(records).tolist())
    assert metrics.spills == 13
    assert metrics.merge_passes == 2
    assert records.nbytes < metrics.spill_bytes < 1.5 * records.nbytes
    assert not list(tmp_path.iterdir())
