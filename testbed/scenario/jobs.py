"""Scenario jobs: the ``jobs`` entries of a scenario, one model per workload.

A ``workload`` that is not a built-in name is a plugin (``PluginJob``): an import path
``package.module:Name`` or an entry point of group ``transient_testbed.workloads``
(docs/plugins.md); ``testbed.scenario.schema`` imports and checks it once the scenario parses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from testbed import registry
from testbed.limits import MAX_TASKS_PER_JOB
from testbed.scenario.base import Duration, Seed, Strict
from testbed.scenario.inputs import absolute_input, resolve_inputs

PLUGIN_NAME = r"^[A-Za-z_][\w.-]*(:[A-Za-z_][\w.]*)?$"
"""A built-in policy, an entry-point name, or an import path ``package.module:Name`` (docs/plugins.md)."""


DEFAULT_TASK_MEMORY_MB = 256


class JobBase(Strict):
    name: str | None = None
    submit_at: Duration = 0.0
    repeat: int = Field(default=1, ge=1, le=10_000, description="submit this job N times")
    every: Duration = Field(default=0.0, description="gap between repeats (trace time)")
    maps: int | None = Field(default=None, ge=1, le=10_000, description="map tasks")
    reduces: int = Field(default=2, ge=1, le=10_000, description="reduce partitions")
    memory_mb: int | None = Field(
        default=None,
        ge=1,
        description="ideal memory of one task; default: each stage's ideal from the scenario's "
        f"profiles, else {DEFAULT_TASK_MEMORY_MB} MB",
    )
    input: str | None = Field(default=None, description="a file, a directory or a glob")
    after: str | None = Field(
        default=None,
        description="the name of another job of this scenario: this job reads that job's committed "
        "output (its part files) as its input, and is submitted when that job succeeds",
    )
    seed: Seed | None = None
    input_replication: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="place each map's input split on N nodes (reserved or transient, seeded) when "
        "the job arrives: a map on a holder reads it from its disk, elsewhere it fetches it from a "
        "holder (docs/firmament.md, Data locality); default: off, every map reads the source",
    )

    @field_validator("input")
    @classmethod
    def _input_exists(cls, value: str | None) -> str | None:
        if value is None:
            return value
        paths = resolve_inputs(value)
        if not paths and Path(value).expanduser().exists():
            raise ValueError(f"{value!r} is not a regular file or a directory (a pipe or a device?)")
        if not paths:
            raise ValueError(f"no input file matches {value!r}: give an existing file, directory or glob")
        for path in paths:
            try:
                with open(path, "rb") as handle:
                    handle.read(1)
            except OSError as exc:
                raise ValueError(
                    f"cannot read input file {str(path)!r} ({exc.strerror}): "
                    "make it readable or point input at other files"
                ) from None
        return absolute_input(value)  # the run directory's scenario.yaml means the same files anywhere


SORT_RECORD_BYTES = 100


class WordcountJob(JobBase):
    workload: Literal["wordcount"]
    size_mb: float = Field(default=16, gt=0, le=100_000)
    vocabulary: int = Field(default=50_000, ge=1, le=100_000_000)


class SortJob(JobBase):
    workload: Literal["sort"]
    size_mb: float = Field(default=16, gt=0, le=100_000)

    @field_validator("input")
    @classmethod
    def _whole_records(cls, value: str | None) -> str | None:
        paths = resolve_inputs(value) if value else []
        for path in paths:
            size = path.stat().st_size
            if size % SORT_RECORD_BYTES:
                raise ValueError(
                    f"expected files of whole {SORT_RECORD_BYTES}-byte records; "
                    f"found {size} bytes in {str(path)!r}"
                )
        if paths and not any(path.stat().st_size for path in paths):
            raise ValueError(f"the input is empty: give at least one {SORT_RECORD_BYTES}-byte record")
        return value


class PagerankJob(JobBase):
    workload: Literal["pagerank"]
    nodes: int = Field(default=10_000, ge=2, le=1_000_000_000)
    edges: int = Field(default=100_000, ge=1, le=1_000_000_000)
    iterations: int = Field(default=10, ge=1, le=1000)
    damping: float = Field(default=0.85, gt=0, lt=1)
    tolerance: float | None = Field(default=None, gt=0)

    @field_validator("input")
    @classmethod
    def _edge_lists(cls, value: str | None) -> str | None:
        """The first MiBs of the edge lists, read now: a malformed line is named with its file and line."""
        if value:
            _check_edge_files(resolve_inputs(value))
        return value


CHECKED_INPUT_BYTES = 8 << 20
"""How much of a job's edge lists ``_check_edge_files`` reads before the run (the rest is checked as
the tasks read it, and a malformed line there fails the job at once)."""


def _check_edge_files(paths: list[Path], budget: int = CHECKED_INPUT_BYTES) -> None:
    """``ValueError`` naming the file and line of the first line without two tokens in the first
    ``budget`` bytes of ``paths``, or saying there is no edge at all when they were read whole."""
    edges = 0
    for path in paths:
        with open(path, "rb") as handle:
            data = handle.read(budget + 1)
        lines = data.split(b"\n")
        if len(data) > budget:
            lines.pop()  # cut off: the tasks check the rest
        for number, line in enumerate(lines, start=1):
            tokens = len(line.split(b"#", 1)[0].split())
            if tokens not in (0, 2):
                found = line[:80].strip().decode("utf-8", errors="replace")
                raise ValueError(f"{path} line {number}: expected 'src dst', found {found!r}")
            edges += tokens // 2
        budget -= len(data)
        if budget < 0:
            return
    if edges == 0:
        raise ValueError("the edge lists hold no edge: give lines of 'src dst'")


class MlrJob(JobBase):
    """Multinomial logistic regression by gradient descent (the Pado paper's MLR): ``maps``
    partitions of generated training data, ``reduces`` aggregate tasks (aggregate a sums the
    whole gradients of the maps i with i % reduces == a: MLlib's treeAggregate)."""

    workload: Literal["mlr"]
    points: int = Field(default=20_000, ge=1, le=1_000_000_000, description="training samples")
    features: int = Field(default=100, ge=1, le=1_000_000)
    classes: int = Field(default=10, ge=2, le=100_000)
    iterations: int = Field(default=5, ge=1, le=1000)
    learning_rate: float = Field(default=0.5, gt=0)
    regularization: float = Field(default=0.0, ge=0, description="L2 penalty")

    @field_validator("input")
    @classmethod
    def _generated_only(cls, value: str | None) -> str | None:
        if value is not None:
            raise ValueError("mlr generates its training data (points, features, classes): it reads no input")
        return value


class SleepJob(JobBase):
    """Synthetic tasks that run for a given duration (CloudCoaster/Eagle traces).

    ``durations`` gives each task its own duration (a trace job); otherwise
    ``tasks`` tasks run ``duration`` each. ``estimate`` is the estimated task
    duration the scheduler sees (default: the mean duration); the job is long
    when it reaches the scenario's cutoff (``Scenario.long_cutoff``).
    """

    workload: Literal["sleep"]
    tasks: int = Field(default=4, ge=1, le=MAX_TASKS_PER_JOB)
    duration: Duration = Field(default=1.0, ge=0)
    durations: list[Duration] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_TASKS_PER_JOB,
        description="per-task durations (trace time)",
    )
    estimate: Duration | None = Field(default=None, ge=0, description="estimated task duration")
    cpu_bound: bool = False

    @model_validator(mode="before")
    @classmethod
    def _tasks_from_durations(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("durations"), list) and "tasks" not in data:
            return {**data, "tasks": len(data["durations"]) or 1}
        return data

    @model_validator(mode="after")
    def _tasks_match_durations(self) -> SleepJob:
        if self.durations is not None and self.tasks != len(self.durations):
            raise ValueError(f"tasks is {self.tasks} but durations lists {len(self.durations)}")
        return self

    @property
    def task_durations(self) -> list[float]:
        """Each task's duration in trace seconds."""
        return list(self.durations) if self.durations is not None else [self.duration] * self.tasks

    @property
    def estimate_s(self) -> float:
        """The estimated task duration in trace seconds."""
        if self.estimate is not None:
            return self.estimate
        durations = self.task_durations
        return sum(durations) / len(durations)


class NoopJob(JobBase):
    """Empty tasks that the agent completes itself, with no worker process and no output:
    a job that measures the control plane (dispatch throughput and latency) alone."""

    workload: Literal["noop"]
    tasks: int = Field(default=100, ge=1, le=MAX_TASKS_PER_JOB)


class SqlTable(Strict):
    """A table of a ``workload: sql`` job: its files and the types of their columns."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)
    input: str = Field(description="a file, a directory or a glob of the table's files")
    format: Literal["tbl", "csv"] = Field(default="tbl", description="tbl: pipe-delimited; csv: a header")
    columns: dict[str, str] = Field(alias="schema", description="{column: type}, in the files' order")
    splits: int | None = Field(default=None, ge=1, le=10_000, description="its tasks (default: 1 per 16 MB)")

    @field_validator("input")
    @classmethod
    def _files(cls, value: str) -> str:
        if not resolve_inputs(value):
            raise ValueError(f"no input file matches {value!r}: give an existing file, directory or glob")
        return absolute_input(value)


class SqlJob(JobBase):
    """A SQL query over tables of files, planned into a stage DAG (docs/workflows.md);
    ``reduces`` is the tasks of each shuffle stage, ``merge: false`` turns off the merging of
    operators into stages, ``merge: auto`` lets the cost model choose (``testbed.workflows.cost``)."""

    workload: Literal["sql"]
    query: str | None = Field(default=None, min_length=1, description="the SQL text")
    tables: dict[str, SqlTable] = Field(default_factory=dict, description="the tables the query reads")
    builder: str | None = Field(
        default=None, pattern=PLUGIN_NAME, description="instead of a query: module:function returning a Flow"
    )
    merge: bool | Literal["auto"] = True

    @model_validator(mode="after")
    def _plannable(self) -> SqlJob:
        """The query parsed, optimised and typed now (or the builder's workflow built):
        unsupported SQL and join keys of two types are refused before the run."""
        try:
            import sqlglot  # noqa: F401
        except ImportError:
            raise ValueError("workload: sql needs sqlglot: pip install 'transient-testbed[sql]'") from None
        from testbed.workflows.sql_tables import workflow_of

        if (self.query is None) == (self.builder is None):
            raise ValueError("give either query (with tables) or builder, not both")
        if self.query is not None and not self.tables:
            raise ValueError("tables: the query reads tables; name each with its input and schema")
        workflow_of(self)
        return self


PLUGIN_TAG = "plugin"


class PluginJob(JobBase):
    """A user's MapReduce workload: ``workload`` names a class with ``map`` and ``reduce``
    (``testbed.api.Workload``); ``options`` are its keyword arguments. Its input is
    ``input`` (text files, split at line boundaries) or, without one, the plugin's
    ``generate`` for each of ``maps`` splits (default 4)."""

    workload: str = Field(pattern=PLUGIN_NAME, description="import path package.module:Name or entry point")
    options: dict[str, Any] = Field(default_factory=dict, description="the plugin's keyword arguments")

    @model_validator(mode="before")
    @classmethod
    def _known_name(cls, data: Any) -> Any:
        """A name that is no import path must be an installed entry point (a typo of a
        built-in name is reported as such, before its fields are)."""
        name = data.get("workload") if isinstance(data, dict) else None
        if isinstance(name, str) and ":" not in name and not registry.known("workload", name):
            raise ValueError(
                f"unknown workload {name!r}; expected one of {registry.listed('workload')}, "
                f"an import path package.module:Name or an entry point of group {registry.GROUPS['workload']}"
            )
        return data


def _workload_tag(entry: Any) -> str | None:
    """The union member of a job: its built-in workload, else the plugin model."""
    workload = entry.get("workload") if isinstance(entry, dict) else getattr(entry, "workload", None)
    if workload is None or registry.is_builtin("workload", workload):
        return workload
    return PLUGIN_TAG


JobSpec = Annotated[
    Annotated[WordcountJob, Tag("wordcount")]
    | Annotated[SortJob, Tag("sort")]
    | Annotated[PagerankJob, Tag("pagerank")]
    | Annotated[MlrJob, Tag("mlr")]
    | Annotated[SleepJob, Tag("sleep")]
    | Annotated[NoopJob, Tag("noop")]
    | Annotated[SqlJob, Tag("sql")]
    | Annotated[PluginJob, Tag(PLUGIN_TAG)],
    Discriminator(_workload_tag),
]


def _tasks_of(job: JobBase) -> int:
    """A job's tasks as far as the scenario says (maps, when not given, count as one)."""
    if isinstance(job, SleepJob | NoopJob):
        return job.tasks
    return (job.maps or 1) + job.reduces
