"""The bytes a PageRank task writes, from the shape of its generated graph: what the simulator
gives a task instead of its op's output ratio (``master/execution_model.py``).

A PageRank task's output is not a share of its input: links writes the partition's distinct
edges and its node table, a scatter or iterate task one combined contribution per destination
node its edges reach in each partition. Those counts are functions of the graph (nodes,
edges, partitions) and the generator's skew: ratios fitted on one graph mispredicted another
(0.0958 and 0.1168 for iterate and scatter, against 0.17 and 0.205 in pado-vs-spark's real
runs). This module gives their expected values over the R-MAT generator of
``pagerank.rmat_piece``, and the bytes the tasks write them in.

The generator draws each of an edge's ``s = ceil(log2 nodes)`` bit levels from the quadrants
(a, b, c, d) = (source bit 0, destination bit 0), (0, 1), (1, 0), (1, 1), over the ids
``0 .. 2**s - 1``, and folds an id ``>= nodes`` onto ``id - nodes``. So the probability of the
edge (u, v) among the 2**s ids is ``a^i b^j c^k d^l`` (i, j, k, l: how many levels take each
quadrant), of u as a source ``(c+d)^ones (a+b)^zeros`` and of v as a destination
``(b+d)^ones (a+c)^zeros``: every sum below is over classes of ids (their one bits), not
over ids. Folding: a node ``w < 2**s - nodes`` is two ids (w and w + nodes), whose one bits
a digit count over the addition gives (``fold_classes``). With the edges' presences
independent (each of the E edges is an independent draw):

- nodes (every id an edge touches): ``sum_w 1 - (1 - t_w)^E``, t_w the chance that one edge
  touches w (its source and destination taken as independent: they share a level's draw,
  which moves t_w by under 1% of itself for the busiest node);
- distinct edges: ``sum_(u,v) 1 - (1 - p_uv)^E`` over the 2**s x 2**s ids;
- contributions: a scatter task sends a destination v one record if some source of its
  partition links to v; the owner hash spreads sources evenly and independently, so partition
  j reaches v with probability ``1 - prod_u (1 - present_uv / P)``.

The folding is exact in the node counts and neglected in the two edge counts (two edges that
a fold makes one are counted twice): under 1% on the graphs of tests/workloads/
test_pagerank_sizes.py, which runs the real tasks and compares their bytes. A seed's graph
differs from the expectation by its sampling noise. A graph read from files has no shape
here: its tasks keep their ops' ratios.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import msgpack
import numpy as np

from testbed.wire.blocks import FRAME_HEADER
from testbed.wire.protocol import TaskSpec
from testbed.workloads.pagerank import (
    CONTRIB_DTYPE,
    EDGE_DTYPE,
    NODE_DTYPE,
    PIECE_EDGES,
    RANK_DTYPE,
    RMAT,
    chunk_bytes,
)

MB = 2**20
NODE_TABLE_ROWS = 1 << 16
"""Rows per frame of a links task's node table (``pagerank.links_task``)."""
TAG = 1
"""The tag byte in front of an edges, header, contributions or ranks frame."""


@dataclass(frozen=True, slots=True)
class GraphShape:
    """Expected counts of a generated graph cut into ``partitions``."""

    nodes: float
    """Nodes some edge touches: the rows of the node tables."""
    edges: float
    """Distinct edges: links' partition 0."""
    contributions: float
    """(partition, destination) pairs with an edge from a source of the partition to the
    destination: the records every scatter (or iterate) stage writes."""


def scale_of(nodes: int) -> int:
    """The generator's bit levels (``pagerank.rmat_piece``)."""
    return max(1, math.ceil(math.log2(nodes)))


def popcounts_below(bound: int, scale: int) -> np.ndarray:
    """``counts[k]``: the integers in ``[0, bound)`` with k one bits (``bound <= 2**scale``)."""
    counts = np.zeros(scale + 1)
    ones = 0
    for bit in reversed(range(scale + 1)):
        if bound >> bit & 1:  # the integers equal to bound above this bit, 0 at it, anything below
            for below in range(bit + 1):
                counts[ones + below] += math.comb(bit, below)
            ones += 1
    return counts


@lru_cache(maxsize=64)
def fold_classes(nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """``(alone, paired)`` over the nodes ``0 .. nodes - 1``: ``alone[k]``, how many are one id
    with k one bits; ``paired[k1, k2]``, how many are two ids, w (k1 one bits) and w + nodes
    (k2), since the generator folds the second onto the first.

    The pairs are the w below ``2**s - nodes``: a digit count over the bits of w, lowest
    first, carrying the addition's carry and how w's bits so far compare with the bound's."""
    scale = scale_of(nodes)
    bound = (1 << scale) - nodes
    size = scale + 1
    start = np.zeros((size, size))
    start[0, 0] = 1.0
    states: dict[tuple[int, int], np.ndarray] = {(0, 0): start}  # (carry, w's low bits vs bound's: -1, 0, 1)
    for bit in range(scale):
        node_bit, bound_bit = nodes >> bit & 1, bound >> bit & 1
        after: dict[tuple[int, int], np.ndarray] = {}
        for (carry, order), counts in states.items():
            for w_bit in (0, 1):
                total = w_bit + node_bit + carry
                sum_bit = total & 1
                key = (total >> 1, order if w_bit == bound_bit else w_bit - bound_bit)
                moved = np.zeros((size, size))
                moved[w_bit:, sum_bit:] = counts[: size - w_bit, : size - sum_bit]
                after[key] = after[key] + moved if key in after else moved
        states = after
    paired = sum((counts for (_, order), counts in states.items() if order < 0), np.zeros((size, size)))
    alone = popcounts_below(nodes, scale) - popcounts_below(bound, scale)
    return alone, paired


def _id_chance(scale: int, one: float) -> np.ndarray:
    """``chance[k]``: an id's chance (k one bits) when each of its bits is one with ``one``."""
    k = np.arange(scale + 1)
    return one**k * (1.0 - one) ** (scale - k)


def _binomials(n: int) -> np.ndarray:
    return np.array([float(math.comb(n, i)) for i in range(n + 1)])


def _present(chance: np.ndarray, draws: float) -> np.ndarray:
    """The chance that ``draws`` independent draws hit an outcome of ``chance`` at least once."""
    return -np.expm1(draws * np.log1p(-np.minimum(chance, 1.0 - 1e-16)))


def _over_nodes(nodes: int, value: Callable[..., np.ndarray], *per_id: np.ndarray) -> float:
    """``sum over the nodes of value(their chances)``: each of a node's chances is its id's
    (``per_id[n][k]``, k its one bits), or the sum of its two ids' when folded."""
    alone, paired = fold_classes(nodes)
    pairs = value(*(chance[:, None] + chance[None, :] for chance in per_id))
    return float(alone @ value(*per_id) + (paired * pairs).sum())


@lru_cache(maxsize=1024)
def distinct_targets(nodes: int, draws: int) -> float:
    """Expected distinct destinations among ``draws`` generated edges: the markers an edges task
    writes for one piece of its split."""
    _, b, _, d = RMAT
    return _over_nodes(nodes, lambda target: _present(target, draws), _id_chance(scale_of(nodes), b + d))


@lru_cache(maxsize=256)
def graph_shape(nodes: int, edges: int, partitions: int) -> GraphShape:
    """The expected counts of the graph of ``edges`` R-MAT edges over ``nodes``, in ``partitions``."""
    a, b, c, d = RMAT
    scale = scale_of(nodes)
    seen = _over_nodes(
        nodes,
        lambda source, target: _present(1.0 - (1.0 - source) * (1.0 - target), edges),
        _id_chance(scale, c + d),
        _id_chance(scale, b + d),
    )
    in_edges = np.zeros(scale + 1)  # a destination id with k one bits: its expected distinct in-edges,
    unsent = np.zeros(scale + 1)  # and the log of the chance that a partition sends it nothing
    for k in range(scale + 1):
        zeros = np.arange(scale - k + 1)[:, None]  # the source's 0 bits where the destination has 0s
        ones = np.arange(k + 1)[None, :]  # ... where it has 1s
        chance = a**zeros * c ** (scale - k - zeros) * b**ones * d ** (k - ones)
        ways = np.outer(_binomials(scale - k), _binomials(k))
        present = _present(chance, edges)
        in_edges[k] = float((ways * present).sum())
        unsent[k] = float((ways * np.log1p(-np.minimum(present / partitions, 1.0 - 1e-16))).sum())
    distinct = float(_binomials(scale) @ in_edges)
    reached = _over_nodes(nodes, lambda log_unsent: -np.expm1(log_unsent), unsent)
    return GraphShape(seen, distinct, partitions * reached)


# ------------------------------------------------------------------ bytes


def _frames(records: float, partitions: int, chunk_records: int) -> int:
    """Frames of ``records`` records spread evenly over ``partitions``, at most ``chunk_records`` each."""
    per = records / partitions
    return partitions * math.ceil(per / chunk_records) if per > 0 else 0


def edges_bytes(count: int, nodes: int, partitions: int, budget: int) -> float:
    """An edges task's block: its ``count`` edges and, per piece of its split, a marker for each
    distinct destination (``pagerank.edges_task``), in tagged frames."""
    full, rest = divmod(count, PIECE_EDGES)
    markers = full * distinct_targets(nodes, PIECE_EDGES) + (distinct_targets(nodes, rest) if rest else 0.0)
    records = count + markers
    frames = _frames(records, partitions, chunk_bytes(budget) // EDGE_DTYPE.itemsize)
    return records * EDGE_DTYPE.itemsize + frames * (FRAME_HEADER.size + TAG)


def links_bytes(shape: GraphShape, partitions: int, budget: int) -> float:
    """A links task's block: an empty frame, the partition's distinct edges, its node table."""
    edges, nodes = shape.edges / partitions, shape.nodes / partitions
    frames = 1 + _frames(edges + nodes, 1, chunk_bytes(budget) // EDGE_DTYPE.itemsize)
    frames += math.ceil(nodes / NODE_TABLE_ROWS)
    return edges * EDGE_DTYPE.itemsize + nodes * NODE_DTYPE.itemsize + frames * FRAME_HEADER.size


def links_parts(shape: GraphShape, partitions: int, total: int) -> tuple[int, int, int]:
    """A links block of ``total`` bytes (``links_bytes``) as its partitions: the edges, the
    node table and the names (a generated graph's nodes have none: an empty frame)."""
    nodes = shape.nodes / partitions
    table = round(nodes * NODE_DTYPE.itemsize + math.ceil(nodes / NODE_TABLE_ROWS) * FRAME_HEADER.size)
    names = FRAME_HEADER.size
    return max(0, total - table - names), table, names


def contributions_bytes(
    shape: GraphShape, partitions: int, budget: int, index: int, scatter: bool, tolerance: bool
) -> float:
    """A scatter or (not final) iterate task's block: to every partition a header and the
    combined contributions of its edges; with a tolerance, its own ranks to itself."""
    nodes = shape.nodes / partitions
    unit = "per_node" if scatter else "mass"
    header: dict[str, Any] = {"nodes": round(nodes), "dangling": 0.0, "unit": unit, "from": index}
    if tolerance and not scatter:
        header["delta"] = 0.0
    records = shape.contributions / partitions
    frames = _frames(records, partitions, chunk_bytes(budget) // CONTRIB_DTYPE.itemsize)
    total = records * CONTRIB_DTYPE.itemsize + frames * (FRAME_HEADER.size + TAG)
    total += partitions * (FRAME_HEADER.size + TAG + len(msgpack.packb(header)))
    if tolerance:
        total += FRAME_HEADER.size + TAG + nodes * RANK_DTYPE.itemsize
    return total


def task_bytes(spec: TaskSpec) -> int | None:
    """The bytes of the block ``spec``'s task writes (a final one writes its ranks to the sink:
    none), from its generated graph's shape; None for a graph read from files."""
    if spec.final:
        return 0
    budget = spec.memory_mb * MB
    if spec.op == "pagerank.edges":
        generate = spec.params.get("generate")
        if generate is None:
            return None
        return round(edges_bytes(int(generate["count"]), int(generate["nodes"]), spec.partitions, budget))
    graph = spec.params.get("graph")
    if graph is None:
        return None
    partitions = int(graph["partitions"])
    shape = graph_shape(int(graph["nodes"]), int(graph["edges"]), partitions)
    if spec.op == "pagerank.links":
        return round(links_bytes(shape, partitions, budget))
    scatter, tolerance = spec.op == "pagerank.scatter", bool(spec.params.get("tolerance"))
    return round(contributions_bytes(shape, partitions, budget, spec.index, scatter, tolerance))
