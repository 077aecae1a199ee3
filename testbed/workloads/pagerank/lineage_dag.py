"""pagerank's logical DAG, the representation the spark and Pado strategies recover and place by
(``testbed.logical_dag``), and the logical operators each physical stage of its plan runs."""

from __future__ import annotations

from testbed.logical_dag import DagError, Dependency, Edge, LogicalDag, Operator
from testbed.plan import JobPlan
from testbed.workloads.description import Lineage


def pagerank_dag(partitions: int, iterations: int, readers: int | None = None) -> LogicalDag:
    """PageRank as in the RDD paper (section 3.2.2), iterations unrolled.

    read-edges =shuffle=> links (adjacency lists, hash-partitioned by source);
    ranks-0 = links.mapValues(1/N), co-partitioned with links; iteration i:
    contribs-i = join(links, ranks-(i-1)) one-to-one on both sides (co-partitioned,
    no shuffle) emitting each page's contributions, =shuffle=> ranks-i (sum, then
    damping); write the final ranks. The dangling mass and N travel with the
    shuffles, so they need no edges of their own. ``readers``: edge-reading tasks
    (default: ``partitions``).
    """
    if iterations < 1:
        raise DagError(f"pagerank needs at least one iteration, got {iterations}")
    operators = [
        Operator("read-edges", "Read edges", readers or partitions, source="read"),
        Operator("links", "Group links by source", partitions),
        Operator("ranks-0", "Initial ranks", partitions),
    ]
    edges = [
        Edge("read-edges", "links", Dependency.MANY_TO_MANY),
        Edge("links", "ranks-0", Dependency.ONE_TO_ONE),
    ]
    for i in range(1, iterations + 1):
        operators += [
            Operator(f"contribs-{i}", f"Join links with ranks, iteration {i}", partitions),
            Operator(
                f"ranks-{i}",
                f"Sum contributions, iteration {i}",
                partitions,
                commutative_associative=True,
            ),
        ]
        edges += [
            Edge("links", f"contribs-{i}", Dependency.ONE_TO_ONE),
            Edge(f"ranks-{i - 1}", f"contribs-{i}", Dependency.ONE_TO_ONE),
            Edge(f"contribs-{i}", f"ranks-{i}", Dependency.MANY_TO_MANY),
        ]
    operators.append(Operator("write", "Write ranks", partitions))
    edges.append(Edge(f"ranks-{iterations}", "write", Dependency.ONE_TO_ONE))
    return LogicalDag("pagerank", tuple(operators), tuple(edges))


def lineage(plan: JobPlan) -> Lineage:
    """The DAG at the plan's parallelism (stages: edges, links, then one per iteration and the
    last's write); an iteration's stage sums its ranks and scatters the next contributions."""
    stages = plan.stages
    iterations = len(stages) - 3
    ops: list[tuple[str, ...]] = [("read-edges",), ("links",), ("ranks-0", "contribs-1")]
    for i in range(1, iterations + 1):
        ops.append((f"ranks-{i}", f"contribs-{i + 1}") if i < iterations else (f"ranks-{i}", "write"))
    return Lineage(pagerank_dag(stages[1].tasks, iterations, readers=stages[0].tasks), tuple(ops))
