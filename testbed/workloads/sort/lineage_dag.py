"""sort's logical DAG, the representation the spark and Pado strategies recover and place by
(``testbed.logical_dag``), and the logical operators each physical stage of its plan runs."""

from __future__ import annotations

from testbed.logical_dag import Dependency, Edge, LogicalDag, Operator
from testbed.plan import JobPlan
from testbed.workloads.description import Lineage


def sort_dag(maps: int, reduces: int) -> LogicalDag:
    """TeraSort: read -> range-partition =shuffle=> sort -> write."""
    return LogicalDag(
        "sort",
        (
            Operator("read", "Read records", maps, source="read"),
            Operator("partition", "Range-partition", maps),
            Operator("sort", "Sort partition", reduces),
            Operator("write", "Write sorted part", reduces),
        ),
        (
            Edge("read", "partition", Dependency.ONE_TO_ONE),
            Edge("partition", "sort", Dependency.MANY_TO_MANY),
            Edge("sort", "write", Dependency.ONE_TO_ONE),
        ),
    )


def lineage(plan: JobPlan) -> Lineage:
    """The DAG at the plan's parallelism; its two stages run read+partition and sort+write."""
    maps, reduces = (stage.tasks for stage in plan.stages)
    return Lineage(sort_dag(maps, reduces), (("read", "partition"), ("sort", "write")))
