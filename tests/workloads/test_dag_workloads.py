"""Jobs planned as stage DAGs (testbed.api.JobDag): the checks of a DAG, its plan, and the
shipped join workload run task by task against its plain-Python reference."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from testbed.api import DagError, DagTask, JobDag, JobInputs, StageInput, StageSpec, Workload, partition_of
from testbed.scenario.schema import PluginJob, ScenarioError, parse_scenario
from testbed.workloads.base import WorkloadError
from testbed.workloads.catalog import plan_job
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


def words(task: DagTask) -> None:
    for line in task.lines():
        for word in line.split():
            task.emit((len(word), 1), partition_of(len(word), task.partitions))


def lengths(task: DagTask) -> None:
    counts = Counter(length for length, _ in task.inputs("words"))
    for length in sorted(counts):
        task.write_line(f"{length}\t{counts[length]}")


class WordLengths(Workload):
    """A source reading the job's input files through its splits, a shuffle to the sink."""

    def dag(self, job: JobInputs) -> JobDag:
        me = __name__
        return JobDag(
            (
                StageSpec("words", f"{me}:words", 3, job.reduces, task_args=job.splits(3)),
                StageSpec("lengths", f"{me}:lengths", job.reduces, inputs=(StageInput("words"),)),
            )
        )

    def reference(self, job: JobInputs):
        text = "".join(p.read_text() for p in sorted(Path(job.input).parent.glob("*.txt")))
        counts = Counter(len(word) for word in text.split())
        return (f"{length}\t{n}" for length, n in sorted(counts.items()))


def test_a_source_reads_its_split_of_the_jobs_input_files(tmp_path: Path) -> None:
    data = tmp_path / "in"
    data.mkdir()
    for i in range(2):
        (data / f"f{i}.txt").write_text(
            "".join(f"{'ab' * (n % 7)} xyz {'q' * (n % 11)}\n" for n in range(i, 900))
        )
    job = PluginJob(workload=f"{__name__}:WordLengths", input=str(data / "*.txt"), reduces=2)
    plan = plan_job(job, SEED, None)
    assert len(plan.stages[0].task_params) == 3 and all("file" in p for p in plan.stages[0].task_params)
    local = LocalJob(plan, tmp_path / "work").run(1 << 16)
    assert check_output(job, SEED, local.outputs) == []


def explodes(task: DagTask) -> None:
    raise KeyError("no such column")


class Explodes(Workload):
    def dag(self, job: JobInputs) -> JobDag:
        return JobDag((StageSpec("boom", f"{__name__}:explodes", source="create"),))


def test_a_body_that_raises_is_a_data_failure_naming_its_stage(tmp_path: Path) -> None:
    plan = plan_job(PluginJob(workload=f"{__name__}:Explodes"), SEED, None)
    with pytest.raises(WorkloadError, match=r"stage 'boom': explodes\(\) raised KeyError"):
        LocalJob(plan, tmp_path).run(1 << 20)
