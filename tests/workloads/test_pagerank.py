from __future__ import annotations

import math

import numpy as np
import pytest

from testbed.scenario.schema import PagerankJob
from testbed.workloads import edge_lists, pagerank
from testbed.workloads.check import check_output
from testbed.workloads.pagerank import reference as pagerank_reference

SEED = 3


def dense_pagerank(edges: list[tuple[int, int]], d: float, iterations: int) -> dict[int, float]:
    """A plain-Python power iteration: independent of the numpy reference and the workload."""
    nodes = sorted({n for e in edges for n in e})
    links = {n: sorted({v for u, v in edges if u == n}) for n in nodes}
    n = len(nodes)
    rank = {v: 1 / n for v in nodes}
    for _ in range(iterations):
        dangling = sum(rank[u] for u in nodes if not links[u])
        new = {v: (1 - d) / n + d * dangling / n for v in nodes}
        for u in nodes:
            for v in links[u]:
                new[v] += d * rank[u] / len(links[u])
        rank = new
    return rank


def test_reference_equals_a_plain_power_iteration():
    edges = [(0, 1), (1, 2), (2, 0), (2, 0), (3, 3), (4, 2), (2, 7)]
    src, dst = (np.array(x) for x in zip(*edges, strict=True))
    ref = pagerank_reference.reference_ranks(src, dst, 0.85, 6)
    plain = dense_pagerank(edges, 0.85, 6)
    assert ref.ids.tolist() == sorted(plain)
    assert np.allclose(ref.ranks, [plain[n] for n in sorted(plain)], rtol=1e-12)


@pytest.mark.parametrize("fraction", [1.0, 0.1])
def test_generated_graph_equals_reference(run_at, fraction):
    job = PagerankJob(workload="pagerank", nodes=20_000, edges=30_000, maps=2, reduces=3, iterations=3)
    local = run_at(job, SEED, fraction)
    got = pagerank_reference.read_output(local.outputs)
    assert got.matches(pagerank_reference.reference_output(job, SEED))
    assert math.isclose(math.fsum(got.ranks.tolist()), 1.0, rel_tol=1e-12)
    spilled = local.total("spill_bytes")
    assert (spilled > 0) if fraction < 1 else (spilled == 0)
    if fraction < 1:
        assert local.total("spill_bytes", 1) > 0 and local.total("spill_bytes", 3) > 0
    assert check_output(job, SEED, local.outputs) == []


@pytest.mark.parametrize("fraction", [1.0, 0.1])
def test_edge_list_file_with_comments_duplicates_and_self_loops(run_at, tmp_path, fraction):
    rng = np.random.default_rng(9)
    edges = [(int(a), int(b)) for a, b in rng.integers(0, 400, (3_000, 2)) * 1_000_003]
    edges += [(7, 7), (7, 7), (10**12, 5)]
    text = "# a comment line\n" + "".join(
        f"{u}\t{v}  # inline\n" if i % 7 == 0 else f"{u} {v}\n"
        for i, (u, v) in enumerate(edges + edges[:100])
    )
    (tmp_path / "g.txt").write_text(text + "\n\n42 7")
    job = PagerankJob(workload="pagerank", input=str(tmp_path / "g.txt"), maps=3, reduces=2, iterations=5)
    local = run_at(job, SEED, fraction)
    got = pagerank_reference.read_output(local.outputs)
    plain = {str(n): r for n, r in dense_pagerank([*edges, (42, 7)], 0.85, 5).items()}
    assert got.ids.tolist() == sorted(plain)
    assert np.allclose(got.ranks, [plain[n] for n in sorted(plain)], rtol=1e-9)
    assert (local.total("spill_bytes") > 0) == (fraction < 1)


def test_tolerance_stops_like_the_reference(run_at):
    base = dict(workload="pagerank", nodes=500, edges=4_000, maps=1, reduces=2, iterations=40)
    job = PagerankJob(**base, tolerance=1e-4)
    got = pagerank_reference.read_output(run_at(job, SEED, 1.0).outputs)
    assert got.matches(pagerank_reference.reference_output(job, SEED))
    full = pagerank_reference.reference_output(PagerankJob(**base), SEED)
    assert not got.matches(full, rtol=1e-12)
    assert np.abs(got.ranks - full.ranks).sum() < 1e-3


def test_malformed_lines_are_refused():
    with pytest.raises(ValueError, match="expected 'src dst'"):
        edge_lists.parse_edges(b"1 2\n3 4 5\n")
    with pytest.raises(ValueError, match="expected 'src dst'"):
        edge_lists.parse_edges(b"1\n")


def test_integers_are_their_own_ids_and_other_tokens_are_named():
    chunk = edge_lists.parse_edges(b"7 0ad\n007 -2\n0 7\n")
    assert chunk.src.tolist()[2:] == [0] and chunk.dst.tolist()[2] == 7 and chunk.src[0] == 7
    named = [chunk.dst[0], chunk.src[1], chunk.dst[1]]
    assert all(i >= edge_lists.NAMED for i in named) and len(set(named)) == 3
    assert sorted(chunk.names.values()) == [b"-2", b"007", b"0ad"]
    assert edge_lists.node_names(np.array([*named, 7]), chunk.names) == [b"0ad", b"007", b"-2", b"7"]


@pytest.mark.parametrize(
    "token", [b"007", b"-2", b"+3", b"1_0", b"4611686018427387904", b"99999999999999999999"]
)
def test_every_chunk_gives_a_token_the_same_id(token: bytes) -> None:
    """Integer-only chunks take a fast path: a token that is not its own id must not slip
    through it, or two splits would give one node two ids."""
    alone = edge_lists.parse_edges(b"1 " + token + b"\n")  # all integers to numpy
    mixed = edge_lists.parse_edges(b"x " + token + b"\n")  # a name in the chunk
    assert alone.dst[0] == mixed.dst[0] == edge_lists.node_id(token) >= edge_lists.NAMED
    assert alone.names == {int(alone.dst[0]): token}
    biggest = str(edge_lists.NAMED - 1).encode()
    assert (
        edge_lists.parse_edges(b"1 " + biggest + b"\n").dst[0]
        == edge_lists.node_id(biggest)
        == edge_lists.NAMED - 1
    )


NAMED_EDGES = [
    ("0ad", "libc"),
    ("libc", "linux-kernel"),
    ("foo-bar", "0ad"),
    ("linux-kernel", "libc"),
    ("https://x.org/a?b=1", "0ad"),
    ("12", "libc"),
    ("012", "12"),
    ("über", "foo-bar"),
    ("dangling", "nobody"),
]


@pytest.mark.parametrize("fraction", [1.0, 0.1])
def test_named_nodes_keep_their_names_and_equal_the_reference(run_at, tmp_path, fraction):
    rng = np.random.default_rng(5)
    names = [f"pkg-{i:x}" for i in range(300)]
    edges = NAMED_EDGES + [(names[a], names[b]) for a, b in rng.integers(0, 300, (2_000, 2))]
    (tmp_path / "g.tsv").write_text("# deps\n" + "".join(f"{u}\t{v}\n" for u, v in edges), encoding="utf-8")
    job = PagerankJob(workload="pagerank", input=str(tmp_path / "g.tsv"), maps=3, reduces=3, iterations=6)
    local = run_at(job, SEED, fraction)
    got = pagerank_reference.read_output(local.outputs)
    index = {n: i for i, n in enumerate(sorted({n for e in edges for n in e}))}
    plain = dense_pagerank([(index[u], index[v]) for u, v in edges], 0.85, 6)
    assert got.ids.tolist() == sorted(index) and "über" in index and "012" in index and "12" in index
    assert np.allclose(got.ranks, [plain[index[n]] for n in got.ids.tolist()], rtol=1e-9)
    assert check_output(job, SEED, local.outputs) == []


def test_names_with_one_hash_are_refused():
    names: dict[int, bytes] = {5: b"a"}
    with pytest.raises(ValueError, match="'a' and 'b' have the same 62-bit hash"):
        pagerank._merge_names(names, {5: b"b"})


def test_check_output_catches_a_wrong_rank(run_at):
    job = PagerankJob(workload="pagerank", nodes=200, edges=1_000, maps=1, reduces=2, iterations=2)
    local = run_at(job, SEED, 1.0)
    part = sorted(local.outputs.glob("part-*"))[0]
    lines = part.read_text().splitlines()
    node, _, rank = lines[0].partition("\t")
    lines[0] = f"{node}\t{float(rank) * 1.001!r}"
    part.write_text("\n".join(lines) + "\n")
    problems = check_output(job, SEED, local.outputs)
    assert any("sum to" in p for p in problems) and any(f"node {node}" in p for p in problems)
