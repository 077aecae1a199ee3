"""The logical DAG model and the Pado compiler (Algorithms 1 and 2). Its runtime rules
(``master.recovery.pado_rules``) are tested in ``test_pado_runtime.py``; the rest of
Pado's runtime (launch order, evictions, reserved failures) is the strategy's and is
tested through the core in ``tests/core/test_pado_order.py``.

The three DAGs of the Pado paper's Fig. 3 are rebuilt from the paper's text (the
figure itself is not in our copy of the paper); every operator and edge below is
justified by a quoted sentence, and each expectation cites the sentence it
comes from. Section numbers refer to the Pado paper (EuroSys'17).
"""

from __future__ import annotations

import json

import pytest

from master.recovery.pado_compiler import (
    Stage,
    TaskGroup,
    aggregates_partially,
    compile_pado,
    partition_stages,
    place_operators,
)
from testbed.logical_dag import (
    DagError,
    Dependency,
    Edge,
    LogicalDag,
    Operator,
)
from testbed.workloads.pagerank.lineage_dag import pagerank_dag
from testbed.workloads.sort.lineage_dag import sort_dag
from testbed.workloads.wordcount.lineage_dag import wordcount_dag

O2O, O2M, M2O, M2M = (
    Dependency.ONE_TO_ONE,
    Dependency.ONE_TO_MANY,
    Dependency.MANY_TO_ONE,
    Dependency.MANY_TO_MANY,
)


def dag(name: str, operators: list[Operator], edges: list[tuple[str, str, Dependency]]) -> LogicalDag:
    return LogicalDag(name, tuple(operators), tuple(Edge(s, d, t) for s, d, t in edges))


def stage_by_anchor(stages: list[Stage]) -> dict[str, Stage]:
    return {s.anchor: s for s in stages}


# ---------------------------------------------------------------- the paper's Fig. 3


def map_reduce_dag() -> LogicalDag:
    """Fig. 3(a). Section 2.2: "the Reduce operator depends on the Map operator with a
    many-to-many dependency"; section 3.1.3 names "the Read operator and the
    following Map operator"."""
    return dag(
        "map-reduce",
        [
            Operator("read", "Read", 8, source="read"),
            Operator("map", "Map", 8),
            Operator("reduce", "Reduce", 3),
        ],
        [("read", "map", O2O), ("map", "reduce", M2M)],
    )


def mlr_dag() -> LogicalDag:
    """Fig. 3(b), one iteration. Section 3.1.3: "Read Training Data reads its data from a
    source", "Create 1st Model newly creates its data", "Aggregate Gradients has a
    many-to-one incoming edge", "Compute 2nd Model only has one-to-one relations from
    operators on reserved containers" (the gradient sum and the 1st model). Section
    3.2.7: "the transient tasks of the Compute Gradient operator in Figure 3(b) takes
    the latest model residing on reserved executors as their input" (a broadcast,
    one-to-many) and "the Aggregate Gradients operator [...] computes the sum of
    gradients" (commutative and associative)."""
    return dag(
        "mlr",
        [
            Operator("read-data", "Read Training Data", 8, source="read"),
            Operator("model-1", "Create 1st Model", 1, source="create"),
            Operator("gradient", "Compute Gradient", 8),
            Operator("aggregate", "Aggregate Gradients", 1, commutative_associative=True),
            Operator("model-2", "Compute 2nd Model", 1),
        ],
        [
            ("read-data", "gradient", O2O),
            ("model-1", "gradient", O2M),
            ("gradient", "aggregate", M2O),
            ("aggregate", "model-2", O2O),
            ("model-1", "model-2", O2O),
        ],
    )


def als_dag() -> LogicalDag:
    """Fig. 3(c), one alternation. Section 3.1.3: ALS "alternates its computation and
    aggregation between user and item factors"; "The Read operator is placed on
    transient containers, then operators with many-to-many in-edges are placed on
    reserved containers. Compute 1st Item Factor operator only has a single
    one-to-one incoming edge from reserved containers"; there are "four operators on
    reserved containers". Our reading: ratings are grouped by item (many-to-many)
    to build the 1st item factor; each ratings partition computes partial user
    factors from the broadcast item factor (computation), summed per user by a
    shuffle (aggregation); then the same for items."""
    return dag(
        "als",
        [
            Operator("read", "Read", 8, source="read"),
            Operator("group-items", "Group Ratings by Item", 4),
            Operator("item-factor-1", "Compute 1st Item Factor", 4),
            Operator("user-partial", "Compute User Factor", 8),
            Operator("user-factor", "Aggregate User Factor", 4, commutative_associative=True),
            Operator("item-partial", "Compute Item Factor", 8),
            Operator("item-factor-2", "Aggregate Item Factor", 4, commutative_associative=True),
        ],
        [
            ("read", "group-items", M2M),
            ("group-items", "item-factor-1", O2O),
            ("read", "user-partial", O2O),
            ("item-factor-1", "user-partial", O2M),
            ("user-partial", "user-factor", M2M),
            ("read", "item-partial", O2O),
            ("user-factor", "item-partial", O2M),
            ("item-partial", "item-factor-2", M2M),
        ],
    )


def test_fig3a_map_reduce_placement() -> None:
    """Section 3.1.3: "the Read operator and the following Map operator are placed on
    transient containers. Then, the next operator is placed on reserved containers,
    as it has a many-to-many incoming edge." """
    assert place_operators(map_reduce_dag()) == {
        "read": "transient",
        "map": "transient",
        "reduce": "reserved",
    }


def test_fig3a_map_reduce_is_one_stage() -> None:
    """Section 3.1.3: "the algorithm finds the Reduce operator on reserved containers
    while traversing the logical DAG, and adds up the in-edges placed on transient
    containers recursively to Stage a-1." """
    d = map_reduce_dag()
    assert partition_stages(d, place_operators(d)) == [
        Stage(0, "reduce", ("read", "map", "reduce"), parents=())
    ]


def test_fig3b_mlr_placement() -> None:
    """Section 3.1.3: "Aggregate Gradients has a many-to-one incoming edge, and Compute
    2nd Model only has one-to-one relations from operators on reserved containers,
    thus both are placed on reserved containers. [...] Create 1st Model newly
    creates its data and hence is placed on reserved containers, and Read Training
    Data reads its data from a source, thus is placed on transient containers. The
    rest are placed on transient containers following the algorithm." """
    assert place_operators(mlr_dag()) == {
        "read-data": "transient",
        "model-1": "reserved",
        "gradient": "transient",
        "aggregate": "reserved",
        "model-2": "reserved",
    }


def test_fig3b_mlr_has_three_stages_one_per_reserved_operator() -> None:
    """Section 3.1.3: "As a result of partitioning, we can observe that there are three
    stages for the three operators on reserved containers." Section 3.1.2: "At each
    of such operators, its parent operators placed on transient containers are
    recursively added to the stage. If the parent operator is placed on reserved
    containers, this indicates that it belongs to a previously created stage." """
    d = mlr_dag()
    stages = partition_stages(d, place_operators(d))
    assert [s.anchor for s in stages] == ["model-1", "aggregate", "model-2"]
    by = stage_by_anchor(stages)
    assert by["model-1"].operators == ("model-1",)
    assert by["aggregate"].operators == ("read-data", "gradient", "aggregate")
    assert by["model-2"].operators == ("model-2",)
    assert by["model-1"].parents == ()
    assert by["aggregate"].parents == (by["model-1"].stage_id,)
    assert by["model-2"].parents == (by["model-1"].stage_id, by["aggregate"].stage_id)


def test_fig3c_als_placement() -> None:
    """Section 3.1.3: "The Read operator is placed on transient containers, then
    operators with many-to-many in-edges are placed on reserved containers. Compute
    1st Item Factor operator only has a single one-to-one incoming edge from
    reserved containers and is placed on reserved containers to ensure data
    locality. The rest of the operators are placed on transient containers." """
    assert place_operators(als_dag()) == {
        "read": "transient",
        "group-items": "reserved",
        "item-factor-1": "reserved",
        "user-partial": "transient",
        "user-factor": "reserved",
        "item-partial": "transient",
        "item-factor-2": "reserved",
    }


def test_fig3c_als_has_four_stages_one_per_reserved_operator() -> None:
    """Section 3.1.3: "By the partitioning algorithm, operators placed on transient
    containers are recursively added by the four operators on reserved containers."
    The Read operator feeds three of them, so Algorithm 2 adds it to each."""
    d = als_dag()
    stages = partition_stages(d, place_operators(d))
    assert stages == [
        Stage(0, "group-items", ("read", "group-items"), parents=()),
        Stage(1, "item-factor-1", ("item-factor-1",), parents=(0,)),
        Stage(2, "user-factor", ("read", "user-partial", "user-factor"), parents=(1,)),
        Stage(3, "item-factor-2", ("read", "item-partial", "item-factor-2"), parents=(2,)),
    ]


@pytest.mark.parametrize("build", [map_reduce_dag, mlr_dag, als_dag])
def test_every_stage_ends_on_reserved_and_starts_on_transient(build) -> None:
    """Section 3.1.2: "computations of a stage start on transient containers, if any
    exists, and finish on reserved containers, unless the DAG ends on a transient
    container." Every operator is in some stage."""
    plan = compile_pado(build())
    covered = set()
    for stage in plan.stages:
        assert plan.placement[stage.anchor] == "reserved"
        assert all(plan.placement[op] == "transient" for op in stage.operators if op != stage.anchor)
        covered |= set(stage.operators)
    assert covered == set(plan.dag.topological_order())


# ---------------------------------------------------------------- Algorithm 1, rule by rule


def chain(dependency: Dependency, parent_source: str) -> LogicalDag:
    return dag(
        "rule",
        [Operator("p", "P", 4, source=parent_source), Operator("c", "C", 4)],  # type: ignore[arg-type]
        [("p", "c", dependency)],
    )


@pytest.mark.parametrize(
    ("dependency", "parent_source", "child"),
    [
        (M2M, "read", "reserved"),  # ANYMATCH(m-m)
        (M2O, "read", "reserved"),  # ANYMATCH(m-o)
        (O2O, "create", "reserved"),  # ALLMATCH(o-o) and ALLFROM(reserved)
        (O2O, "read", "transient"),  # o-o from a transient parent
        (O2M, "create", "transient"),  # o-m, even from a reserved parent
        (O2M, "read", "transient"),
    ],
)
def test_algorithm1_rules(dependency: Dependency, parent_source: str, child: str) -> None:
    placement = place_operators(chain(dependency, parent_source))
    assert placement["p"] == ("transient" if parent_source == "read" else "reserved")
    assert placement["c"] == child


def test_algorithm1_one_to_one_needs_all_parents_reserved() -> None:
    d = dag(
        "mixed",
        [
            Operator("made", "Created", 2, source="create"),
            Operator("read", "Read", 2, source="read"),
            Operator("join", "Join", 2),
        ],
        [("made", "join", O2O), ("read", "join", O2O)],
    )
    assert place_operators(d) == {"made": "reserved", "read": "transient", "join": "transient"}


def test_algorithm2_transient_sink_opens_its_own_stage() -> None:
    """Algorithm 2, line 4: "if op.ISMARKED(reserved) or op.outEdges = ∅"."""
    d = dag(
        "ends-transient",
        [
            Operator("read", "Read", 4, source="read"),
            Operator("reduce", "Reduce", 2),
            Operator("format", "Format", 2),
            Operator("emit", "Emit", 2),
        ],
        [("read", "reduce", M2M), ("reduce", "format", O2M), ("format", "emit", O2O)],
    )
    placement = place_operators(d)
    assert placement == {
        "read": "transient",
        "reduce": "reserved",
        "format": "transient",
        "emit": "transient",
    }
    assert partition_stages(d, placement) == [
        Stage(0, "reduce", ("read", "reduce"), ()),
        Stage(1, "emit", ("format", "emit"), (0,)),
    ]


def test_algorithm2_adds_a_shared_transient_ancestor_once_per_stage() -> None:
    d = dag(
        "diamond",
        [
            Operator("read", "Read", 4, source="read"),
            Operator("left", "Left", 4),
            Operator("right", "Right", 4),
            Operator("merge", "Merge", 2),
        ],
        [
            ("read", "left", O2O),
            ("read", "right", O2O),
            ("left", "merge", M2M),
            ("right", "merge", M2M),
        ],
    )
    stages = partition_stages(d, place_operators(d))
    assert stages == [Stage(0, "merge", ("read", "left", "right", "merge"), ())]


def test_partition_rejects_a_placement_that_does_not_cover_the_dag() -> None:
    d = map_reduce_dag()
    with pytest.raises(ValueError, match="missing \\['reduce'\\]"):
        partition_stages(d, {"read": "transient", "map": "transient"})
    with pytest.raises(ValueError, match="'reserved' or 'transient'"):
        partition_stages(d, {"read": "transient", "map": "transient", "reduce": "spot"})  # type: ignore[dict-item]


# ---------------------------------------------------------------- our workloads


@pytest.mark.parametrize(("build", "shuffled"), [(wordcount_dag, "reduce"), (sort_dag, "sort")])
def test_shuffle_workloads_compile_to_a_push_stage_and_a_write_stage(build, shuffled: str) -> None:
    plan = compile_pado(build(6, 3))
    first = plan.dag.topological_order()[:2]
    assert {op: plan.placement[op] for op in plan.dag.topological_order()} == {
        first[0]: "transient",
        first[1]: "transient",
        shuffled: "reserved",
        "write": "reserved",
    }
    assert plan.stages == (
        Stage(0, shuffled, (*first, shuffled), ()),
        Stage(1, "write", ("write",), (0,)),
    )


def test_pagerank_runs_on_reserved_nodes_after_reading_its_edges() -> None:
    """Links come through a shuffle (reserved); everything after joins reserved
    operators one-to-one or through a shuffle, so Algorithm 1 keeps every iteration
    on reserved executors and only the edge reader on transient ones."""
    plan = compile_pado(pagerank_dag(partitions=4, iterations=3))
    assert [op for op in plan.dag.topological_order() if plan.placement[op] == "transient"] == ["read-edges"]
    assert [(s.anchor, s.operators, s.parents) for s in plan.stages] == [
        ("links", ("read-edges", "links"), ()),
        ("ranks-0", ("ranks-0",), (0,)),
        ("contribs-1", ("contribs-1",), (0, 1)),
        ("ranks-1", ("ranks-1",), (2,)),
        ("contribs-2", ("contribs-2",), (0, 3)),
        ("ranks-2", ("ranks-2",), (4,)),
        ("contribs-3", ("contribs-3",), (0, 5)),
        ("ranks-3", ("ranks-3",), (6,)),
        ("write", ("write",), (7,)),
    ]


def test_plan_json_records_dag_placement_and_stages() -> None:
    plan = compile_pado(wordcount_dag(4, 2))
    doc = json.loads(plan.to_json())
    assert doc["strategy"] == "pado"
    assert LogicalDag.from_dict(doc["dag"]) == plan.dag
    assert doc["placement"] == {
        "read": "transient",
        "map": "transient",
        "reduce": "reserved",
        "write": "reserved",
    }
    assert doc["stages"] == [
        {"id": 0, "anchor": "reduce", "operators": ["read", "map", "reduce"], "parents": []},
        {"id": 1, "anchor": "write", "operators": ["write"], "parents": [0]},
    ]
    assert doc["task_groups"][0] == {
        "stage": 0,
        "operators": ["read", "map"],
        "placement": "transient",
        "tasks": 4,
    }
    assert doc["total_tasks"] == 4 + 2 + 2


def test_neighbours_on_the_same_class_are_fused_into_task_groups() -> None:
    """Section 3.2.2: "For each stage, neighboring operators placed on identical types
    of containers are fused into a single operator. For example, a chain of Map
    operators placed on transient containers are fused as a single Map operator." """
    plan = compile_pado(als_dag())
    assert plan.task_groups() == [
        TaskGroup(0, ("read",), "transient", 8),
        TaskGroup(0, ("group-items",), "reserved", 4),
        TaskGroup(1, ("item-factor-1",), "reserved", 4),
        TaskGroup(2, ("read", "user-partial"), "transient", 8),
        TaskGroup(2, ("user-factor",), "reserved", 4),
        TaskGroup(3, ("read", "item-partial"), "transient", 8),
        TaskGroup(3, ("item-factor-2",), "reserved", 4),
    ]
    assert plan.total_tasks == 40
    assert compile_pado(wordcount_dag(6, 3)).total_tasks == 6 + 3 + 3


def test_transient_neighbours_across_a_broadcast_are_not_fused() -> None:
    d = dag(
        "broadcast",
        [
            Operator("read", "Read", 4, source="read"),
            Operator("summarise", "Summarise", 4),
            Operator("score", "Score", 2),
            Operator("sum", "Sum", 1),
        ],
        [("read", "summarise", O2O), ("summarise", "score", O2M), ("score", "sum", M2O)],
    )
    assert compile_pado(d).task_groups() == [
        TaskGroup(0, ("read", "summarise"), "transient", 4),
        TaskGroup(0, ("score",), "transient", 2),
        TaskGroup(0, ("sum",), "reserved", 1),
    ]


# ---------------------------------------------------------------- the DAG model


def test_dag_json_round_trip() -> None:
    d = pagerank_dag(3, 2)
    again = LogicalDag.from_json(d.to_json())
    assert again == d
    assert again.topological_order() == d.topological_order()
    assert d.sinks() == ("write",)


@pytest.mark.parametrize(
    ("operators", "edges", "message"),
    [
        (
            [Operator("a", "A", 1, source="read"), Operator("a", "A again", 1)],
            [],
            "duplicate operator id 'a'",
        ),
        ([Operator("a", "A", 1, source="read")], [("a", "b", O2O)], "unknown operator 'b'"),
        (
            [Operator("s", "S", 1, source="read"), Operator("a", "A", 1), Operator("b", "B", 1)],
            [("s", "a", O2O), ("a", "b", O2O), ("b", "a", O2O)],
            "cycle through a, b",
        ),
        (
            [Operator("a", "A", 2, source="read"), Operator("b", "B", 3)],
            [("a", "b", O2O)],
            "joins parallelism 2 to 3",
        ),
        (
            [Operator("a", "A", 1, source="read"), Operator("b", "B", 1, source="create")],
            [("a", "b", O2O)],
            "'b' has incoming edges",
        ),
        ([Operator("a", "A", 1)], [], "'a' has no incoming edge"),
        ([Operator("a", "A", 0, source="read")], [], "parallelism must be an integer >= 1"),
        (
            [Operator("a", "A", 1, source="read"), Operator("b", "B", 1)],
            [("a", "b", O2O), ("a", "b", M2M)],
            "appears twice",
        ),
    ],
)
def test_dag_validation_errors(operators, edges, message: str) -> None:
    with pytest.raises(DagError, match=message):
        dag("bad", operators, edges)


def test_malformed_dag_document_is_a_dag_error() -> None:
    with pytest.raises(DagError, match="malformed"):
        LogicalDag.from_dict({"name": "x", "operators": [{"id": "a"}], "edges": []})
    with pytest.raises(DagError, match="malformed"):
        LogicalDag.from_dict(
            {
                "name": "x",
                "operators": [{"id": "a", "name": "A", "parallelism": 1, "source": "read"}],
                "edges": [{"src": "a", "dst": "a", "dependency": "some-to-some"}],
            }
        )


def test_pagerank_needs_an_iteration() -> None:
    with pytest.raises(DagError, match="at least one iteration"):
        pagerank_dag(2, 0)


def test_only_commutative_associative_reserved_operators_aggregate_partially() -> None:
    wordcount, sort = compile_pado(wordcount_dag(4, 2)), compile_pado(sort_dag(4, 2))
    assert aggregates_partially(wordcount, wordcount.stages[0])
    assert not aggregates_partially(sort, sort.stages[0])
    mlr = compile_pado(mlr_dag())
    assert [aggregates_partially(mlr, s) for s in mlr.stages] == [False, True, False]
