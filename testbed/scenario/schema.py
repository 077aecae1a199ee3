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
    Discriminator,
    Field,
    Tag,
    ValidationError,
    field_validator,
    model_validator,
)

from testbed.limits import (
    MAX_JOBS,
    MAX_NODES_PER_CLASS,
    MAX_TASKS,
    MAX_TIME_SCALE,
    MAX_TIMEOUT_S,
    MIN_TIME_SCALE,
    too_large,
)
from testbed.registry import builtin_names, is_builtin, listed
from testbed.scenario.arrivals import DEFAULT_CUTOFF_S, ArrivalsSpec
from testbed.scenario.base import Duration, Seed, Strict
from testbed.scenario.chains import check_chains
from testbed.scenario.chaos import ChaosSpec
from testbed.scenario.cluster import ClusterSpec, NamedClass, node_classes
from testbed.scenario.curves import PenaltyCurve, SpillCurve
from testbed.scenario.dag_jobs import dag_of
from testbed.scenario.fidelity import FidelitySpec
from testbed.scenario.inputs import resolve_inputs
from testbed.scenario.jobs import (  # noqa: F401 - the job models are re-exported (the scenario schema)
    DEFAULT_TASK_MEMORY_MB,
    PLUGIN_NAME,
    PLUGIN_TAG,
    SORT_RECORD_BYTES,
    JobBase,
    JobSpec,
    MlrJob,
    NoopJob,
    PagerankJob,
    PluginJob,
    SleepJob,
    SortJob,
    SqlJob,
    WordcountJob,
    _tasks_of,
)
from testbed.scenario.loading import ScenarioError, apply_override, expand_node_counts, load_raw
from testbed.scenario.plugin_path import MAX_PLUGIN_DIRS, resolve_plugin_path
from testbed.scenario.plugins import add_plugin_dir, find_plugin, source_of
from testbed.scenario.simulation import SimulationSpec, default_calibration
from testbed.scenario.time_base import TimeBase

# --------------------------------------------------------------------- policy



class PolicySpec(Strict):
    scheduler: str = Field(
        default="fifo", pattern=PLUGIN_NAME, description=f"{listed('scheduler')} or a plugin"
    )
    strategy: str = Field(
        default="spark", pattern=PLUGIN_NAME, description=f"{listed('strategy')} or a plugin"
    )
    autoscaler: str = Field(
        default="static", pattern=PLUGIN_NAME, description=f"{listed('autoscaler')} or a plugin"
    )
    speculation: str = Field(
        default="none", pattern=PLUGIN_NAME, description=f"{listed('speculation')} or a plugin"
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
        """A built-in workload, or a plugin's as the jobs name it (an import path)."""
        if not is_builtin("workload", value) and not (":" in value and re.fullmatch(PLUGIN_NAME, value)):
            raise ValueError(
                f"unknown workload; expected one of {listed('workload')} or a plugin's module:Class"
            )
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
        for name, named in self.node_classes.items():
            count = named.spec.count
            if count > MAX_NODES_PER_CLASS:
                raise ValueError(
                    f"{self.class_field(name)}.count: {count} nodes, at most {MAX_NODES_PER_CLASS} "
                    "run for real; lower it, or simulate them (backend: sim, or testbed run --backend sim)"
                )
        return self

    @property
    def node_classes(self) -> dict[str, NamedClass]:
        """Its node classes in launch order, in either form (``testbed.scenario.cluster.node_classes``)."""
        return node_classes(self.cluster, self.chaos)

    def of_kind(self, kind: str) -> list[NamedClass]:
        """Its node classes of ``kind`` (reserved or transient), in launch order."""
        return [named for named in self.node_classes.values() if named.kind == kind]

    def kind_count(self, kind: str) -> int:
        """How many nodes its classes of ``kind`` start with: what a policy's cluster check counts."""
        return sum(named.spec.count for named in self.of_kind(kind))

    def class_index(self, name: str) -> int:
        """Class ``name``'s position in launch order: its random streams' key (the shorthand's
        ``reserved`` is 0, ``transient`` 1; ``testbed.chaosmodels.lifetimes.lifetime_for``)."""
        return list(self.node_classes).index(name)

    def class_field(self, name: str) -> str:
        """Where class ``name`` is written: ``cluster.classes.NAME``, or ``cluster.NAME`` (shorthand)."""
        return f"cluster.classes.{name}" if self.cluster.classes is not None else f"cluster.{name}"

    @model_validator(mode="after")
    def _one_chaos_form(self) -> Scenario:
        """Named classes carry their own chaos: ``chaos.reserved``/``chaos.transient`` are the shorthand's."""
        if self.cluster.classes is None:
            return self
        for kind in {"reserved", "transient"} & self.chaos.model_fields_set:
            raise ValueError(
                f"chaos.{kind}: with cluster.classes each class has its own chaos; move it to "
                f"cluster.classes.NAME.chaos of the classes it is for"
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
        named = self.node_classes
        classes = [name for name, c in named.items() if c.spec.count > 0]
        if self.policy.autoscaler != "static":  # an autoscaler may launch transient nodes
            classes += [name for name, c in named.items() if c.kind == "transient" and name not in classes]
        largest = max(named[name].spec.memory_mb for name in classes)
        for index, job in enumerate(self.jobs):
            if job.memory_mb is not None and job.memory_mb > largest:
                raise ValueError(
                    f"jobs.{index}.memory_mb: a task of this {job.workload} job needs {job.memory_mb} MB "
                    f"but the largest node has {largest} MB; lower jobs.{index}.memory_mb to at most "
                    f"{largest} or raise {self.class_field('/'.join(classes))}.memory_mb"
                )
        return self

    @model_validator(mode="after")
    def _replicas_fit_the_cluster(self) -> Scenario:
        """A split's replicas are on distinct nodes: no more of them than the cluster starts with."""
        nodes = sum(named.spec.count for named in self.node_classes.values())
        for index, job in enumerate(self.jobs):
            if job.input_replication is not None and job.input_replication > nodes:
                raise ValueError(
                    f"jobs.{index}.input_replication: {job.input_replication} replicas of each split "
                    f"need as many nodes but the cluster starts with {nodes}; lower it to at most {nodes}"
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
        zones = {zone for named in self.node_classes.values() for zone in named.spec.zones}
        for index, storm in enumerate(self.chaos.storms):
            if storm.evict.zone is not None and storm.evict.zone not in zones:
                known = ", ".join(sorted(zones)) or "none: give cluster.<class>.zones"
                raise ValueError(
                    f"chaos.storms.{index}.evict.zone: unknown zone {storm.evict.zone!r}; zones: {known}"
                )
        if self.cluster.classes is not None:
            return self  # a named class's chaos zones are checked with it (``ClassSpec``)
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
    def _episodes_within_the_run(self) -> Scenario:
        """An episode starts before the run's timeout (trace time: ``timeout`` x ``time_scale``)."""
        episodes = self.chaos.slowdown.episodes if self.chaos.slowdown is not None else []
        for index, episode in enumerate(episodes):
            if self.trace(episode.at) >= self.timeout_s:
                raise ValueError(
                    f"chaos.slowdown.episodes.{index}.at: {episode.at:g} s of trace time is past the run "
                    f"(timeout {self.timeout:g} s x time_scale {self.time_scale:g}); start it earlier"
                )
        return self

    @model_validator(mode="after")
    def _chains(self) -> Scenario:
        check_chains(self.jobs, self.backend)
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

    @property
    def time_base(self) -> TimeBase:
        """Its clocks: trace time to run time, the heartbeats (``testbed.scenario.time_base``)."""
        factor = self.fidelity.factor
        return TimeBase(self.time_scale, factor, self.heartbeat_interval_s, self.heartbeat_timeout_s)

    def trace(self, seconds: float) -> float:
        """Wall seconds for a trace-time duration (divided by time_scale, stretched by the dilation)."""
        return self.time_base.trace(seconds)

    @property
    def wall_per_trace(self) -> float:
        return self.time_base.wall_per_trace

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
                memory_mb=job.memory_mb or spec.memory_mb,
            )
            for k, job in enumerate(spec.jobs(self.seed))
        ]


# --------------------------------------------------------------------- loading


def input_files(scenario: Scenario) -> list[Path]:
    """Every file the scenario's jobs read (``input``; a SQL job's tables, of its query or
    its builder's workflow), each once."""
    patterns = [pattern for job in scenario.jobs for pattern in _input_patterns(job)]
    return sorted({path.resolve() for pattern in patterns for path in resolve_inputs(pattern)})


def _input_patterns(job: Any) -> list[str]:
    if isinstance(job, SqlJob):
        from testbed.workflows.ir import Scan, walk
        from testbed.workflows.sql_tables import workflow_of

        return [op.input for op in walk(workflow_of(job).root) if isinstance(op, Scan)]
    return [job.input] if getattr(job, "input", None) else []


def parse_scenario(
    data: dict[str, Any], source: str = "<scenario>", base_dir: str | Path | None = None
) -> Scenario:
    """``base_dir`` anchors relative file paths of the scenario (``empirical`` lifetimes).
    The directories of ``policy.plugin_path`` become importable, and every workload plugin
    is imported and checked (a ScenarioError naming ``jobs.<i>.workload`` otherwise)."""
    try:
        scenario = Scenario.model_validate(
            data, context={"base_dir": base_dir} if base_dir is not None else None
        )
    except ValidationError as exc:
        problems = [_describe(source, err) for err in exc.errors()]
        raise ScenarioError(problems + _policy_name_problems(data, source, problems)) from None
    for directory in scenario.policy.plugin_path:
        add_plugin_dir(Path(directory))
    problems = [
        f"{source}: {problem}"
        for index, job in enumerate(scenario.jobs)
        if isinstance(job, PluginJob)
        for problem in workload_plugin_problems(job, index)
    ]
    if problems:
        raise ScenarioError(problems)
    return scenario


def _policy_name_problems(data: dict[str, Any], source: str, found: list[str]) -> list[str]:
    """Of a scenario the schema refused: its scheduler, strategy and autoscaler names that name
    no policy, so that one pass of ``testbed validate`` lists them with the schema's problems
    (the policies are built, options and all, only from a valid scenario)."""
    policy = data.get("policy")
    if not isinstance(policy, dict):
        return []
    problems: list[str] = []
    for kind in ("scheduler", "strategy", "autoscaler"):
        name, field = policy.get(kind), f"policy.{kind}"
        if not isinstance(name, str) or any(f"{source}: {field}" in problem for problem in found):
            continue
        try:
            find_plugin(kind, name, field)
        except ScenarioError as exc:
            problems += [f"{source}: {problem}" for problem in exc.problems]
    return problems


def workload_plugin_problems(job: PluginJob, index: int) -> list[str]:
    """What stops the job's workload plugin from running: it does not import, lacks
    ``map``/``reduce`` (or ``step`` for its ``iterations``), takes other arguments,
    rejects its options, or has no input."""
    field = f"jobs.{index}.workload"
    try:
        plugin = find_plugin("workload", job.workload, field)
        built = plugin.build(job.options)
    except ScenarioError as exc:
        return exc.problems
    if built.dag is not None:
        return dag_problems(job, index, built)
    iterations = built.iterations
    if isinstance(iterations, bool) or not isinstance(iterations, int) or iterations < 0:
        return [f"{field}: {job.workload}.iterations must be a whole number >= 0, got {iterations!r}"]
    if iterations and built.step is None:
        return [
            f"{field}: {job.workload} ({source_of(plugin.target)}) has iterations = {iterations} "
            "but no step(); define step(self, round, key, values)"
        ]
    if job.input is None and built.generate is None:
        return [
            f"jobs.{index}.input: {job.workload} ({source_of(plugin.target)}) has no generate(): "
            "give the job an input (a file, directory or glob) or define generate(self, split, splits, seed)"
        ]
    return []


def dag_problems(job: PluginJob, index: int, built: Any) -> list[str]:
    """A DAG workload's plan, made once at load (seed 0): its ``DagError``, if any, named."""
    try:
        dag_of(job, 0, built, f"jobs.{index}.workload")
    except ScenarioError as exc:
        return exc.problems
    return []


def load_scenario(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> Scenario:
    data = load_raw(path)
    if overrides:
        expand_node_counts(data)
    for assignment in overrides:
        apply_override(data, assignment)
    _resolve_profiles(data, Path(path).resolve().parent)
    default_calibration(data, Path(path).resolve().parent)
    for directory in resolve_plugin_path(data, Path(path).resolve().parent):
        add_plugin_dir(Path(directory))  # before parsing: a job may name an entry point installed there
    return parse_scenario(data, str(path), Path(path).parent)


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


UNION_TAGS = {*builtin_names("workload"), PLUGIN_TAG, PROFILE_FILE, INLINE_PROFILE}
"""Tags pydantic puts in an error's path for a union member; a field path shows none of them."""


TOP_LEVEL_FIELD = re.compile(r"^([a-z_]+(?:\.[\w]+)+): ")
"""A scenario-wide check's message that begins with the dotted path of the field it refuses."""


def _describe(source: str, err: Any) -> str:
    loc = [str(part) for part in err["loc"] if str(part) not in UNION_TAGS]
    field = ".".join(loc) or "(top level)"
    message = str(err["msg"])
    message = message.removeprefix("Value error, ").removeprefix("Assertion failed, ")
    named = TOP_LEVEL_FIELD.match(message) if not loc else None
    if named:  # a check across fields that names the field it refuses: that field, not "(top level)"
        field, message = named.group(1), message[named.end() :]
    kind = err["type"]
    if kind == "extra_forbidden":
        return f"{source}: {field}: unknown field; remove it or check its spelling"
    if kind == "missing":
        return f"{source}: {field}: required field is missing"
    if kind == "union_tag_invalid":
        return (
            f"{source}: {field}: unknown workload {err['input'].get('workload')!r}; "
            f"expected one of {listed('workload')}"
        )
    if kind == "union_tag_not_found":
        return f"{source}: {field}: every job needs a workload ({listed('workload')})"
    found = err.get("input")
    hidden = isinstance(found, dict | list) or found is None or "found" in message
    shown = "" if hidden else f"; found {found!r}"
    return f"{source}: {field}: {message}{shown}"


def to_yaml(scenario: Scenario) -> str:
    """The scenario as YAML that loads back to it (named classes without the shorthand's defaults)."""
    data = scenario.model_dump(mode="json", by_alias=True, exclude_none=True)
    if scenario.cluster.classes is not None:
        for section in (data["cluster"], data["chaos"]):
            for shorthand in ("reserved", "transient"):
                section.pop(shorthand, None)
    return yaml.safe_dump(data, sort_keys=False)
