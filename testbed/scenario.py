"""Scenario files: one YAML document describing a whole experiment.

The schema is the pydantic models below. ``load_scenario`` turns every problem
into one line naming the file, the field path, what was expected and what was
found (``ScenarioError``); the CLI prints those lines and exits with status 2.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BeforeValidator,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from testbed.curves import PenaltyCurve, SpillCurve
from testbed.fidelity import FidelitySpec
from testbed.inputs import absolute_input, resolve_inputs
from testbed.limits import (
    MAX_BANDWIDTH,
    MAX_JOBS,
    MAX_NODE_MEMORY_MB,
    MAX_NODES_PER_CLASS,
    MAX_SIM_NODES_PER_CLASS,
    MAX_TASKS,
    MAX_TASKS_PER_JOB,
    MAX_TIME_SCALE,
    MAX_TIMEOUT_S,
    MIN_TIME_SCALE,
    too_large,
)
from testbed.plugins import add_plugin_dir
from testbed.scenario_arrivals import DEFAULT_CUTOFF_S, ArrivalsSpec
from testbed.scenario_base import Duration, Seed, Strict
from testbed.scenario_chaos import ChaosSpec
from testbed.scenario_sim import SimulationSpec
from testbed.scenario_yaml import ScenarioError, apply_override, expand_node_counts, load_raw
from testbed.zones import check_zones, zone_of

# --------------------------------------------------------------------- cluster


class NodeClassSpec(Strict):
    """One class of nodes (reserved or transient)."""

    count: int = Field(ge=0, le=MAX_SIM_NODES_PER_CLASS)
    slots: int = Field(default=2, ge=1, le=64, description="concurrent tasks (cores)")
    memory_mb: int = Field(default=1024, ge=16, le=MAX_NODE_MEMORY_MB, description="memory for tasks")
    cpus: float | None = Field(
        default=None, gt=0, le=1024, description="cores of one node (default: slots); its CPU share"
    )
    network_mbps: float = Field(
        default=1000, ge=1, le=MAX_BANDWIDTH, description="NIC bandwidth in Mbit/s, each direction"
    )
    disk_mb_s: float | None = Field(
        default=None, ge=1, le=MAX_BANDWIDTH, description="spill bandwidth in MB/s (default: unlimited)"
    )
    price_per_hour: float = Field(default=1.0, ge=0, description="for the cost report")
    zones: dict[str, int | float] = Field(
        default_factory=dict, description="availability zones: node counts or fractions per zone"
    )

    @model_validator(mode="after")
    def _zones(self) -> NodeClassSpec:
        check_zones(self.zones, self.count)
        return self

    def zone_of(self, ordinal: int) -> str | None:
        """The zone of the class's node ``ordinal`` (``testbed.zones``); None without zones."""
        return zone_of(self.zones, self.count, ordinal)

    @property
    def cores(self) -> float:
        """The node's cores: ``cpus``, else one per slot."""
        return self.cpus if self.cpus is not None else float(self.slots)


def _node_class(default_price: float):
    def coerce(value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return {"count": value, "price_per_hour": default_price}
        if isinstance(value, dict):
            return {"price_per_hour": default_price, **value}
        raise ValueError("expected a node count or a mapping with count, slots, memory_mb")

    return BeforeValidator(coerce)


class ClusterSpec(Strict):
    reserved: Annotated[NodeClassSpec, _node_class(1.0)] = NodeClassSpec(count=1)
    transient: Annotated[NodeClassSpec, _node_class(0.3)] = NodeClassSpec(count=3, price_per_hour=0.3)
    heartbeat_interval: Duration = Field(default=0.5, gt=0)
    heartbeat_timeout: Duration = Field(default=3.0, gt=0)
    memory_increment_mb: int = Field(default=100, ge=1)
    warm_workers: bool = Field(
        default=True, description="start each agent's task forkserver at once (faster first task)"
    )
    start_window: int | None = Field(
        default=None,
        ge=0,
        description="how many nodes may be starting at once (default: 32 per CPU core; 0: all at once)",
    )

    @model_validator(mode="after")
    def _some_nodes(self) -> ClusterSpec:
        if self.reserved.count + self.transient.count == 0:
            raise ValueError("the cluster has no nodes: give reserved or transient a count >= 1")
        if self.heartbeat_timeout < 2 * self.heartbeat_interval:
            raise ValueError(
                f"heartbeat_timeout ({self.heartbeat_timeout:g}s) must be at least twice heartbeat_interval "
                f"({self.heartbeat_interval:g}s), or the master declares healthy nodes lost; raise "
                f"heartbeat_timeout to {2 * self.heartbeat_interval:g}s or more"
            )
        return self


# --------------------------------------------------------------------- policy

SCHEDULERS = ("fifo", "yarn", "yarn-me", "eagle")
STRATEGIES = ("spark", "spark-checkpoint", "pado")
AUTOSCALERS = ("static", "cloudcoaster")


PLUGIN_NAME = r"^[A-Za-z_][\w.-]*(:[A-Za-z_][\w.]*)?$"
"""A built-in policy, an entry-point name, or an import path ``package.module:Name`` (docs/plugins.md)."""


MAX_PLUGIN_DIRS = 16


class PolicySpec(Strict):
    scheduler: str = Field(
        default="fifo", pattern=PLUGIN_NAME, description=f"{', '.join(SCHEDULERS)} or a plugin"
    )
    strategy: Literal["spark", "spark-checkpoint", "pado"] = "spark"
    autoscaler: str = Field(
        default="static", pattern=PLUGIN_NAME, description=f"{', '.join(AUTOSCALERS)} or a plugin"
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="policy-specific knobs, documented per policy"
    )
    plugin_path: list[str] = Field(
        default_factory=list,
        max_length=MAX_PLUGIN_DIRS,
        description="directories plugin modules are imported from (relative: to the scenario file); "
        "a scenario naming a plugin gets its own directory appended",
    )


# --------------------------------------------------------------------- jobs


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
    seed: Seed | None = None

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
        from testbed.workloads.pagerank import check_edge_files  # late: the workload imports this module

        if value:
            check_edge_files(resolve_inputs(value))
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


JobSpec = Annotated[
    WordcountJob | SortJob | PagerankJob | SleepJob | NoopJob, Field(discriminator="workload")
]
WORKLOADS = ("wordcount", "sort", "pagerank", "sleep", "noop")


def _tasks_of(job: JobBase) -> int:
    """A job's tasks as far as the scenario says (maps, when not given, count as one)."""
    if isinstance(job, SleepJob | NoopJob):
        return job.tasks
    return (job.maps or 1) + job.reduces


# --------------------------------------------------------------------- task models

CurvePoints = list[tuple[float, float]]


class InlineProfile(Strict):
    """A task model written in the scenario instead of a profile file: the same fields."""

    workload: str
    role: Literal["map", "reduce"]
    ideal_memory_mb: int = Field(gt=0, description="least memory with no spill")
    ideal_duration_s: float = Field(ge=0, allow_inf_nan=False, description="runtime with the ideal memory")
    points: CurvePoints = Field(description="penalty curve: [fraction, runtime multiplier] points")
    spill_mb: CurvePoints | None = Field(default=None, description="[fraction, MB spilled] points")
    disk_rate_mb_s: float | None = Field(
        default=None, gt=0, allow_inf_nan=False, description="spill rate, when spill_mb is not given"
    )
    stage_ideal_memory_mb: list[Annotated[int, Field(gt=0)]] = Field(default_factory=list)

    @field_validator("workload")
    @classmethod
    def _known_workload(cls, value: str) -> str:
        if value not in WORKLOADS:
            raise ValueError(f"unknown workload; expected one of {', '.join(WORKLOADS)}")
        return value

    @field_validator("points")
    @classmethod
    def _penalty_curve(cls, points: CurvePoints) -> CurvePoints:
        PenaltyCurve(tuple(points))
        return points

    @field_validator("spill_mb")
    @classmethod
    def _spill_curve(cls, points: CurvePoints | None) -> CurvePoints | None:
        if points is not None:
            SpillCurve(tuple(points))
        return points


PROFILE_FILE, INLINE_PROFILE = "profile file", "inline model"
"""Union tags of a ``profiles`` entry (not field names: they never appear in error paths)."""


def _profile_kind(entry: Any) -> str | None:
    if isinstance(entry, str):
        return PROFILE_FILE
    return INLINE_PROFILE if isinstance(entry, dict | InlineProfile) else None


ProfileEntry = Annotated[
    Annotated[str, Tag(PROFILE_FILE)] | Annotated[InlineProfile, Tag(INLINE_PROFILE)],
    Discriminator(
        _profile_kind,
        custom_error_type="profile_entry",
        custom_error_message="expected a profile file path or a task model (workload, role, "
        "ideal_memory_mb, ideal_duration_s, points)",
    ),
]


# --------------------------------------------------------------------- scenario


class Scenario(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=64)
    seed: Seed = 1
    time_scale: float = Field(default=1.0, ge=MIN_TIME_SCALE, le=MAX_TIME_SCALE)
    broker: str = "embedded"
    cluster: ClusterSpec = ClusterSpec()
    policy: PolicySpec = PolicySpec()
    jobs: list[JobSpec] = Field(default_factory=list)
    arrivals: ArrivalsSpec | None = None
    chaos: ChaosSpec = ChaosSpec()
    timeout: Duration = Field(
        default=600.0, gt=0, le=MAX_TIMEOUT_S, description="wall-clock limit of the run (at most a week)"
    )
    fidelity: FidelitySpec = FidelitySpec()
    profiles: list[ProfileEntry] = Field(
        default_factory=list,
        description="task models for YARN/YARN-ME: testbed profile files, or written inline",
    )
    backend: Literal["local", "docker", "attach", "sim"] | None = Field(
        default=None, description="where the nodes run (testbed run --backend overrides it; default local)"
    )
    simulation: SimulationSpec = SimulationSpec()

    @model_validator(mode="after")
    def _real_cluster_size(self) -> Scenario:
        """Real backends run a process per node: at most MAX_NODES_PER_CLASS of a class."""
        if self.backend == "sim":
            return self
        for name in ("reserved", "transient"):
            count = getattr(self.cluster, name).count
            if count > MAX_NODES_PER_CLASS:
                raise ValueError(
                    f"cluster.{name}.count: {count} nodes, at most {MAX_NODES_PER_CLASS} run for real; "
                    "lower it, or simulate them (backend: sim, or testbed run --backend sim)"
                )
        return self

    @field_validator("profiles")
    @classmethod
    def _profiles_exist(cls, entries: list[str | InlineProfile]) -> list[str | InlineProfile]:
        paths = [entry for entry in entries if isinstance(entry, str)]
        missing = [p for p in paths if not Path(p).expanduser().is_file()]
        if missing:
            raise ValueError(f"no such profile file: {', '.join(missing)}; run `testbed profile` to make one")
        return entries

    @model_validator(mode="after")
    def _tasks_fit_some_node(self) -> Scenario:
        """A task whose ideal memory exceeds every node would wait forever: refuse it now."""
        cluster = self.cluster
        classes = [name for name in ("reserved", "transient") if getattr(cluster, name).count > 0]
        if self.policy.autoscaler != "static" and "transient" not in classes:
            classes.append("transient")  # an autoscaler may launch transient nodes
        largest = max(getattr(cluster, name).memory_mb for name in classes)
        for index, job in enumerate(self.jobs):
            if job.memory_mb is not None and job.memory_mb > largest:
                raise ValueError(
                    f"jobs.{index}.memory_mb: a task of this {job.workload} job needs {job.memory_mb} MB "
                    f"but the largest node has {largest} MB; lower jobs.{index}.memory_mb to at most "
                    f"{largest} or raise cluster.{'/'.join(classes)}.memory_mb"
                )
        return self

    @field_validator("broker")
    @classmethod
    def _broker(cls, value: str) -> str:
        if value in ("embedded", "mosquitto", "amqtt"):
            return value
        match = re.match(r"^mqtt://[^:/\s]+(:\d{1,5})?/?$", value)
        if not match or not 1 <= int((match.group(1) or ":1883")[1:]) <= 65535:
            raise ValueError("expected 'embedded', 'mosquitto', 'amqtt' or mqtt://HOST:PORT (port 1-65535)")
        return value

    @model_validator(mode="after")
    def _storm_zones_exist(self) -> Scenario:
        zones = {*self.cluster.reserved.zones, *self.cluster.transient.zones}
        for index, storm in enumerate(self.chaos.storms):
            if storm.evict.zone is not None and storm.evict.zone not in zones:
                known = ", ".join(sorted(zones)) or "none: give cluster.<class>.zones"
                raise ValueError(
                    f"chaos.storms.{index}.evict.zone: unknown zone {storm.evict.zone!r}; zones: {known}"
                )
        for node_class in ("reserved", "transient"):
            own = getattr(self.cluster, node_class).zones
            for zone in getattr(self.chaos, node_class).zones:
                if zone not in own:
                    known = ", ".join(own) or f"none: give cluster.{node_class}.zones"
                    raise ValueError(
                        f"chaos.{node_class}.zones: unknown zone {zone!r}; zones of {node_class}: {known}"
                    )
        return self

    @model_validator(mode="after")
    def _some_jobs(self) -> Scenario:
        if not self.jobs and self.arrivals is None:
            raise ValueError("the scenario has no jobs: give jobs (at least one) or arrivals")
        arriving = self.arriving_jobs()
        jobs = sum(job.repeat for job in self.jobs) + len(arriving)
        if jobs > MAX_JOBS:
            raise ValueError(too_large("the jobs submitted (repeats and arrivals included)", jobs, MAX_JOBS))
        tasks = sum(job.repeat * _tasks_of(job) for job in self.jobs) + sum(job.tasks for job in arriving)
        if tasks > MAX_TASKS:
            raise ValueError(too_large("the tasks of all jobs", tasks, MAX_TASKS))
        return self

    def trace(self, seconds: float) -> float:
        """Wall seconds for a trace-time duration (divided by time_scale, stretched by the dilation)."""
        return seconds * self.wall_per_trace

    @property
    def wall_per_trace(self) -> float:
        return self.fidelity.factor / self.time_scale

    def dilated(self, seconds: float) -> float:
        """Wall seconds for an emulated duration that time_scale does not compress (timeouts,
        heartbeats): stretched by the dilation."""
        return seconds * self.fidelity.factor

    @property
    def timeout_s(self) -> float:
        """The run's wall-clock limit, stretched by the dilation."""
        return self.dilated(self.timeout)

    @property
    def heartbeat_interval_s(self) -> float:
        return self.dilated(self.cluster.heartbeat_interval)

    @property
    def heartbeat_timeout_s(self) -> float:
        return self.dilated(self.cluster.heartbeat_timeout)

    @property
    def long_cutoff(self) -> float:
        """Trace seconds: a job whose estimated task duration reaches this is long."""
        return self.arrivals.cutoff if self.arrivals is not None else DEFAULT_CUTOFF_S

    def arriving_jobs(self) -> list[SleepJob]:
        """The ``arrivals`` as sleep jobs (empty without an ``arrivals`` section)."""
        if self.arrivals is None:
            return []
        spec = self.arrivals
        return [
            SleepJob(
                workload="sleep",
                name=f"{'long' if job.long else 'short'}-{k}",
                submit_at=job.submit_s,
                durations=list(job.task_durations),
                estimate=job.est_duration_s,
                cpu_bound=spec.cpu_bound,
                memory_mb=spec.memory_mb,
            )
            for k, job in enumerate(spec.jobs(self.seed))
        ]


# --------------------------------------------------------------------- loading


def input_files(scenario: Scenario) -> list[Path]:
    """Every file the scenario's jobs read (``input``), each once."""
    files = {
        path.resolve()
        for job in scenario.jobs
        if getattr(job, "input", None)
        for path in resolve_inputs(job.input)
    }
    return sorted(files)


def parse_scenario(
    data: dict[str, Any], source: str = "<scenario>", base_dir: str | Path | None = None
) -> Scenario:
    """``base_dir`` anchors relative file paths of the scenario (``empirical`` lifetimes)."""
    try:
        return Scenario.model_validate(data, context={"base_dir": base_dir} if base_dir is not None else None)
    except ValidationError as exc:
        raise ScenarioError([_describe(source, err) for err in exc.errors()]) from None


def load_scenario(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Scenario:
    data = load_raw(path)
    if overrides:
        expand_node_counts(data)
    for assignment in overrides:
        apply_override(data, assignment)
    _resolve_profiles(data, Path(path).resolve().parent)
    _resolve_plugin_path(data, Path(path).resolve().parent)
    scenario = parse_scenario(data, str(path), Path(path).parent)
    for directory in scenario.policy.plugin_path:
        add_plugin_dir(Path(directory))
    return scenario


def _resolve_plugin_path(data: dict[str, Any], scenario_dir: Path) -> None:
    """``policy.plugin_path`` made absolute, with the scenario's directory appended when the
    scenario names a plugin (an import path or an entry point): the run directory's copy
    of the scenario then finds the plugin too (``testbed run --resume``)."""
    policy = data.get("policy")
    if not isinstance(policy, dict):
        return
    path = policy.get("plugin_path", [])
    if not isinstance(path, list) or not all(isinstance(entry, str) for entry in path):
        return  # the schema says what is wrong
    resolved = [str((scenario_dir / Path(entry).expanduser()).resolve()) for entry in path]
    named = (policy.get("scheduler", "fifo"), policy.get("autoscaler", "static"))
    if any(name not in (*SCHEDULERS, *AUTOSCALERS) for name in named) and str(scenario_dir) not in resolved:
        resolved.append(str(scenario_dir))
    if resolved:
        policy["plugin_path"] = resolved


def _resolve_profiles(data: dict[str, Any], scenario_dir: Path) -> None:
    """A relative profile path names a file next to the scenario file when one is there (so the
    scenario loads from any directory, e.g. mounted in a container); else it stays relative to
    the working directory. Found files are stored with their absolute path."""
    profiles = data.get("profiles")
    if not isinstance(profiles, list):
        return
    for index, entry in enumerate(profiles):
        if isinstance(entry, str) and not Path(entry).expanduser().is_absolute():
            beside = scenario_dir / entry
            if beside.is_file():
                profiles[index] = str(beside)


UNION_TAGS = {*WORKLOADS, PROFILE_FILE, INLINE_PROFILE}
"""Tags pydantic puts in an error's path for a union member; a field path shows none of them."""


def _describe(source: str, err: Any) -> str:
    loc = [str(part) for part in err["loc"] if str(part) not in UNION_TAGS]
    field = ".".join(loc) or "(top level)"
    message = str(err["msg"])
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"{source}: {field}: unknown field; remove it or check its spelling"
    if kind == "missing":
        return f"{source}: {field}: required field is missing"
    if kind == "union_tag_invalid":
        return (
            f"{source}: {field}: unknown workload {err['input'].get('workload')!r}; "
            f"expected one of {', '.join(WORKLOADS)}"
        )
    if kind == "union_tag_not_found":
        return f"{source}: {field}: every job needs a workload ({', '.join(WORKLOADS)})"
    found = err.get("input")
    hidden = isinstance(found, dict | list) or found is None or "found" in message
    shown = "" if hidden else f"; found {found!r}"
    return f"{source}: {field}: {message}{shown}"


def to_yaml(scenario: Scenario) -> str:
    return yaml.safe_dump(scenario.model_dump(mode="json", by_alias=True, exclude_none=True), sort_keys=False)
