"""How a task's output bytes fall into its partitions, where a workload does not spread them
evenly: declared by the workload, read by the simulator, which knows a block's size but
writes no data (``master.execution_model.ExecutionModel.output_parts``).

Each entry of ``OUTPUT_PARTS`` maps an op to a function of the task's launch command and
its block's total bytes: the bytes of each partition, or None where it cannot tell (the
block is then cut evenly, as any other op's).
"""

from __future__ import annotations

from collections.abc import Callable

from testbed.wire.protocol import TaskSpec
from testbed.workloads.mlr import gradient_parts
from testbed.workloads.pagerank import sizes as pagerank_sizes

Layout = Callable[[TaskSpec, int], tuple[int, ...] | None]


def links_parts(spec: TaskSpec, total: int) -> tuple[int, ...] | None:
    """A PageRank links block of a generated graph: its edges, node table and names
    (``pagerank_sizes.links_parts``); a graph read from files: None."""
    graph = spec.params.get("graph")
    if graph is None or spec.partitions != 3:
        return None
    partitions = int(graph["partitions"])
    shape = pagerank_sizes.graph_shape(int(graph["nodes"]), int(graph["edges"]), partitions)
    return pagerank_sizes.links_parts(shape, partitions, total)


def mlr_gradient_parts(spec: TaskSpec, total: int) -> tuple[int, ...]:
    """An MLR gradient: the whole vector in partition ``index % partitions`` (``treeAggregate``)."""
    return gradient_parts(spec.index, spec.partitions, total)


OUTPUT_PARTS: dict[str, Layout] = {
    "pagerank.links": links_parts,
    "mlr.gradient": mlr_gradient_parts,
}
