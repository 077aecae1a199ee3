"""wordcount's logical DAG, the representation the spark and Pado strategies recover and place by
(``testbed.logical_dag``), and the logical operators each physical stage of its plan runs."""

from __future__ import annotations

from testbed.logical_dag import Dependency, Edge, LogicalDag, Operator
from testbed.plan import JobPlan
from testbed.workloads.description import Lineage


def wordcount_dag(maps: int, reduces: int) -> LogicalDag:
    """read -> map (tokenise, combine) =shuffle=> reduce (sum) -> write."""
    return LogicalDag(
        "wordcount",
        (
            Operator("read", "Read text", maps, source="read"),
            Operator("map", "Tokenise and count", maps),
            Operator("reduce", "Sum counts", reduces, commutative_associative=True),
            Operator("write", "Write counts", reduces),
        ),
        (
            Edge("read", "map", Dependency.ONE_TO_ONE),
            Edge("map", "reduce", Dependency.MANY_TO_MANY),
            Edge("reduce", "write", Dependency.ONE_TO_ONE),
        ),
    )


def lineage(plan: JobPlan) -> Lineage:
    """The DAG at the plan's parallelism; its two stages run read+map and reduce+write."""
    maps, reduces = (stage.tasks for stage in plan.stages)
    return Lineage(wordcount_dag(maps, reduces), (("read", "map"), ("reduce", "write")))
