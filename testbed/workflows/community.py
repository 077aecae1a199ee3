"""Musketeer's cross-community PageRank (Gog 2017, §4.3.2): the edges two web communities
share (an INTERSECT of their edge sets), then PageRank rounds on that graph (a WHILE of
joins and GROUP BYs), built with the Python builder (SQL cannot say the loop).

The dissertation's graphs (LiveJournal and a synthetic web community) are not shipped here:
``python -m testbed.workflows.community --nodes N --out DIR`` writes two seeded communities,
``DIR/community_a.tbl`` and ``DIR/community_b.tbl``, each a random part of one random graph's
edges, so they share about a third of them."""

from __future__ import annotations

import argparse
import contextlib
import random
from pathlib import Path

from testbed.workflows.builder import Flow, table

DATA = Path("scenarios/workflows/data")
EDGES = {"src": "int", "dst": "int"}
OUT_DEGREE = 8
"""Edges a node has in the generated graph (before each community keeps its part)."""
KEEP = 0.6
"""The share of the graph's edges each community keeps: they share about KEEP squared."""
ROUNDS = 5
"""Musketeer's five PageRank iterations."""


def generate(nodes: int, directory: Path, seed: int = 1) -> tuple[Path, Path]:
    """The two communities' edge files (kept when already there), pipe-delimited, written
    aside and renamed."""
    paths = (directory / "community_a.tbl", directory / "community_b.tbl")
    if all(p.exists() for p in paths):
        return paths
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    partials = [p.with_suffix(".tbl.inprogress") for p in paths]
    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(open(p, "w", encoding="utf-8")) for p in partials]
        for src in range(1, nodes + 1):
            for dst in {rng.randrange(1, nodes + 1) for _ in range(OUT_DEGREE)} - {src}:
                for handle in handles:
                    if rng.random() < KEEP:
                        handle.write(f"{src}|{dst}|\n")
    for partial, path in zip(partials, paths, strict=True):
        partial.rename(path)
    return paths


def cross_community(a: str, b: str, rounds: int = ROUNDS, splits: int | None = None) -> Flow:
    """Ranks of the nodes of the shared graph after ``rounds`` PageRank rounds, every node
    starting at 1.0: rank(v) = 0.15 + 0.85 x the sum of rank(u) / out-degree(u) over the
    shared edges u -> v (a node no shared edge enters drops out, as in MapReduce PageRank)."""
    shared = _edges("community_a", a, splits).intersect(_edges("community_b", b, splits))
    degrees = shared.group_by("src").agg(degree=("count", None)).select(node="src", degree="degree")
    links = shared.join(degrees, {"src": "node"}).select("src", "dst", weight="1.0 / degree")
    ranks = shared.select(node="src").union(shared.select(node="dst")).select("node", rank="1.0")

    def round_(state: Flow) -> Flow:
        shares = state.join(links, {"node": "src"}).select(node="dst", share="rank * weight")
        return shares.group_by("node").agg(total=("sum", "share")).select("node", rank="0.15 + 0.85 * total")

    return ranks.loop(round_, rounds=rounds)


def _edges(name: str, path: str, splits: int | None) -> Flow:
    return table(name, path, EDGES, splits=splits).select(src=f"{name}.src", dst=f"{name}.dst")


def build() -> Flow:
    """The shipped scenario's workflow (scenarios/workflows/cross-community-pagerank.yaml)."""
    return cross_community(str(DATA / "community_a.tbl"), str(DATA / "community_b.tbl"), splits=4)


def reference(a: Path, b: Path, rounds: int = ROUNDS) -> dict[int, float]:
    """The same ranks computed directly over the two files (sets and dicts), for the tests."""

    def edges(path: Path) -> set[tuple[int, int]]:
        return {(int(s), int(d)) for s, d, _ in (line.split("|") for line in path.read_text().splitlines())}

    shared = edges(a) & edges(b)
    degree: dict[int, int] = {}
    for src, _ in shared:
        degree[src] = degree.get(src, 0) + 1
    ranks = {node: 1.0 for edge in shared for node in edge}
    for _ in range(rounds):
        totals: dict[int, float] = {}
        for src, dst in shared:
            if src in ranks:
                totals[dst] = totals.get(dst, 0.0) + ranks[src] * (1.0 / degree[src])
        ranks = {node: 0.15 + 0.85 * total for node, total in totals.items()}
    return ranks


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="generate cross-community PageRank's two edge sets")
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args(argv)
    print(*generate(args.nodes, args.out, args.seed))


if __name__ == "__main__":
    main()
