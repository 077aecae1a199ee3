"""User workloads: a job whose ``workload`` names a plugin class (``testbed.api.Workload``).

Two stages (and one more per round of ``step``, below), like Hadoop Streaming over the
framework's own machinery: ``plugin.map``
tasks read their split (byte ranges of the input files, cut at line boundaries, or the
plugin's ``generate``), call ``read`` and ``map``, and hold the pairs in a
``GroupBuffer`` (partitioned by CRC32 of the key's msgpack bytes, spilled sorted under
the budget, combined by the plugin's ``combine``); ``plugin.reduce`` tasks fetch their
partition of every map output, merge it the same way and call ``reduce`` once per key,
in key order, writing the returned lines to the part file. A plugin with ``iterations``
N > 0 has N ``plugin.step`` stages between them: each merges its partition like a reducer
and calls ``step(round, key, values)``, whose pairs it partitions, spills and serves like
a map's (iterative MapReduce as Hadoop runs it: a chain of jobs, each round's state in
its pairs).

The plugin is imported in the worker process from the task's params (its import path
or entry-point name, and its options): the agents' ``PYTHONPATH`` must reach it
(``policy.plugin_path``; docs/plugins.md). An exception in the plugin's code, or a
record it emits that the shuffle cannot carry, fails the task as ``WorkloadError``
(a data failure: not retried, the job fails, nothing is committed for it).

``reference_output`` computes the job's output lines in one process, from the input
files as ``reference_inputs`` reads them: by the plugin's ``reference`` when it has
one, else by ``map`` and ``reduce`` over an in-memory grouping without the combiner.
"""

from __future__ import annotations

import itertools
import operator
import traceback
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgpack

from testbed.plan import Dependency, JobPlan, StagePlan
from testbed.scenario.errors import ScenarioError
from testbed.scenario.plugins import find_plugin
from testbed.scenario.splitting import line_splits
from testbed.workloads.base import Combiner, FetchFailed, TaskContext, TaskFunction, WorkloadError
from testbed.workloads.dag import plan_dag
from testbed.workloads.groups import GroupBuffer, RecordError, pack_pair
from testbed.workloads.reference_inputs import line_chunks, reference_files
from testbed.workloads.spill import SpillFiles
from testbed.workloads.splits import read_lines_range

if TYPE_CHECKING:  # the scenario schema is the master's: a worker imports it for no task
    from testbed.scenario.schema import PluginJob, Scenario

SPLIT_MB = 8
GENERATED_MAPS = 4
"""Map tasks of a job without ``input`` and without ``maps``."""
BUFFER_FRACTION = 0.5
"""Share of the budget for the record buffer; the rest is the plugin's own working memory."""
PAIRS_PER_FRAME = 512


def load_workload(name: str, options: dict[str, Any], field: str = "workload") -> Any:
    """The plugin ``name`` built with its options (a ``ScenarioError`` naming ``field`` otherwise)."""
    return find_plugin("workload", name, field).build(options)


def iterations_of(workload: Any) -> int:
    """The rounds of ``step`` between ``map`` and ``reduce``."""
    return int(workload.iterations)


def partition_of(key: Any, partitions: int) -> int:
    return zlib.crc32(msgpack.packb(key)) % partitions


# ------------------------------------------------------------------ plan


def sources_of(job: PluginJob, seed: int) -> list[dict[str, Any]]:
    if job.input:
        return line_splits(job.input, job.maps, SPLIT_MB)
    maps = job.maps or GENERATED_MAPS
    plugin = {"workload": job.workload, "options": job.options}
    return [{"generate": {**plugin, "split": i, "splits": maps, "seed": seed}} for i in range(maps)]


def plan(job: PluginJob, seed: int, scenario: Scenario | None = None) -> JobPlan:
    """``plugin.map`` over the splits, one ``plugin.step`` stage per round of the plugin's
    ``iterations``, then ``plugin.reduce``: each reads its parent's output through a shuffle."""
    del scenario  # every workload's plan takes it (``catalog.plan_job``); this one needs none
    workload = load_workload(job.workload, job.options)
    if workload.dag is not None:
        return planned_dag(job, seed, workload)
    sources = sources_of(job, seed)
    shared = {"workload": job.workload, "options": job.options}
    rounds = iterations_of(workload)
    stages = [
        StagePlan("plugin.map", len(sources), job.reduces, task_params=tuple(sources), shared_params=shared)
    ]
    for round_ in range(1, rounds + 1):
        stages.append(
            StagePlan(
                "plugin.step",
                job.reduces,
                job.reduces,
                (Dependency(round_ - 1, "shuffle"),),
                shared_params={**shared, "round": round_},
            )
        )
    stages.append(
        StagePlan(
            "plugin.reduce",
            job.reduces,
            1,
            (Dependency(rounds, "shuffle"),),
            final=True,
            shared_params=shared,
        )
    )
    return JobPlan(job.workload, tuple(stages))


def planned_dag(job: PluginJob, seed: int, workload: Any) -> JobPlan:
    """The plan of a plugin's ``dag(job)`` (``testbed.scenario.dag_jobs``)."""
    from testbed.scenario.dag_jobs import dag_of

    return plan_dag(job.workload, dag_of(job, seed, workload))


# ------------------------------------------------------------------ calling the plugin


def _failed(workload: Any, method: str, exc: BaseException) -> WorkloadError:
    trace = "".join(traceback.format_exception(exc, limit=-3))[-2000:]
    return WorkloadError(f"{type(workload).__name__}.{method}() raised {type(exc).__name__}: {exc}\n{trace}")


def calling(workload: Any, method: str, *args: Any) -> Iterator[Any]:
    """What the plugin's method returns (or yields), item by item; an exception in its
    code is a ``WorkloadError`` with its traceback. A str or bytes result is one item."""
    try:
        result = getattr(workload, method)(*args)
        if result is None:
            return
        if isinstance(result, str | bytes):
            yield result
            return
        yield from result
    except (MemoryError, FetchFailed, WorkloadError):
        raise
    except Exception as exc:
        raise _failed(workload, method, exc) from exc


def emitted_pairs(workload: Any, record: Any) -> Iterator[tuple[Any, Any]]:
    for pair in calling(workload, "map", record):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise WorkloadError(
                f"{type(workload).__name__}.map() must yield (key, value) pairs, got {pair!r}"
            )
        yield pair[0], pair[1]


def combiner(workload: Any) -> Callable[[Any, list[Any]], Any] | None:
    if workload.combine is None:
        return None

    def combine(key: Any, values: list[Any]) -> Any:
        try:
            return workload.combine(key, values)
        except (MemoryError, WorkloadError):
            raise
        except Exception as exc:
            raise _failed(workload, "combine", exc) from exc

    return combine


def stepped_pairs(workload: Any, round_: int, key: Any, values: Iterator[Any]) -> Iterator[tuple[Any, Any]]:
    for pair in calling(workload, "step", round_, key, values):
        if not isinstance(pair, tuple | list) or len(pair) != 2:
            raise WorkloadError(
                f"{type(workload).__name__}.step() must yield (key, value) pairs, got {pair!r}"
            )
        yield pair[0], pair[1]


def output_lines(workload: Any, key: Any, values: Iterator[Any]) -> Iterator[str]:
    for line in calling(workload, "reduce", key, values):
        if not isinstance(line, str):
            raise WorkloadError(f"{type(workload).__name__}.reduce() must return str lines, got {line!r}")
        yield line


def source_chunks(workload: Any, source: dict[str, Any]) -> Iterator[bytes]:
    if "generate" in source:
        g = source["generate"]
        for chunk in calling(workload, "generate", g["split"], g["splits"], g["seed"]):
            if not isinstance(chunk, bytes):
                raise WorkloadError(
                    f"{type(workload).__name__}.generate() must yield bytes, got {chunk!r:.80}"
                )
            yield chunk
    else:
        f = source["file"]
        yield from read_lines_range(f["path"], f["start"], f["end"])


# ------------------------------------------------------------------ tasks


def task_workload(ctx: TaskContext) -> Any:
    try:
        return load_workload(ctx.params["workload"], ctx.params["options"])
    except ScenarioError as exc:
        raise WorkloadError(
            f"{exc}; is its directory on the agents' PYTHONPATH (policy.plugin_path, docs/plugins.md)?"
        ) from None


def new_buffer(
    ctx: TaskContext, workload: Any, partitions: int, files: SpillFiles | None = None, share: float = 1.0
) -> GroupBuffer:
    """A buffer of ``share`` of the task's record buffer; buffers of one task share ``files``
    (their spill files' names)."""
    return GroupBuffer(
        lambda key: partition_of(key, partitions),
        partitions,
        int(ctx.budget_bytes * BUFFER_FRACTION * share),
        files or SpillFiles(ctx.scratch, ctx.metrics),
        combiner(workload),
    )


def _frames(pairs: Iterator[tuple[Any, Any]]) -> Iterator[list[tuple[Any, Any]]]:
    while frame := list(itertools.islice(pairs, PAIRS_PER_FRAME)):
        yield frame


def map_task(ctx: TaskContext) -> None:
    workload = task_workload(ctx)
    buffer = new_buffer(ctx, workload, ctx.spec.partitions)
    try:
        for chunk in ctx.through_input_cache(source_chunks(workload, ctx.params)):
            ctx.metrics.bytes_in += len(chunk)
            for record in calling(workload, "read", chunk):
                ctx.metrics.records_in += 1
                for key, value in emitted_pairs(workload, record):
                    buffer.add(key, value)
        _write_pairs(ctx, buffer)
    except RecordError as exc:
        raise WorkloadError(f"{type(workload).__name__}.map(): {exc}") from None


def _write_pairs(ctx: TaskContext, buffer: GroupBuffer) -> None:
    """The buffer's pairs, partition by partition, as the task's shuffle output."""
    writer = ctx.open_output()
    for partition, pairs in buffer.finish():
        for frame in _frames(pairs):
            ctx.metrics.records_out += len(frame)
            writer.write(partition, msgpack.packb(frame))
    ctx.commit_output(writer)


def _grouped_input(
    ctx: TaskContext, workload: Any, files: SpillFiles | None = None, share: float = 1.0
) -> Iterator[tuple[Any, Iterator[Any]]]:
    """The task's shuffled input, merged under the budget: each key with its values, in key order."""
    buffer = new_buffer(ctx, workload, 1, files, share)
    for frame in ctx.input_frames(0):
        pairs = msgpack.unpackb(frame, use_list=False)
        ctx.metrics.records_in += len(pairs)
        for key, value in pairs:
            buffer.add(key, value)
    for _, pairs in buffer.finish():
        for key, group in itertools.groupby(pairs, key=operator.itemgetter(0)):
            yield key, (value for _, value in group)


def step_task(ctx: TaskContext) -> None:
    """One round of ``step``: the grouped input in, its pairs shuffled to the next stage."""
    workload = task_workload(ctx)
    files = SpillFiles(ctx.scratch, ctx.metrics)  # two buffers, each half the record buffer
    buffer = new_buffer(ctx, workload, ctx.spec.partitions, files, share=0.5)
    try:
        for key, values in _grouped_input(ctx, workload, files, share=0.5):
            for new_key, value in stepped_pairs(workload, ctx.params["round"], key, values):
                buffer.add(new_key, value)
        _write_pairs(ctx, buffer)
    except RecordError as exc:
        raise WorkloadError(f"{type(workload).__name__}.step(): {exc}") from None


def reduce_task(ctx: TaskContext) -> None:
    workload = task_workload(ctx)
    with open(ctx.final_path, "w", encoding="utf-8") as out:
        try:
            for key, values in _grouped_input(ctx, workload):
                for line in output_lines(workload, key, values):
                    out.write(line + "\n")
                    ctx.metrics.records_out += 1
        except RecordError as exc:
            raise WorkloadError(f"{type(workload).__name__}.reduce(): {exc}") from None


# ------------------------------------------------------------------ reference


def lines_of(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def input_chunks(job: PluginJob, seed: int, workload: Any) -> Iterator[bytes]:
    """The job's whole input: files as ``reference_inputs`` lists and reads them, else
    the plugin's ``generate`` for every split the plan makes."""
    if job.input:
        for path in reference_files(job.input):
            yield from line_chunks(path)
        return
    for source in sources_of(job, seed):
        yield from source_chunks(workload, source)


def _grouped(pairs: Iterable[tuple[Any, Any]]) -> dict[Any, list[Any]]:
    groups: defaultdict[Any, list[Any]] = defaultdict(list)
    for pair in pairs:
        key, value = msgpack.unpackb(pack_pair(*pair), use_list=False)  # as the shuffle carries them
        groups[key].append(value)
    return groups


def grouped_output(workload: Any, records: Iterable[Any]) -> Iterator[str]:
    """``map``, every round of ``step`` and ``reduce`` in one process: every pair held in a
    dict, no combiner."""
    groups = _grouped(pair for record in records for pair in emitted_pairs(workload, record))
    for round_ in range(1, iterations_of(workload) + 1):
        groups = _grouped(
            pair for key in sorted(groups) for pair in stepped_pairs(workload, round_, key, iter(groups[key]))
        )
    for key in sorted(groups):
        yield from output_lines(workload, key, iter(groups[key]))


def reference_output(job: PluginJob, seed: int) -> Counter[str]:
    """The output lines of a correct run of the job (a multiset: part files split keys anyhow)."""
    workload = load_workload(job.workload, job.options)
    if workload.dag is not None:
        return Counter(line for text in dag_reference(job, seed, workload) for line in lines_of(text + "\n"))
    records = (r for chunk in input_chunks(job, seed, workload) for r in calling(workload, "read", chunk))
    if workload.reference is not None:
        lines = calling(workload, "reference", records)
    else:
        lines = grouped_output(workload, records)
    return Counter(line for text in lines for line in lines_of(text + "\n"))


def dag_reference(job: PluginJob, seed: int, workload: Any) -> Iterator[str]:
    """A DAG workload's reference: its ``reference(job)``, given the ``JobInputs`` its
    ``dag(job)`` got (a DAG's sources are its own, so there are no records to hand it)."""
    if workload.reference is None:
        raise WorkloadError(f"{type(workload).__name__} plans a dag() but has no reference(job) to check by")
    from testbed.scenario.dag_jobs import job_inputs

    yield from calling(workload, "reference", job_inputs(job, seed))


def read_output(directory: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for part in sorted(Path(directory).glob("part-*")):
        counts.update(lines_of(part.read_text(encoding="utf-8")))
    return counts


def check_plugin(job: PluginJob, seed: int, directory: Path) -> list[str]:
    """The output's lines against the reference's (as multisets)."""
    try:
        got = read_output(directory)
    except (UnicodeDecodeError, OSError) as exc:
        return [f"unreadable output: {exc}"]
    try:
        expected = reference_output(job, seed)
    except (ScenarioError, WorkloadError, RecordError) as exc:
        return [f"no reference: {str(exc).splitlines()[0]}"]
    missing, extra = expected - got, got - expected
    problems = []
    if missing:
        sample = ", ".join(repr(line) for line in sorted(missing)[:3])
        problems.append(f"{sum(missing.values())} expected lines are missing, e.g. {sample}")
    if extra:
        sample = ", ".join(repr(line) for line in sorted(extra)[:3])
        problems.append(f"{sum(extra.values())} lines are not in the reference, e.g. {sample}")
    return problems


OPERATIONS: dict[str, TaskFunction] = {
    "plugin.map": map_task,
    "plugin.step": step_task,
    "plugin.reduce": reduce_task,
}
"""The task functions of a plugin workload's ops (its plugin's methods, called by them)."""
COMBINERS: dict[str, Combiner] = {}
"""None of its ops' outputs is aggregated before a push."""
