"""The simulator's PageRank output sizes (testbed/workloads/pagerank/sizes.py) against the real
tasks: each job runs in this process (``LocalJob``, the agents' task code) and every task's
bytes out is compared with what the formula gives its spec."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from testbed.scenario.schema import PagerankJob
from testbed.workloads import pagerank
from testbed.workloads.local import LocalJob
from testbed.workloads.pagerank import sizes as pagerank_sizes

SEED = 5
BUDGET = 64 << 20
OPS = ("pagerank.edges", "pagerank.links", "pagerank.scatter", "pagerank.iterate")
SHAPES = [
    {"nodes": 20_000, "edges": 100_000, "maps": 2, "reduces": 4},  # folded: 2**15 ids onto 20,000
    {"nodes": 4096, "edges": 150_000, "maps": 3, "reduces": 3},  # dense, no fold
    {"nodes": 50_000, "edges": 60_000, "maps": 1, "reduces": 5},  # sparse
]
TOLERANCE = 0.02
"""The formula is an expectation over the generator; one seed's graph differs by its sampling
noise (and the fold, neglected in the edge counts)."""


@pytest.mark.parametrize("nodes", [2, 3, 5, 100, 1000, 1024, 1025, 20_000, 100_000])
def test_fold_classes_count_every_id_once(nodes: int) -> None:
    scale = pagerank_sizes.scale_of(nodes)
    ids = np.arange(1 << scale)
    ones = np.array([bin(i).count("1") for i in ids.tolist()])
    folded = ids[nodes:] - nodes
    alone, paired = pagerank_sizes.fold_classes(nodes)
    expected_paired = np.zeros_like(paired)
    np.add.at(expected_paired, (ones[folded], ones[nodes:]), 1)
    single = np.setdiff1d(ids[:nodes], folded)
    assert np.array_equal(paired, expected_paired)
    assert np.array_equal(alone, np.bincount(ones[single], minlength=scale + 1))


def generated_graph(job: PagerankJob) -> tuple[np.ndarray, np.ndarray]:
    """The job's edges as its edges tasks generate them."""
    chunks = [chunk for source in pagerank.sources_of(job, SEED) for chunk in pagerank.source_edges(source)]
    return np.concatenate([c.src for c in chunks]), np.concatenate([c.dst for c in chunks])


@pytest.mark.parametrize("shape", SHAPES)
def test_the_graph_counts_are_the_generated_graphs(shape: dict[str, int]) -> None:
    job = PagerankJob(workload="pagerank", **shape)
    src, dst = generated_graph(job)
    edges = np.unique(src * job.nodes + dst)
    contributions = np.unique(pagerank.owner(src, job.reduces).astype(np.int64) * job.nodes + dst)
    expected = pagerank_sizes.graph_shape(job.nodes, job.edges, job.reduces)
    assert expected.nodes == pytest.approx(len(np.union1d(src, dst)), rel=TOLERANCE)
    assert expected.edges == pytest.approx(len(edges), rel=TOLERANCE)
    assert expected.contributions == pytest.approx(len(contributions), rel=TOLERANCE)


@pytest.mark.parametrize("tolerance", [None, 1e-12])
@pytest.mark.parametrize("shape", SHAPES)
def test_each_ops_bytes_out_is_the_real_tasks(
    tmp_path: Path, shape: dict[str, int], tolerance: float | None
) -> None:
    job = PagerankJob(workload="pagerank", iterations=2, tolerance=tolerance, **shape)
    local = LocalJob(pagerank.plan(job, SEED), tmp_path).run(BUDGET)
    real = dict.fromkeys(OPS, 0)
    model = dict.fromkeys(OPS, 0)
    for run in local.tasks.values():
        predicted = pagerank_sizes.task_bytes(run.spec)
        assert predicted is not None
        if run.spec.final:
            assert predicted == run.metrics.bytes_out == 0  # the ranks go to the sink
            continue
        real[run.spec.op] += run.metrics.bytes_out
        model[run.spec.op] += predicted
    for op in OPS:
        assert model[op] == pytest.approx(real[op], rel=TOLERANCE), op


def test_a_graph_read_from_files_has_no_shape(tmp_path: Path) -> None:
    (tmp_path / "g.txt").write_text("1 2\n2 3\n3 1\n")
    job = PagerankJob(workload="pagerank", input=str(tmp_path / "g.txt"), maps=1, reduces=2, iterations=2)
    local = LocalJob(pagerank.plan(job, SEED), tmp_path / "work").run(BUDGET)
    assert {pagerank_sizes.task_bytes(r.spec) for r in local.tasks.values() if not r.spec.final} == {None}
