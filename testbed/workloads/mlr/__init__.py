"""Multinomial logistic regression by gradient descent: the Pado paper's MLR (section 5.2.2).

Training data: ``points`` samples of ``features`` dimensions, each labelled with one of
``classes`` classes, generated (seeded numpy) in ``maps`` partitions: features are standard
normal, and a sample's label is drawn from the softmax of a hidden true model's scores (the
Gumbel-max trick), so the classes are learnable but not separable. The model ``W`` has one
column per class and one row per feature plus a first row of biases.

Each iteration ``k`` computes, with ``X`` the samples (a column of ones prepended), ``Y``
their one-hot labels and ``N`` their number,
``W_k = W_{k-1} - learning_rate * (X^T (softmax(X W_{k-1}) - Y) / N + regularization * R W_{k-1})``
(``R`` zeroes the bias row: biases are not penalised), from ``W_0 = 0``.

Stages (P = ``maps``, A = the job's ``reduces``, K = ``iterations``):

- ``mlr.points`` (P tasks, a source): generates its partition of the training data (through the
  node's input cache under Pado) and keeps it as its output, read by every iteration
  (narrow): Spark's cached training RDD.
- per iteration, ``mlr.gradient`` (P tasks; narrow on the points, broadcast of the previous
  model, none in iteration 1): the partition's summed gradient, written whole into
  partition ``i % A`` of task ``i``'s output, its other partitions empty: MLlib's
  ``treeAggregate`` (each partition's one record keyed ``i % A``, ``foldByKey`` over A
  hash partitions), as the Pado paper's Spark runs it (section 5.2.2: "each of the 22
  aggregate tasks pulls 550/22 vectors"). A reader never fetches an empty partition
  (``master.core.jobs.JobRuntime.dep_refs``, as Spark's reducers skip zero-size blocks).
- ``mlr.aggregate`` (A tasks, shuffle): aggregate ``a`` sums the whole gradients of tasks
  ``a, a + A, ...`` into one model-sized vector (commutative and associative: Pado partially
  aggregates the gradients of a node bound for one aggregate first, as the paper does); one
  that received none writes nothing.
- ``mlr.model`` (one task; a gather of the A vectors, narrow on the previous model): the
  update above. The last one writes the model, one line per class:
  ``class<TAB>bias w_1 ... w_features``.

Every frame of the model or a gradient carries its offset in the flat model vector
(row-major ``W``), so a reader sums frames in any order: the order in which pushes,
partial aggregates and fetches arrive never matters beyond floating-point rounding.

Memory: a gradient task holds the model and its gradient (16 bytes per model entry) and
streams its points in frames of at most ``FRAME_BYTES``; an aggregate task holds one
model-sized sum, a model task the model and the gradient. Nothing grows with the data, so
nothing spills: a smaller budget only makes the gradient task take its points in smaller
pieces.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from testbed.plan import Dependency, JobPlan, StagePlan
from testbed.wire.blocks import FRAME_HEADER, BlockWriter
from testbed.workloads.base import Combiner, TaskContext, TaskFunction
from testbed.workloads.mlr.lineage_dag import lineage as lineage

if TYPE_CHECKING:
    from testbed.scenario.schema import MlrJob, Scenario
    from testbed.workloads.task_model import Role

POINTS_PER_SPLIT = 50_000
FRAME_BYTES = 1 << 20
"""Largest frame of points or model values written."""
OFFSET = np.dtype("<i8")
BUFFER_FRACTION = 0.5
"""Share of the budget for the model, its gradient and the piece of samples being processed
(the rest: the worker's own buffers, numpy's temporaries)."""
MIN_PIECE_ROWS = 256
"""The fewest samples a gradient task takes at once, however small its budget."""
TRUTH = 0x6D6C72
"""Mixed into the seed of the hidden true model."""


# ------------------------------------------------------------------ data


def true_model(seed: int, features: int, classes: int) -> np.ndarray:
    """The hidden model the labels are drawn from: (features + 1) x classes, biases first."""
    rng = np.random.default_rng([seed, TRUTH])
    model = rng.standard_normal((features + 1, classes))
    model[1:] *= 3.0 / math.sqrt(features)
    return model


def piece_points(features: int) -> int:
    """Samples per generated piece (a frame of at most ``FRAME_BYTES``)."""
    return max(1, FRAME_BYTES // (8 * (features + 1)))


def generate_split(generate: dict[str, Any]) -> Iterator[np.ndarray]:
    """A split's samples as rows ``label, x_1 .. x_features`` (float64), piece by piece."""
    seed, index, count = generate["seed"], generate["index"], generate["count"]
    features, classes = generate["features"], generate["classes"]
    truth = true_model(seed, features, classes)
    step = piece_points(features)
    for piece, start in enumerate(range(0, count, step)):
        n = min(step, count - start)
        rng = np.random.default_rng([seed, index, piece])
        rows = np.empty((n, features + 1))
        rows[:, 1:] = rng.standard_normal((n, features))
        scores = rows[:, 1:] @ truth[1:] + truth[0]
        rows[:, 0] = np.argmax(scores + rng.gumbel(size=(n, classes)), axis=1)
        yield rows


def sources_of(job: MlrJob, seed: int) -> list[dict[str, Any]]:
    maps = job.maps or max(1, math.ceil(job.points / POINTS_PER_SPLIT))
    bounds = [job.points * i // maps for i in range(maps + 1)]
    return [
        {
            "generate": {
                "seed": seed,
                "index": i,
                "count": bounds[i + 1] - bounds[i],
                "features": job.features,
                "classes": job.classes,
                "nbytes": (bounds[i + 1] - bounds[i]) * 8 * (job.features + 1),
            }
        }
        for i in range(maps)
    ]


# ------------------------------------------------------------------ plan


def plan(job: MlrJob, seed: int, scenario: Scenario | None = None) -> JobPlan:
    del scenario  # every workload's plan takes it (``catalog.plan_job``); this one needs none
    sources = sources_of(job, seed)
    parts, aggregates = len(sources), job.reduces
    shared = {
        "features": job.features,
        "classes": job.classes,
        "points": job.points,
        "learning_rate": job.learning_rate,
        "regularization": job.regularization,
    }
    stages = [StagePlan("mlr.points", parts, 1, task_params=tuple(sources))]
    model = None
    for iteration in range(1, job.iterations + 1):
        last = iteration == job.iterations
        broadcast = () if model is None else (Dependency(model, "broadcast"),)
        stages.append(
            StagePlan(
                "mlr.gradient", parts, aggregates, (Dependency(0, "narrow"), *broadcast), shared_params=shared
            )
        )
        stages.append(
            StagePlan(
                "mlr.aggregate",
                aggregates,
                1,
                (Dependency(len(stages) - 1, "shuffle"),),
                shared_params=shared,
            )
        )
        previous = () if model is None else (Dependency(model, "narrow"),)
        stages.append(
            StagePlan(
                "mlr.model",
                1,
                1,
                (Dependency(len(stages) - 1, "shuffle"), *previous),
                final=last,
                shared_params={**shared, "iteration": iteration},
            )
        )
        model = len(stages) - 1
    return JobPlan("mlr", tuple(stages))


def model_size(params: dict[str, Any]) -> int:
    """Values of the flat model vector: (features + 1) x classes."""
    return (params["features"] + 1) * params["classes"]


def gradient_partition(index: int, partitions: int) -> int:
    """The one partition gradient task ``index`` writes its gradient into (``treeAggregate``'s
    key ``i % partitions``)."""
    return index % partitions


def vector_bytes(values: int) -> int:
    """Bytes of the block ``write_values`` writes for ``values`` values: 8 each, and per frame
    its offset and the block's frame header."""
    frames = max(1, -(-values // (FRAME_BYTES // 8)))
    return 8 * values + (OFFSET.itemsize + FRAME_HEADER.size) * frames


def model_shaped_bytes(params: dict[str, Any]) -> int:
    """Bytes a gradient or a model task writes: one vector of the model's (features + 1) x
    classes values, whatever the task read."""
    return vector_bytes(model_size(params))


def gradient_parts(index: int, partitions: int, total: int) -> tuple[int, ...]:
    """A gradient block's partitions: all its ``total`` bytes in ``gradient_partition``."""
    parts = [0] * partitions
    parts[gradient_partition(index, partitions)] = total
    return tuple(parts)


# ------------------------------------------------------------------ frames of values


def write_values(writer: BlockWriter, partition: int, values: np.ndarray, offset: int) -> None:
    """``values`` (float64) as frames of ``offset`` + data, at most ``FRAME_BYTES`` each;
    one frame at least, so that an empty vector still says it is there."""
    step = FRAME_BYTES // 8
    for start in range(0, max(1, len(values)), step):
        chunk = values[start : start + step]
        writer.write(partition, np.array([offset + start], OFFSET).tobytes() + chunk.tobytes())


def read_values(frame: bytes) -> tuple[int, np.ndarray]:
    return int(np.frombuffer(frame[:8], OFFSET)[0]), np.frombuffer(frame[8:], np.float64)


def add_frames(frames: Iterator[bytes], into: np.ndarray, lo: int = 0) -> None:
    """Add each frame's values at its offset (minus ``lo``) into ``into``."""
    for frame in frames:
        offset, values = read_values(frame)
        into[offset - lo : offset - lo + len(values)] += values


def _model(ctx: TaskContext, dependency: int | None) -> np.ndarray:
    features, classes = ctx.params["features"], ctx.params["classes"]
    flat = np.zeros((features + 1) * classes)
    if dependency is not None:
        add_frames(ctx.input_frames(dependency), flat)
    return flat.reshape(features + 1, classes)


# ------------------------------------------------------------------ tasks


def points_task(ctx: TaskContext) -> None:
    chunks = (rows.tobytes() for rows in generate_split(ctx.params["generate"]))
    if ctx.caches_input:
        chunks = ctx.through_input_cache(chunks)
    writer = ctx.open_output()
    writer.write(0, b"")  # a partition with no sample still has a block
    width = 8 * (ctx.params["generate"]["features"] + 1)
    for chunk in chunks:
        writer.write(0, chunk)
        ctx.metrics.bytes_in += len(chunk)  # generated, as sort's and wordcount's sources count theirs
        ctx.metrics.records_in += len(chunk) // width
        ctx.metrics.records_out += len(chunk) // width
    ctx.commit_output(writer)


def gradient_task(ctx: TaskContext) -> None:
    """The summed gradient of the partition's samples at the previous model."""
    model = _model(ctx, 1 if len(ctx.spec.inputs) > 1 else None)
    gradient = np.zeros_like(model)
    features = model.shape[0] - 1
    row_bytes = 8 * (features + 1 + 2 * model.shape[1])
    """A row in memory while its piece is processed: the row, its scores and their gradient term."""
    rows_per_piece = max(
        MIN_PIECE_ROWS, int(ctx.budget_bytes * BUFFER_FRACTION - 2 * model.nbytes) // row_bytes
    )
    rows_per_frame = max(1, FRAME_BYTES // (8 * (features + 1)))
    ctx.note_buffered(2 * model.nbytes + min(rows_per_piece, rows_per_frame) * row_bytes)
    for frame in ctx.input_frames(0):
        rows = np.frombuffer(frame, np.float64).reshape(-1, features + 1)
        for start in range(0, len(rows), rows_per_piece):
            _add_gradient(rows[start : start + rows_per_piece], model, gradient)
        ctx.metrics.records_in += len(rows)
    writer = ctx.open_output()
    flat = gradient.ravel()
    write_values(writer, gradient_partition(ctx.spec.index, ctx.spec.partitions), flat, 0)
    ctx.metrics.records_out = flat.size
    ctx.commit_output(writer)


def _add_gradient(rows: np.ndarray, model: np.ndarray, gradient: np.ndarray) -> None:
    """``gradient += X^T (softmax(X W) - Y)`` over the rows (label, features)."""
    x, labels = rows[:, 1:], rows[:, 0].astype(np.int64)
    scores = x @ model[1:] + model[0]
    scores -= scores.max(axis=1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=1, keepdims=True)
    scores[np.arange(len(rows)), labels] -= 1.0
    gradient[1:] += x.T @ scores
    gradient[0] += scores.sum(axis=0)


def combined_partition(partitions: list[int]) -> int:
    """The one partition a partial aggregate of gradients bound for ``partitions`` (those its
    members write, sorted) goes to, whole. Pado sums every gradient held on a node into one
    vector, whatever aggregate each was bound for: the paper sent 303 partial aggregates for
    550 gradients an iteration, fewer than sums keyed by aggregate could be (about 420 at 14
    gradients a node). Any aggregate may sum it, since the model task sums them all; one of
    the members' own, picked by their sum, spreads the vectors over the aggregates."""
    return partitions[sum(partitions) % len(partitions)]


def combine_gradients(frames_of: Any, writer: BlockWriter) -> None:
    """Pado's partial aggregation: several gradient tasks' outputs on one node summed into one
    vector, in the partition ``combined_partition`` picks; the others stay empty. Every
    gradient is framed alike (``write_values`` from offset 0), so frames of one offset are
    summed as they come: only the sum is held, not every member's vector."""
    sums: dict[int, np.ndarray] = {}
    written: list[int] = []
    for partition in range(writer.partitions):
        frames = 0
        for frame in frames_of(partition):
            offset, values = read_values(frame)
            held = sums.get(offset)
            if held is None:
                sums[offset] = values.copy()
            elif len(held) == len(values):
                held += values
            else:
                raise ValueError(f"frames at offset {offset} of {len(held)} and {len(values)} values")
            frames += 1
        if frames:
            written.append(partition)
    if not written:
        return
    target = combined_partition(written)
    for offset in sorted(sums):
        writer.write(target, np.array([offset], OFFSET).tobytes() + sums[offset].tobytes())


def aggregate_task(ctx: TaskContext) -> None:
    """The sum of the whole gradients (or partial aggregates) of this aggregate's partition:
    one model-sized vector; nothing when none was written to it."""
    total = np.zeros(model_size(ctx.params))
    ctx.note_buffered(total.nbytes)
    received = False
    for frame in ctx.input_frames(0):
        offset, values = read_values(frame)
        total[offset : offset + len(values)] += values
        received = True
    writer = ctx.open_output()
    if received:
        write_values(writer, 0, total, 0)
        ctx.metrics.records_out = total.size
    ctx.commit_output(writer)


def model_task(ctx: TaskContext) -> None:
    """The gradient step; the last iteration writes the model."""
    previous = _model(ctx, 1 if len(ctx.spec.inputs) > 1 else None)
    gradient = np.zeros(previous.size)
    add_frames(ctx.input_frames(0), gradient)
    ctx.note_buffered(2 * previous.nbytes)
    model = step(previous, gradient.reshape(previous.shape), ctx.params)
    if ctx.spec.final:
        write_model(ctx.final_path, model)
        ctx.metrics.records_out = model.shape[1]
        return
    writer = ctx.open_output()
    write_values(writer, 0, model.ravel(), 0)
    ctx.commit_output(writer)


def step(model: np.ndarray, gradient: np.ndarray, params: dict[str, Any]) -> np.ndarray:
    penalty = params["regularization"] * model
    penalty[0] = 0.0
    return model - params["learning_rate"] * (gradient / params["points"] + penalty)


def write_model(path: Path, model: np.ndarray) -> None:
    with open(path, "w", encoding="ascii") as out:
        for c in range(model.shape[1]):
            out.write(f"{c}\t" + " ".join(repr(float(w)) for w in model[:, c]) + "\n")


# ------------------------------------------------------------------ reference and check


def reference_output(job: MlrJob, seed: int) -> np.ndarray:
    """The textbook full-batch gradient descent in one process over the same generated data:
    ``W -= lr * (X^T (softmax(X W) - Y) / N + regularization * W)``, biases unpenalised."""
    rows = np.concatenate([piece for s in sources_of(job, seed) for piece in generate_split(s["generate"])])
    x = np.hstack([np.ones((len(rows), 1)), rows[:, 1:]])
    y = np.zeros((len(rows), job.classes))
    y[np.arange(len(rows)), rows[:, 0].astype(np.int64)] = 1.0
    model = np.zeros((job.features + 1, job.classes))
    mask = np.ones_like(model)
    mask[0] = 0.0
    for _ in range(job.iterations):
        scores = x @ model
        probabilities = np.exp(scores - scores.max(axis=1, keepdims=True))
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        model = model - job.learning_rate * (
            x.T @ (probabilities - y) / len(rows) + job.regularization * mask * model
        )
    return model


def read_output(directory: Path) -> np.ndarray:
    """The model a job wrote (``part-00000``), (features + 1) x classes; ValueError if malformed."""
    columns: dict[int, list[float]] = {}
    for line in (Path(directory) / "part-00000").read_text(encoding="ascii").splitlines():
        label, _, values = line.partition("\t")
        columns[int(label)] = [float(v) for v in values.split()]
    if sorted(columns) != list(range(len(columns))) or len({len(c) for c in columns.values()}) > 1:
        raise ValueError("expected one line per class 0..C-1, each with the same number of weights")
    return np.array([columns[c] for c in range(len(columns))]).T


RTOL = 1e-9
"""The check's tolerance, relative to the largest weight. The job and the reference compute the
same sums in other orders (per partition, per partial aggregate, per aggregate, as the blocks
arrive), so they differ by rounding alone: about the float64 epsilon (2.2e-16) times the
number of terms summed (at most the points), far below 1e-9 for up to a million points; a
wrong gradient, a missed or doubled partition or a stale model is off by far more."""


def check(job: MlrJob, seed: int, directory: Path) -> list[str]:
    try:
        got = read_output(directory)
    except (OSError, ValueError) as exc:
        return [f"unreadable output: {exc}"]
    expected = reference_output(job, seed)
    if got.shape != expected.shape:
        return [f"a model of {got.shape} weights, expected {expected.shape} (features + 1 x classes)"]
    error = np.abs(got - expected).max()
    scale = max(1e-300, float(np.abs(expected).max()))
    if error > RTOL * scale:
        return [f"the model differs from the reference by {error:.3g} (largest weight {scale:.3g})"]
    return []


OPERATIONS: dict[str, TaskFunction] = {
    "mlr.points": points_task,
    "mlr.gradient": gradient_task,
    "mlr.aggregate": aggregate_task,
    "mlr.model": model_task,
}
"""The task functions of its ops (``testbed.workloads.catalog.OPERATIONS`` gathers every workload's)."""
COMBINERS: dict[str, Combiner] = {"mlr.gradient": combine_gradients}
"""Ops whose outputs may be partially aggregated on their node before a push (Pado)."""
PROFILED_STAGES: dict[Role, int] = {"map": 1, "reduce": 2}
"""The stage ``testbed profile`` measures for each role: iteration 1's gradient and aggregate tasks."""
NEVER_SPILLS = True
"""Its buffers do not grow with its input: a smaller budget takes the input in smaller pieces
instead of spilling (``testbed.workloads.profile``)."""
RECORD_BYTES = 1
"""A generated partition's count of samples, as the simulator sizes it (its outputs are shaped by
the model: ``master.execution_model.MODEL_SHAPED``)."""
generate = None
"""It reads no input file: its tasks generate their samples."""
