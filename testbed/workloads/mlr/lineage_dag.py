"""mlr's logical DAG, the representation the spark and Pado strategies recover and place by
(``testbed.logical_dag``), and the logical operators each physical stage of its plan runs."""

from __future__ import annotations

from testbed.logical_dag import DagError, Dependency, Edge, LogicalDag, Operator
from testbed.plan import JobPlan
from testbed.workloads.description import Lineage


def mlr_dag(partitions: int, aggregates: int, iterations: int) -> LogicalDag:
    """Multinomial logistic regression as in the Pado paper's Figure 3(b), iterations unrolled.

    read (the training data's partitions); iteration i: gradient-i reads its partition
    one-to-one and the previous model one-to-many (a broadcast; iteration 1 starts from
    the zero model, created inside its tasks, so it has no model edge), =shuffle=>
    aggregate-i (each sums a slice of every gradient) =gather=> model-i (the step, one-to-one
    on the previous model); write the last model. The paper's Create 1st Model is the zero
    model inside gradient-1 and model-1, not an operator of its own. The model and its
    write are the driver's (``Operator.driver``): MLlib updates the model in the driver.
    """
    if iterations < 1:
        raise DagError(f"mlr needs at least one iteration, got {iterations}")
    operators = [Operator("read", "Read training data", partitions, source="read")]
    edges: list[Edge] = []
    for i in range(1, iterations + 1):
        operators += [
            Operator(f"gradient-{i}", f"Compute gradient, iteration {i}", partitions),
            Operator(
                f"aggregate-{i}",
                f"Aggregate gradients, iteration {i}",
                aggregates,
                commutative_associative=True,
            ),
            Operator(f"model-{i}", f"Compute model {i}", 1, driver=True),
        ]
        edges += [
            Edge("read", f"gradient-{i}", Dependency.ONE_TO_ONE),
            Edge(f"gradient-{i}", f"aggregate-{i}", Dependency.MANY_TO_MANY),
            Edge(f"aggregate-{i}", f"model-{i}", Dependency.MANY_TO_ONE),
        ]
        if i > 1:
            edges += [
                Edge(f"model-{i - 1}", f"gradient-{i}", Dependency.ONE_TO_MANY),
                Edge(f"model-{i - 1}", f"model-{i}", Dependency.ONE_TO_ONE),
            ]
    operators.append(Operator("write", "Write model", 1, driver=True))
    edges.append(Edge(f"model-{iterations}", "write", Dependency.ONE_TO_ONE))
    return LogicalDag("mlr", tuple(operators), tuple(edges))


def lineage(plan: JobPlan) -> Lineage:
    """The DAG at the plan's parallelism (stages: read, then gradient, aggregate and model per
    iteration, the last model with the write)."""
    stages = plan.stages
    iterations = (len(stages) - 1) // 3
    ops: list[tuple[str, ...]] = [("read",)]
    for i in range(1, iterations + 1):
        model = (f"model-{i}", "write") if i == iterations else (f"model-{i}",)
        ops += [(f"gradient-{i}",), (f"aggregate-{i}",), model]
    return Lineage(mlr_dag(stages[0].tasks, stages[2].tasks, iterations), tuple(ops))
