"""The mlr workload: the distributed gradient descent against the textbook reference."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from master.recovery.pado_compiler import compile_pado
from master.recovery.spark import logical_dag, physical_operators, stage_classes
from testbed.scenario.schema import MlrJob
from testbed.wire.blocks import BlockWriter
from testbed.wire.protocol import BlockRef
from testbed.workloads import mlr
from testbed.workloads.base import BlockFetcher
from testbed.workloads.catalog import COMBINERS, plan_job
from testbed.workloads.check import check_output
from testbed.workloads.local import LocalJob

SEED = 5


def small(**fields) -> MlrJob:
    base = {"points": 3000, "features": 12, "classes": 4, "iterations": 3, "maps": 3, "reduces": 2}
    return MlrJob(workload="mlr", **{**base, **fields})


def plain_gradient_descent(job: MlrJob, seed: int) -> np.ndarray:
    """Loops over samples, no matrix product: independent of the vectorised reference."""
    rows = np.concatenate([p for s in mlr.sources_of(job, seed) for p in mlr.generate_split(s["generate"])])
    model = np.zeros((job.features + 1, job.classes))
    for _ in range(job.iterations):
        gradient = np.zeros_like(model)
        for row in rows:
            x = np.concatenate(([1.0], row[1:]))
            scores = np.array([x @ model[:, c] for c in range(job.classes)])
            p = np.exp(scores - scores.max())
            p /= p.sum()
            p[int(row[0])] -= 1.0
            gradient += np.outer(x, p)
        penalty = job.regularization * model
        penalty[0] = 0
        model = model - job.learning_rate * (gradient / len(rows) + penalty)
    return model


def test_the_reference_is_the_textbook_gradient_descent() -> None:
    job = small(points=200, regularization=0.1)
    assert np.allclose(mlr.reference_output(job, SEED), plain_gradient_descent(job, SEED), rtol=0, atol=1e-12)


@pytest.mark.parametrize("budget", [64 << 20, 1 << 16])
def test_the_job_equals_the_reference(tmp_path: Path, budget: int) -> None:
    job = small(regularization=0.01)
    local = LocalJob(plan_job(job, SEED, None), tmp_path).run(budget)
    assert check_output(job, SEED, local.outputs) == []
    model = mlr.read_output(local.outputs)
    assert np.abs(model).max() > 0.01  # it learned something
    assert local.total("spill_bytes") == 0
    generated = sum(s["generate"]["nbytes"] for s in mlr.sources_of(job, SEED))
    assert local.total("bytes_in", stage=0) == generated  # a source counts what it generated


def test_the_model_learns_the_hidden_one() -> None:
    job = small(points=4000, iterations=30, learning_rate=1.0)
    model = mlr.reference_output(job, SEED)
    rows = np.concatenate([p for s in mlr.sources_of(job, SEED) for p in mlr.generate_split(s["generate"])])
    predicted = np.argmax(rows[:, 1:] @ model[1:] + model[0], axis=1)
    majority = np.bincount(rows[:, 0].astype(int)).max() / len(rows)
    assert (predicted == rows[:, 0]).mean() > majority + 0.1


def test_a_wrong_model_fails_the_check(tmp_path: Path) -> None:
    job = small()
    model = mlr.reference_output(job, SEED)
    model[3, 1] *= 1 + 1e-6
    (tmp_path / "out").mkdir()
    mlr.write_model(tmp_path / "out" / "part-00000", model)
    assert check_output(job, SEED, tmp_path / "out")[0].startswith("the model differs")
    assert check_output(small(iterations=2), SEED, tmp_path / "out")


def test_a_gradient_is_written_whole_into_one_partition(tmp_path: Path) -> None:
    """MLlib's treeAggregate: gradient task ``i`` writes its whole gradient into partition
    ``i % reduces``, the others empty; an aggregate and a model write one model-sized vector."""
    job = small(maps=5, reduces=2)
    local = LocalJob(plan_job(job, SEED, None), tmp_path).run(64 << 20)
    vector = mlr.vector_bytes((job.features + 1) * job.classes)
    for (stage, index), run in local.tasks.items():
        if run.spec.op == "mlr.gradient":
            assert run.partition_bytes == tuple(vector if p == index % 2 else 0 for p in range(2))
        elif run.spec.op == "mlr.aggregate" or (run.spec.op == "mlr.model" and not run.spec.final):
            assert run.partition_bytes == (vector,), (stage, index)


def test_an_aggregate_that_receives_no_gradient_writes_nothing(tmp_path: Path) -> None:
    """More aggregates than gradients: the third gets no vector and writes an empty block,
    which the model task does not read; the result is still the reference's."""
    job = small(maps=2, reduces=3)
    local = LocalJob(plan_job(job, SEED, None), tmp_path).run(64 << 20)
    assert check_output(job, SEED, local.outputs) == []
    assert local.tasks[(2, 2)].partition_bytes == (0,)


def test_a_partial_aggregate_is_one_vector_whatever_aggregates_its_gradients_were_bound_for(
    tmp_path: Path,
) -> None:
    """Pado's combiner over gradients 0, 1 and 2 of 3 (bound for aggregates 0, 1 and 0 of 2):
    one summed vector, whole in the partition ``combined_partition`` picks among theirs, the
    other partition empty; it equals the three gradients summed."""
    job = small()
    local = LocalJob(plan_job(job, SEED, None), tmp_path).run(64 << 20)
    fetcher = BlockFetcher(local.blocks, "local")
    size = (job.features + 1) * job.classes

    def frames_of(partition: int):
        for i in (0, 1, 2):
            ref = BlockRef(block=local.tasks[(1, i)].spec.block_id, partition=partition, locations=("local",))
            yield from fetcher.frames(ref)

    writer = BlockWriter(local.blocks, "combined", 2)
    COMBINERS["mlr.gradient"](frames_of, writer)
    target = mlr.combined_partition([0, 1])
    sizes = [0, 0]
    sizes[target] = mlr.vector_bytes(size)
    assert writer.commit() == tuple(sizes)
    combined, direct = np.zeros(size), np.zeros(size)
    summed = BlockRef(block="combined", partition=target, locations=("local",))
    mlr.add_frames(fetcher.frames(summed), combined)
    for partition in (0, 1):
        mlr.add_frames(frames_of(partition), direct)
    assert np.allclose(combined, direct, rtol=1e-14, atol=0) and np.abs(direct).max() > 0


def test_pado_places_the_gradients_on_transient_and_the_aggregation_on_reserved() -> None:
    plan = plan_job(small(), SEED, None)
    dag = logical_dag(plan)
    assert dag is not None
    classes = stage_classes(compile_pado(dag), plan)
    ops = [s.op for s in plan.stages]
    assert [c for c, op in zip(classes, ops, strict=True) if op in ("mlr.points", "mlr.gradient")] == [
        "transient"
    ] * 4
    assert [c for c, op in zip(classes, ops, strict=True) if op in ("mlr.aggregate", "mlr.model")] == [
        "reserved"
    ] * 6
    assert len(physical_operators(plan)) == len(plan.stages)
    kinds = [[d.kind for d in s.deps] for s in plan.stages]
    assert kinds[4] == ["narrow", "broadcast"] and kinds[6] == ["shuffle", "narrow"]


@pytest.mark.parametrize("strategy", ["spark", "spark-checkpoint", "pado"])
def test_an_mlr_job_runs_on_the_simulator_under_each_strategy(tmp_path: Path, strategy: str) -> None:
    from tests.support.sim import events, rows, simulate

    result = simulate(
        tmp_path,
        cluster={"reserved": {"count": 1, "slots": 1}, "transient": {"count": 4, "slots": 1}},
        policy={"strategy": strategy},
        jobs=[{"workload": "mlr", "points": 8000, "features": 500, "classes": 100, "maps": 8, "reduces": 2}],
    )
    (job,) = rows(result.run_dir, "jobs")
    assert result.ok and job["status"] == "succeeded"
    placed = {(e["stage"], e["class"]) for e in events(result.run_dir, "task_started")}
    gradients = {cls for stage, cls in placed if stage in (1, 4, 7, 10, 13)}
    models = {cls for stage, cls in placed if stage in (3, 6, 9, 12, 15)}
    if strategy in ("pado", "spark"):  # no eviction: each gradient runs where its points are
        nodes = {(e["stage"], e["index"]): e["node"] for e in events(result.run_dir, "task_started")}
        local = sum(nodes[(s, i)] == nodes[(0, i)] for s in (1, 4, 7, 10, 13) for i in range(8))
        assert local >= 20, local
    assert models == {"reserved"}  # Pado's Algorithm 1; Spark's driver (tests/core/test_spark_driver.py)
    if strategy == "pado":
        assert gradients == {"transient"}
    if strategy == "spark-checkpoint":
        assert gradients == {"transient"}


def test_the_simulator_sizes_gradients_and_models_as_the_real_tasks_write_them(tmp_path: Path) -> None:
    """Every gradient and model has the model's shape, the first iteration's (which reads no
    model) too: the execution model's output bytes are those the real tasks wrote."""
    from master.execution_model import MODEL_SHAPED, ExecutionModel
    from testbed.scenario.schema import parse_scenario

    job = small(features=300, classes=5)  # 1,505 values
    local = LocalJob(plan_job(job, SEED, None), tmp_path).run(64 << 20)
    scenario = parse_scenario({"name": "mlr", "jobs": [job.model_dump(exclude_none=True)]})
    model = ExecutionModel(scenario, lambda job, stage: 256, lambda job, stage: ("shuffle",))
    shaped = [run for run in local.tasks.values() if run.spec.op in MODEL_SHAPED and not run.spec.final]
    assert len(shaped) == 3 * 3 + 2  # the gradients of 3 iterations, the first 2 models
    for run in shaped:
        written = sum(run.partition_bytes)
        assert written == run.metrics.bytes_out > 0
        for bytes_in in (1, run.metrics.bytes_in):  # however much it read
            assert model.cost(run.spec, bytes_in, 0.0, "transient").bytes_out == written, run.spec.task_id
        assert model.output_parts(run.spec, written) == run.partition_bytes  # a gradient's one partition


@pytest.mark.parametrize("values", [0, 1, 131_072, 131_073, 512_512])
def test_vector_bytes_is_the_size_of_the_block_written(tmp_path: Path, values: int) -> None:
    writer = BlockWriter(tmp_path, "v", 1)
    mlr.write_values(writer, 0, np.zeros(values), 0)
    assert writer.commit() == (mlr.vector_bytes(values),)
