"""The ``broadcast`` dependency: every child task reads the whole output of every parent task."""

from __future__ import annotations

from master.core.jobs import JobRuntime
from master.recovery.lineage import spark_plan
from master.recovery.pado_compiler import place_operators
from master.recovery.spark import shuffle_consumers, wide_consumers
from testbed.logical_dag import Dependency as DagDependency
from testbed.logical_dag import Edge, LogicalDag, Operator
from testbed.plan import Dependency, JobPlan, StagePlan


def model_job() -> JobRuntime:
    """points (3 tasks) and a model (2 tasks, say the slices of a model) that every gradient
    task reads whole: gradient i = narrow on points i + broadcast of the model."""
    plan = JobPlan(
        "test",
        (
            StagePlan("points", 3),
            StagePlan("model", 2),
            StagePlan("gradient", 3, deps=(Dependency(0, "narrow"), Dependency(1, "broadcast")), final=True),
        ),
    )
    return JobRuntime("j000", "t", "test", plan, 0.0, 64)


def finish(job: JobRuntime, key: tuple[int, int], node: str, parts: tuple[int, ...] = (5,)) -> None:
    attempt = job.launched(key, node, 64, 0.0)
    assert job.succeeded(key, attempt, f"http://{node}", f"{job.task_id(key)}.a{attempt}", parts)


def test_a_broadcast_child_is_ready_only_when_every_parent_is_available() -> None:
    job = model_job()
    for i in range(3):
        finish(job, (0, i), "t0")
    finish(job, (1, 0), "r0")
    assert [k for k in job.ready() if k[0] == 2] == []  # model task 1 is missing
    finish(job, (1, 1), "r0")
    assert [k for k in job.ready() if k[0] == 2] == [(2, 0), (2, 1), (2, 2)]
    assert sorted(job.parents((2, 1))) == [(0, 1), (1, 0), (1, 1)]


def test_a_broadcast_child_reads_partition_0_of_every_parent() -> None:
    job = model_job()
    for i in range(3):
        finish(job, (0, i), "t0")
    finish(job, (1, 0), "r0")
    finish(job, (1, 1), "r1")
    narrow, broadcast = job.input_refs((2, 2))
    assert [(r.block, r.partition, r.locations) for r in narrow] == [("j000.s0.t2.a0", 0, ("http://t0",))]
    assert [(r.block, r.partition, r.locations) for r in broadcast] == [
        ("j000.s1.t0.a0", 0, ("http://r0",)),
        ("j000.s1.t1.a0", 0, ("http://r1",)),
    ]


def test_a_streamed_stage_never_lets_a_broadcast_child_start_early() -> None:
    job = model_job()
    for i in range(3):
        finish(job, (0, i), "t0")
    finish(job, (1, 0), "r0")
    assert [k for k in job.ready(frozenset({1})) if k[0] == 2] == []


def test_losing_a_broadcast_parent_recomputes_it_for_every_child_still_to_run() -> None:
    job = model_job()
    for i in range(3):
        finish(job, (0, i), "t0")
    finish(job, (1, 0), "r0")
    finish(job, (1, 1), "t1")
    finish(job, (2, 0), "t0")
    job.node_lost("t1", "http://t1")
    assert job.tasks[(1, 1)].status == "pending"  # gradients 1 and 2 still need it
    assert job.tasks[(1, 0)].status == "done"
    assert [k for k in job.ready() if k[0] == 2] == []
    finish(job, (1, 1), "r0")
    assert [k for k in job.ready() if k[0] == 2] == [(2, 1), (2, 2)]
    assert job.relaunched == 1


def test_a_broadcast_is_wide_for_lineage_and_never_reserved_for_pado() -> None:
    dag = LogicalDag(
        "broadcast",
        (
            Operator("model", "Create a model", 1, source="create"),
            Operator("read", "Read points", 3, source="read"),
            Operator("gradient", "Gradient", 3),
        ),
        (
            Edge("read", "gradient", DagDependency.ONE_TO_ONE),
            Edge("model", "gradient", DagDependency.ONE_TO_MANY),
        ),
    )
    placement = place_operators(dag)
    assert placement == {"read": "transient", "model": "reserved", "gradient": "transient"}
    plan = spark_plan(dag)
    gradient = next(s for s in plan.stages if "gradient" in s.operators)
    model = next(s for s in plan.stages if s.operators == ("model",))
    assert any(d.stage == model.stage_id and d.kind == "wide" for d in gradient.deps)
    assert model.stage_id in plan.checkpointed_stages()


def test_spark_checkpoint_copies_a_broadcast_output_and_pado_pushes_only_shuffles() -> None:
    plan = model_job().plan
    assert wide_consumers(plan, 1) == [2] and wide_consumers(plan, 0) == []
    assert shuffle_consumers(plan, 1) == []


def test_a_pado_gradient_runs_where_its_recomputed_training_partition_is() -> None:
    """Pado fuses a transient one-to-one chain into one task (section 3.1); with the chain cut
    into stages (mlr's points, then gradients), a gradient prefers its points' node. After
    transient-0 is lost, points 0 is recomputed on the idle transient-3, and gradient 0 goes
    there, not to the first free node."""
    from master.core.events import EvictRequest, FromNode, Round
    from testbed.scenario.chaos import EvictSpec
    from tests.support.driver import Driver, up
    from tests.support.scenarios import make_scenario

    scenario = make_scenario(
        policy={"strategy": "pado"},
        cluster={"reserved": 1, "transient": 4, "heartbeat_interval": 0.2, "heartbeat_timeout": 2},
        jobs=[{"workload": "mlr", "points": 300, "features": 4, "classes": 3, "maps": 3, "reduces": 1}],
    )
    driver = Driver(scenario)
    driver.boot()
    driver.do(Round())
    points = {s.index: (n, s) for n, s in driver.running().values() if s.stage == 0}
    assert sorted(points) == [0, 1, 2]
    for node, spec in points.values():
        driver.finish(node, spec)
    lost = points[0][0]
    driver.do(EvictRequest(EvictSpec(count=1), (lost,)))
    will = up(lost, "transient", driver.core).model_copy(update={"state": "lost"})
    driver.do(FromNode(lost, will))
    driver.do(Round())
    (node, spec), *_ = [(n, s) for n, s in driver.running().values() if s.stage == 0]
    assert spec.index == 0
    driver.finish(node, spec)
    driver.do(Round())
    gradients = {s.index: n for n, s in driver.running().values() if s.stage == 1}
    assert gradients[0] == node and gradients[2] == points[2][0]  # gradient 1's node is taken
