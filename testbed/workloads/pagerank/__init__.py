"""PageRank with links co-partitioned with ranks, as in the RDD paper (section 3.2.2).

Input: an edge list, ``src dst`` per line (whitespace separated, ``#`` starts
a comment), from files or from a seeded R-MAT generator. A node is any
whitespace-free token: package names, URLs and user names work as well as
integers. Inside the job every node has a 64-bit integer id: a decimal integer
below 2**62 written without leading zeros is its own id; any other token (a
name) gets a 62-bit BLAKE2b hash of its bytes with bit 62 set, so every split
maps a name to the same id without a global dictionary. Names travel to the
partition that owns them (``pagerank.links`` keeps them, and refuses two names
with one hash), and the last stage writes each node as it was written in the
input. The graph's nodes are every id seen; duplicate edges
collapse; a self-loop is kept as an ordinary out-link (the node gives itself
a share of its rank). Node ``v`` lives in partition ``owner(v)`` (a 64-bit mix
of the id, modulo the partitions).

Each iteration computes, for every node v,
``r'[v] = (1-d)/N + d * (sum over u->v of r[u]/outdeg(u) + D/N)``, where ``D`` is
the rank held by dangling nodes (no out-link); ranks start at 1/N and always
sum to 1.

Stages (P = the job's ``reduces``, K = ``iterations``):

- ``pagerank.edges`` (one task per input split): parses edges and sends each to
  the partition of its source, plus a marker ``(v, -1)`` for every target v to
  the partition of v (so a node with no out-link is known to its owner), and
  the names of named nodes to their owners.
- ``pagerank.links`` (P tasks, shuffle): deduplicates and sorts the partition's
  edges under the budget (external sort), and stores partition 0 = the edges
  sorted by source, partition 1 = the node table (id, out-degree), partition
  2 = the names of the partition's named nodes.
- ``pagerank.scatter`` (P tasks, narrow on links): iteration 0's contributions.
- ``pagerank.iterate`` (K stages of P tasks, shuffle on the stage before, narrow
  on links): sums the contributions received, computes the partition's new
  ranks, and (except the last stage) scatters contributions for the next
  iteration; the last stage writes ``node<TAB>rank`` lines.

Global values travel in the data, not in the master: every scatter sends each
partition a header with its node count and dangling mass, so every iterate
task computes N and D from its own inputs, and a task recomputed after an
eviction computes the same values. Iteration 0 does not know N, so its
contributions are sent in units of 1/N (``unit = "per_node"``).

With a ``tolerance``, every header also carries the L1 change of the sender's
ranks and a task passes its own ranks to itself; an iterate task whose inputs
say the previous iteration changed the ranks by less than the tolerance (in
total) keeps them instead of computing new ones. The stages still run (the
plan is static) but do almost nothing. This equals stopping after the first
iteration whose change is below the tolerance.

Memory: the node table, ranks and sums of a partition (40 bytes per node) are
held in memory (and, for named nodes, their names in ``pagerank.edges``,
``pagerank.links`` and the last stage), as in every vertex-partitioned graph system; edges stream
through, and the contributions buffer (combined by destination) spills sorted
runs when it reaches its share of the budget.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import msgpack
import numpy as np

from testbed.plan import Dependency, JobPlan, StagePlan
from testbed.scenario.inputs import resolve_inputs
from testbed.scenario.splitting import byte_ranges
from testbed.wire.protocol import BlockRef
from testbed.workloads.base import Combiner, InputDataError, TaskContext, TaskFunction
from testbed.workloads.edge_lists import EdgeChunk, node_names, parse_edges, text
from testbed.workloads.pagerank.lineage_dag import lineage as lineage
from testbed.workloads.spill import ArrayBuffer, ArrayKind, SpillFiles
from testbed.workloads.splits import read_lines_range

if TYPE_CHECKING:
    from testbed.scenario.schema import PagerankJob, Scenario
    from testbed.workloads.task_model import Role

EDGE_DTYPE = np.dtype([("src", "<i8"), ("dst", "<i8")])
NODE_DTYPE = np.dtype([("id", "<i8"), ("outdeg", "<i8")])
CONTRIB_DTYPE = np.dtype([("dst", "<i8"), ("value", "<f8")])
RANK_DTYPE = np.dtype([("id", "<i8"), ("rank", "<f8")])
MARKER = -1
EDGES_PER_SPLIT = 1_000_000
PIECE_EDGES = 1 << 16
RMAT = (0.57, 0.19, 0.19, 0.05)
BUFFER_FRACTION = 0.3
"""Share of the budget for buffered edges or contributions (sorting and combining
a full buffer takes about three times its size)."""
HEADER, CONTRIBUTIONS, RANKS = b"H", b"C", b"R"
EDGES, NAMES = b"E", b"N"
NAMES_PER_FRAME = 1 << 14


# ------------------------------------------------------------------ partitioning


def owner(ids: np.ndarray, partitions: int) -> np.ndarray:
    """The partition of each node id: splitmix64 of the id modulo the partitions."""
    with np.errstate(over="ignore"):
        x = ids.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        x ^= x >> np.uint64(31)
    return (x % np.uint64(partitions)).astype(np.uint16)


def _edge_order(edges: np.ndarray) -> np.ndarray:
    return np.lexsort((edges["dst"], edges["src"]))


def _edge_keys(edges: np.ndarray) -> np.ndarray:
    return edges["src"]


def _dedup_edges(edges: np.ndarray) -> np.ndarray:
    edges = edges[_edge_order(edges)]
    keep = np.ones(len(edges), dtype=bool)
    keep[1:] = (edges["src"][1:] != edges["src"][:-1]) | (edges["dst"][1:] != edges["dst"][:-1])
    return edges[keep]


def _contrib_order(contribs: np.ndarray) -> np.ndarray:
    return np.argsort(contribs["dst"], kind="stable")


def _contrib_keys(contribs: np.ndarray) -> np.ndarray:
    return contribs["dst"]


def _sum_contribs(contribs: np.ndarray) -> np.ndarray:
    """One record per destination, values summed (the input is sorted by destination)."""
    dst = contribs["dst"]
    starts = np.flatnonzero(np.concatenate(([True], dst[1:] != dst[:-1])))
    out = np.empty(len(starts), dtype=CONTRIB_DTYPE)
    out["dst"] = dst[starts]
    out["value"] = np.add.reduceat(contribs["value"], starts)
    return out


EDGES_BY_PARTITION = ArrayKind(EDGE_DTYPE, _edge_order, _edge_keys, keyed=False)
EDGES_SORTED = ArrayKind(EDGE_DTYPE, _edge_order, _edge_keys, _dedup_edges)
CONTRIBS = ArrayKind(CONTRIB_DTYPE, _contrib_order, _contrib_keys, _sum_contribs)


def rmat_piece(seed: int, index: int, piece: int, count: int, nodes: int) -> EdgeChunk:
    """``count`` R-MAT edges (a=0.57, b=c=0.19, d=0.05) over ids 0..nodes-1, from (seed, index, piece).

    Ids are drawn over the next power of two and folded modulo ``nodes``.
    """
    rng = np.random.default_rng([seed, index, piece])
    scale = max(1, math.ceil(math.log2(nodes)))
    src = np.zeros(count, dtype=np.int64)
    dst = np.zeros(count, dtype=np.int64)
    a, b, c, _ = RMAT
    for _level in range(scale):
        r = rng.random(count)
        src = (src << 1) | (r >= a + b)
        dst = (dst << 1) | (((r >= a) & (r < a + b)) | (r >= a + b + c))
    return EdgeChunk(src % nodes, dst % nodes)


def generate_split(seed: int, index: int, count: int, nodes: int) -> Iterator[EdgeChunk]:
    for piece, start in enumerate(range(0, count, PIECE_EDGES)):
        yield rmat_piece(seed, index, piece, min(PIECE_EDGES, count - start), nodes)


def sources_of(job: PagerankJob, seed: int) -> list[dict[str, Any]]:
    if job.input:
        paths = resolve_inputs(job.input)
        total = sum(p.stat().st_size for p in paths)
        maps = job.maps or max(1, round(total / (16 * EDGES_PER_SPLIT)))
        return [{"file": r} for r in byte_ranges(paths, maps)]
    maps = job.maps or max(1, math.ceil(job.edges / EDGES_PER_SPLIT))
    edges = [job.edges * i // maps for i in range(maps + 1)]
    return [
        {"generate": {"seed": seed, "index": i, "count": edges[i + 1] - edges[i], "nodes": job.nodes}}
        for i in range(maps)
    ]


def source_edges(source: dict[str, Any]) -> Iterator[EdgeChunk]:
    if "generate" in source:
        g = source["generate"]
        yield from generate_split(g["seed"], g["index"], g["count"], g["nodes"])
    else:
        f = source["file"]
        for chunk in read_lines_range(f["path"], f["start"], f["end"]):
            yield parse_edges(chunk, f["path"])


# ------------------------------------------------------------------ plan


def plan(job: PagerankJob, seed: int, scenario: Scenario | None = None) -> JobPlan:
    del scenario  # every workload's plan takes it (``catalog.plan_job``); this one needs none
    sources = sources_of(job, seed)
    parts = job.reduces
    graph = {} if job.input else {"graph": {"nodes": job.nodes, "edges": job.edges, "partitions": parts}}
    shared = {"damping": job.damping, "tolerance": job.tolerance, **graph}
    stages = [
        StagePlan("pagerank.edges", len(sources), parts, task_params=tuple(sources)),
        StagePlan("pagerank.links", parts, 3, (Dependency(0, "shuffle"),), shared_params=graph),
        StagePlan("pagerank.scatter", parts, parts, (Dependency(1, "narrow"),), shared_params=shared),
    ]
    for iteration in range(1, job.iterations + 1):
        last = iteration == job.iterations
        stages.append(
            StagePlan(
                "pagerank.iterate",
                parts,
                1 if last else parts,
                (Dependency(len(stages) - 1, "shuffle"), Dependency(1, "narrow")),
                final=last,
                shared_params={**shared, "iteration": iteration},
            )
        )
    return JobPlan("pagerank", tuple(stages))


# ------------------------------------------------------------------ tasks


def edges_task(ctx: TaskContext) -> None:
    partitions = ctx.spec.partitions
    files = SpillFiles(ctx.scratch, ctx.metrics)
    buffer = ArrayBuffer(EDGES_BY_PARTITION, partitions, int(ctx.budget_bytes * BUFFER_FRACTION), files)
    chunks = source_edges(ctx.params)
    if ctx.caches_input:
        chunks = _edge_chunks(ctx.through_input_cache(_edge_bytes(chunks)))
    names: dict[int, bytes] = {}
    for chunk in chunks:
        src, dst = chunk.src, chunk.dst
        ctx.metrics.records_in += len(src)
        ctx.metrics.bytes_in += src.nbytes + dst.nbytes
        edges = np.empty(len(src), dtype=EDGE_DTYPE)
        edges["src"], edges["dst"] = src, dst
        buffer.add(edges, owner(src, partitions))
        targets = np.unique(dst)
        markers = np.empty(len(targets), dtype=EDGE_DTYPE)
        markers["src"], markers["dst"] = targets, MARKER
        buffer.add(markers, owner(targets, partitions))
        names.update(chunk.names)
    writer = ctx.open_output()
    named = _names_by_partition(names, partitions)
    for partition, records in buffer.finish(chunk_bytes(ctx.budget_bytes)):
        for record_chunk in records:
            writer.write(partition, EDGES + record_chunk.tobytes())
            ctx.metrics.records_out += len(record_chunk)
        for frame in _name_frames(named[partition]):
            writer.write(partition, NAMES + frame)
    ctx.commit_output(writer)


def _edge_bytes(chunks: Iterator[EdgeChunk]) -> Iterator[bytes]:
    """Parsed or generated edges as they are kept in the input cache (packed ``EDGE_DTYPE``
    frames, then the chunk's names)."""
    for chunk in chunks:
        edges = np.empty(len(chunk.src), dtype=EDGE_DTYPE)
        edges["src"], edges["dst"] = chunk.src, chunk.dst
        yield EDGES + edges.tobytes()
        if chunk.names:
            yield from (NAMES + frame for frame in _name_frames(chunk.names))


def _edge_chunks(cached: Iterator[bytes]) -> Iterator[EdgeChunk]:
    for data in cached:
        tag, body = data[:1], data[1:]
        if tag == NAMES:
            yield EdgeChunk(np.empty(0, np.int64), np.empty(0, np.int64), _unpack_names(body))
        else:
            edges = np.frombuffer(body, dtype=EDGE_DTYPE)
            yield EdgeChunk(edges["src"], edges["dst"])


def _names_by_partition(names: dict[int, bytes], partitions: int) -> list[dict[int, bytes]]:
    split: list[dict[int, bytes]] = [{} for _ in range(partitions)]
    ids = np.fromiter(names, dtype=np.int64, count=len(names))
    for node, partition in zip(ids.tolist(), owner(ids, partitions).tolist(), strict=True):
        split[partition][node] = names[node]
    return split


def _name_frames(names: dict[int, bytes]) -> Iterator[bytes]:
    """``names`` as msgpack frames of ``[ids, names]``, in id order."""
    ids = sorted(names)
    for start in range(0, len(ids), NAMES_PER_FRAME):
        some = ids[start : start + NAMES_PER_FRAME]
        yield msgpack.packb([some, [names[i] for i in some]])


def _unpack_names(frame: bytes) -> dict[int, bytes]:
    ids, names = msgpack.unpackb(frame)
    return dict(zip(ids, names, strict=True))


def _merge_names(names: dict[int, bytes], more: dict[int, bytes]) -> None:
    """Add ``more`` to ``names``; two names with one id (a hash collision) are refused."""
    for node, name in more.items():
        known = names.setdefault(node, name)
        if known != name:
            raise InputDataError(
                f"node names {text(known)!r} and {text(name)!r} have the same 62-bit hash: rename one of them"
            )


def chunk_bytes(budget: int) -> int:
    return int(min(1 << 20, max(4096, budget // 32)))


def links_task(ctx: TaskContext) -> None:
    """Partition 0: this partition's distinct edges sorted by source (after an empty frame,
    so the block is never empty); partition 1: the node table; partition 2: the names of
    the partition's named nodes."""
    files = SpillFiles(ctx.scratch, ctx.metrics)
    buffer = ArrayBuffer(EDGES_SORTED, 1, int(ctx.budget_bytes * BUFFER_FRACTION), files)
    names: dict[int, bytes] = {}
    for frame in ctx.input_frames(0):
        tag, body = frame[:1], frame[1:]
        if tag == NAMES:
            _merge_names(names, _unpack_names(body))
            continue
        edges = np.frombuffer(body, dtype=EDGE_DTYPE)
        ctx.metrics.records_in += len(edges)
        buffer.add(edges, np.zeros(len(edges), dtype=np.uint8))
    writer = ctx.open_output()
    writer.write(0, b"")
    ids, degrees = [], []
    for _, chunks in buffer.finish(chunk_bytes(ctx.budget_bytes)):
        for chunk in chunks:
            real = chunk[chunk["dst"] != MARKER]
            if len(real):
                writer.write(0, real.tobytes())
                ctx.metrics.records_out += len(real)
            chunk_ids, inverse = np.unique(chunk["src"], return_inverse=True)
            ids.append(chunk_ids)
            degrees.append(np.bincount(inverse, weights=chunk["dst"] != MARKER, minlength=len(chunk_ids)))
    nodes = _node_table(ids, degrees)
    ctx.note_buffered(nodes.nbytes + sum(len(n) for n in names.values()))
    for start in range(0, len(nodes), 1 << 16):
        writer.write(1, nodes[start : start + (1 << 16)].tobytes())
    for frame in _name_frames(names):
        writer.write(2, frame)
    ctx.commit_output(writer)


def _node_table(ids: list[np.ndarray], degrees: list[np.ndarray]) -> np.ndarray:
    """Merge per-chunk (ids, out-degrees): a node may straddle two chunks."""
    if not ids:
        return np.empty(0, dtype=NODE_DTYPE)
    all_ids, inverse = np.unique(np.concatenate(ids), return_inverse=True)
    table = np.empty(len(all_ids), dtype=NODE_DTYPE)
    table["id"] = all_ids
    table["outdeg"] = np.bincount(inverse, weights=np.concatenate(degrees), minlength=len(all_ids))
    return table


@dataclass
class Partition:
    """One partition's node state while a scatter or iterate task runs."""

    ids: np.ndarray
    outdeg: np.ndarray
    ranks: np.ndarray

    @property
    def nbytes(self) -> int:
        return self.ids.nbytes + self.outdeg.nbytes + 3 * self.ranks.nbytes

    def local(self, ids: np.ndarray) -> np.ndarray:
        return np.searchsorted(self.ids, ids)


def _links_ref(ctx: TaskContext, dependency: int, partition: int) -> BlockRef | None:
    refs = ctx.spec.inputs[dependency]
    if not refs:
        return None
    return refs[0].model_copy(update={"partition": partition})


def _links_frames(ctx: TaskContext, dependency: int, partition: int) -> Iterator[bytes]:
    ref = _links_ref(ctx, dependency, partition)
    if ref is None:
        return
    for frame in ctx.fetcher.frames(ref):
        ctx.metrics.bytes_in += len(frame)
        yield frame


def _load_nodes(ctx: TaskContext, dependency: int) -> tuple[np.ndarray, np.ndarray]:
    frames = [np.frombuffer(f, dtype=NODE_DTYPE) for f in _links_frames(ctx, dependency, 1)]
    table = np.concatenate(frames) if frames else np.empty(0, dtype=NODE_DTYPE)
    return table["id"].copy(), table["outdeg"].copy()


def scatter_task(ctx: TaskContext) -> None:
    """Iteration 0: every rank is 1/N, N unknown yet, so values are in units of 1/N."""
    ids, outdeg = _load_nodes(ctx, 0)
    part = Partition(ids, outdeg, np.ones(len(ids)))
    header = {"nodes": len(ids), "dangling": float(np.count_nonzero(outdeg == 0)), "unit": "per_node"}
    _scatter(ctx, part, 0, header, previous=None)


def iterate_task(ctx: TaskContext) -> None:
    ids, outdeg = _load_nodes(ctx, 1)
    sums = np.zeros(len(ids))
    headers: list[dict[str, Any]] = []
    previous = None
    for frame in ctx.input_frames(0):
        tag, body = frame[:1], frame[1:]
        if tag == HEADER:
            headers.append(msgpack.unpackb(body))
        elif tag == CONTRIBUTIONS:
            contribs = np.frombuffer(body, dtype=CONTRIB_DTYPE)
            ctx.metrics.records_in += len(contribs)
            sums += np.bincount(np.searchsorted(ids, contribs["dst"]), contribs["value"], len(ids))
        elif tag == RANKS:
            previous = _merge_ranks(previous, ids, np.frombuffer(body, dtype=RANK_DTYPE))
    headers.sort(key=lambda h: h["from"])
    total = sum(h["nodes"] for h in headers)
    dangling = math.fsum(h["dangling"] for h in headers)
    if headers and headers[0]["unit"] == "per_node":
        sums /= total
        dangling /= total
        previous = np.full(len(ids), 1.0 / total)
    part = Partition(ids, outdeg, _new_ranks(ctx.params, headers, sums, dangling, total, previous))
    ctx.note_buffered(part.nbytes)
    if ctx.spec.final:
        names: dict[int, bytes] = {}
        for frame in _links_frames(ctx, 1, 2):
            names.update(_unpack_names(frame))
        _write_ranks(ctx, part, names)
        return
    header = {"nodes": len(ids), "dangling": float(part.ranks[outdeg == 0].sum()), "unit": "mass"}
    _scatter(ctx, part, 1, header, previous)


def _merge_ranks(previous: np.ndarray | None, ids: np.ndarray, ranks: np.ndarray) -> np.ndarray:
    merged = previous if previous is not None else np.zeros(len(ids))
    merged[np.searchsorted(ids, ranks["id"])] = ranks["rank"]
    return merged


def _new_ranks(
    params: dict[str, Any],
    headers: list[dict[str, Any]],
    sums: np.ndarray,
    dangling: float,
    total: int,
    previous: np.ndarray | None,
) -> np.ndarray:
    tolerance = params.get("tolerance")
    change = [h.get("delta") for h in headers]
    converged = change and None not in change and math.fsum(change) < (tolerance or 0)
    if converged and previous is not None:
        return previous
    d = params["damping"]
    if total == 0:
        return sums
    return (1 - d) / total + d * (sums + dangling / total)


def _scatter(
    ctx: TaskContext, part: Partition, links: int, header: dict[str, Any], previous: np.ndarray | None
) -> None:
    """Send every partition this task's header and its combined contributions."""
    partitions = ctx.spec.partitions
    me = ctx.spec.index
    header["from"] = me
    if ctx.params.get("tolerance") and previous is not None:
        header["delta"] = float(np.abs(part.ranks - previous).sum())
    files = SpillFiles(ctx.scratch, ctx.metrics, part.nbytes)
    limit = max(1 << 16, int(ctx.budget_bytes * BUFFER_FRACTION) - part.nbytes)
    buffer = ArrayBuffer(CONTRIBS, partitions, limit, files)
    share = np.divide(part.ranks, part.outdeg, out=np.zeros(len(part.ranks)), where=part.outdeg > 0)
    converged = previous is not None and part.ranks is previous
    for frame in () if converged else _links_frames(ctx, links, 0):
        edges = np.frombuffer(frame, dtype=EDGE_DTYPE)
        if len(edges) == 0:
            continue
        contribs = np.empty(len(edges), dtype=CONTRIB_DTYPE)
        contribs["dst"] = edges["dst"]
        contribs["value"] = share[part.local(edges["src"])]
        ctx.metrics.records_in += len(edges)
        buffer.add(contribs, owner(edges["dst"], partitions))
    writer = ctx.open_output()
    for partition, chunks in buffer.finish(chunk_bytes(ctx.budget_bytes)):
        writer.write(partition, HEADER + msgpack.packb(header))
        for chunk in chunks:
            writer.write(partition, CONTRIBUTIONS + chunk.tobytes())
            ctx.metrics.records_out += len(chunk)
        if partition == me and ctx.params.get("tolerance"):
            own = np.empty(len(part.ids), dtype=RANK_DTYPE)
            own["id"], own["rank"] = part.ids, part.ranks
            writer.write(partition, RANKS + own.tobytes())
    ctx.commit_output(writer)


def _write_ranks(ctx: TaskContext, part: Partition, names: dict[int, bytes]) -> None:
    with open(ctx.final_path, "wb") as out:
        for start in range(0, len(part.ids), 1 << 14):
            nodes = node_names(part.ids[start : start + (1 << 14)], names)
            ranks = part.ranks[start : start + (1 << 14)].tolist()
            out.write(b"".join(b"%s\t%r\n" % (n, r) for n, r in zip(nodes, ranks, strict=True)))
    ctx.metrics.records_out = len(part.ids)


OPERATIONS: dict[str, TaskFunction] = {
    "pagerank.edges": edges_task,
    "pagerank.links": links_task,
    "pagerank.scatter": scatter_task,
    "pagerank.iterate": iterate_task,
}
"""The task functions of its ops (``testbed.workloads.catalog.OPERATIONS`` gathers every workload's)."""
PROFILED_STAGES: dict[Role, int] = {"map": 0, "reduce": 3}
"""The stage ``testbed profile`` measures for each role: the first iterate stage is the
reduce (K of the job's K + 2 later stages)."""
COMBINERS: dict[str, Combiner] = {}
"""None of its ops' outputs is aggregated before a push."""
NEVER_SPILLS = False
"""Its buffers grow with its input: under a smaller budget it spills (``testbed.workloads.profile``)."""
RECORD_BYTES = EDGE_DTYPE.itemsize
"""A generated split counts packed edges (two int64)."""


def check(job: PagerankJob, seed: int, directory: Path) -> list[str]:
    """The ranks sum to 1 and equal a single-process power iteration's (``reference``, which
    imports the scenario schema: imported here, by the master's check alone)."""
    from testbed.workloads.pagerank.reference import check_ranks

    return check_ranks(job, seed, directory)


def generate(job: PagerankJob, seed: int, handle: IO[bytes]) -> None:
    """The generated R-MAT graph as an edge list (``src dst`` lines)."""
    handle.write(b"# R-MAT edges: src dst\n")
    for source in sources_of(job, seed):
        for chunk in source_edges(source):
            lines = np.char.add(np.char.add(chunk.src.astype(str), " "), chunk.dst.astype(str))
            handle.write(("\n".join(lines.tolist()) + "\n").encode())
