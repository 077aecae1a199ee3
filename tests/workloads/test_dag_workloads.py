"""Jobs planned as stage DAGs (testbed.api.JobDag): the checks of a DAG, its plan, and the
shipped join workload run task by task against its plain-Python reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.api import DagError, JobDag, JobInputs, StageInput, StageSpec, Workload
from testbed.scenario.schema import PluginJob, ScenarioError, parse_scenario
from testbed.workloads import plan_job
from testbed.workloads.check import check_output
from testbed.workloads.dag import plan_dag
from testbed.workloads.local import LocalJob
from testbed.workloads.user import reference_output

SEED = 11
JOIN = "testbed.workloads.join:JoinAggregate"


def join_job(**options: int) -> PluginJob:
    return PluginJob(workload=JOIN, options={"customers": 300, "orders": 4000, **options}, reduces=3)


def test_the_join_plan_reads_two_shuffled_parents_then_a_narrow_stage() -> None:
    plan = plan_job(join_job(), SEED, None)
    kinds = [[(d.stage, d.kind) for d in stage.deps] for stage in plan.stages]
    assert kinds == [[], [], [(0, "shuffle"), (1, "shuffle")], [(2, "narrow")], [(3, "shuffle")]]
    assert [s.final for s in plan.stages] == [False, False, False, False, True]
    assert [s.partitions for s in plan.stages] == [3, 3, 1, 3, 1]


@pytest.mark.parametrize("budget", [64 << 20, 1 << 16])
def test_the_join_equals_its_reference(tmp_path: Path, budget: int) -> None:
    job = join_job()
    local = LocalJob(plan_job(job, SEED, None), tmp_path).run(budget)
    assert check_output(job, SEED, local.outputs) == []
    expected = reference_output(job, SEED)
    assert len(expected) == 25 and sum(int(line.split("\t")[1]) for line in expected) > 3000


def test_a_wrong_output_fails_the_check(tmp_path: Path) -> None:
    job = join_job()
    local = LocalJob(plan_job(job, SEED, None), tmp_path).run(64 << 20)
    part = next(local.outputs.glob("part-*"))
    first, *rest = part.read_text().splitlines()
    nation, count, total = first.split("\t")
    part.write_text("\n".join([f"{nation}\t{count}\t{int(total) + 1}", *rest]) + "\n")
    assert check_output(job, SEED, local.outputs) != []


def stage(name: str, tasks: int = 2, partitions: int = 1, *inputs: StageInput) -> StageSpec:
    return StageSpec(name, "m:f", tasks, partitions, inputs, source="create")


@pytest.mark.parametrize(
    ("stages", "message"),
    [
        ((stage("a", 2, 3), stage("b", 2, 1, StageInput("a"))), "3 partitions must equal its 2 tasks"),
        ((stage("a", 2), stage("b", 3, 1, StageInput("a", "one-to-one"))), "needs equal tasks"),
        ((stage("a", 2), stage("b", 2, 1, StageInput("a", "many-to-one"))), "so it has one task"),
        (
            (stage("a", 2, 2), stage("b", 2, 1, StageInput("a")),
             stage("c", 2, 1, StageInput("a", "one-to-one"))),
            "its partitions must be 1",
        ),
        ((stage("a"), stage("b", 2, 1, StageInput("c"))), "not a stage declared before it"),
        ((stage("a"), stage("a")), "used twice"),
        ((stage("a"), stage("b")), "nothing reads its output"),
        ((), "at least one stage"),
    ],
)  # fmt: skip
def test_a_dag_breaking_a_rule_is_refused_naming_it(stages: tuple[StageSpec, ...], message: str) -> None:
    with pytest.raises(DagError, match=message):
        JobDag(stages)


def test_every_dependency_type_maps_onto_the_cores_kinds() -> None:
    dag = JobDag(
        (
            stage("a", 2, 2),
            stage("b", 2, 1, StageInput("a")),
            stage("c", 2, 1, StageInput("b", "one-to-one")),
            stage("d", 1, 1, StageInput("c", "many-to-one")),
            stage("e", 2, 1, StageInput("d", "one-to-many"), StageInput("c", "one-to-one")),
        )
    )
    plan = plan_dag("w", dag)
    assert [[(d.stage, d.kind) for d in s.deps] for s in plan.stages] == [
        [], [(0, "shuffle")], [(1, "narrow")], [(2, "shuffle")], [(3, "broadcast"), (2, "narrow")],
    ]  # fmt: skip


class OrphanStage(Workload):
    """A DAG whose first stage nobody reads."""

    def dag(self, job: JobInputs) -> JobDag:
        return JobDag((stage("lost"), stage("sink")))


def test_a_bad_dag_is_refused_at_load_naming_the_job() -> None:
    data = {
        "name": "bad",
        "cluster": {"reserved": 1, "transient": 1},
        "jobs": [{"workload": JOIN, "reduces": 30}],
    }
    parse_scenario(data)
    data["jobs"] = [{"workload": f"{__name__}:OrphanStage"}]
    with pytest.raises(
        ScenarioError, match=r"jobs\.0\.workload: .*dag\(\) raised DagError: stage 'lost': nothing reads"
    ):
        parse_scenario(data)
