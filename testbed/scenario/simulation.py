"""The ``simulation`` section of a scenario: the execution model of ``--backend sim``.

Every parameter has a default measured on this testbed; docs/simulation.md says where each
comes from and what the model cannot know. Times are the run's seconds (the same clock as
``events.jsonl``); a sleep task's pinned duration is used as it is.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator

from testbed.limits import MAX_SCENARIO_BYTES
from testbed.scenario.base import Duration, Strict
from testbed.scenario.loading import describe_yaml_error, parse_yaml


class OpModel(Strict):
    """One task operation (``wordcount.map``, ``pagerank.iterate``, ...)."""

    s_per_mb: float = Field(ge=0, description="compute seconds per MB of input, with the ideal memory")
    output_ratio: float = Field(ge=0, description="output bytes per input byte")
    fixed_s: float = Field(
        default=0.0,
        ge=0,
        description="compute seconds every attempt costs whatever its input (the op's setup and "
        "teardown), with the ideal memory: compute = fixed_s + s_per_mb x input MB",
    )


OP_MODELS: dict[str, OpModel] = {
    # compute_s / bytes_in and bytes_out / bytes_in of tasks.csv, one real run of one job
    # of each workload (wordcount 16 MB / 4 maps, sort 32 MB / 4 maps, pagerank 50,000
    # nodes / 400,000 edges / 3 iterations) on 1 reserved + 2 transient local agents
    "wordcount.map": OpModel(s_per_mb=0.1229, output_ratio=0.0434),
    "wordcount.reduce": OpModel(s_per_mb=0.0923, output_ratio=0.0),
    "sort.map": OpModel(s_per_mb=0.0140, output_ratio=1.0),
    "sort.reduce": OpModel(s_per_mb=0.0182, output_ratio=1.0),
    "pagerank.edges": OpModel(s_per_mb=0.0248, output_ratio=1.2230),
    "pagerank.links": OpModel(s_per_mb=0.0661, output_ratio=0.8454),
    "pagerank.scatter": OpModel(s_per_mb=0.0242, output_ratio=0.1646),
    "pagerank.iterate": OpModel(s_per_mb=0.0333, output_ratio=0.1413),
    # mlr: `python benchmarks/workload_mlr.py --repeat 3` (2026-11-27, after MLlib's treeAggregate
    # exchange: the model step sums the A aggregates' whole vectors): the fastest of 3 runs in one
    # process (testbed.workloads.local) of features 1000, classes 512, 1,000 points per map, 22
    # maps and 22 aggregates, each op's median task; the output ratios are those of
    # scenarios/pado-mlr.yaml's shape (16 maps, 2 aggregates, iterations after the first): a
    # gradient is the model's size (its input: the partition and the broadcast model), an
    # aggregate 1/maps of its input, a model half its input; the simulator sizes a gradient's and
    # a model's output by the model's shape instead (master/execution_model.py MODEL_SHAPED), an
    # aggregate's as one of its inputs (SUMS_ITS_INPUTS): it uses none of these three ratios
    "mlr.points": OpModel(s_per_mb=0.0105, output_ratio=1.0),
    "mlr.gradient": OpModel(s_per_mb=0.0079, output_ratio=0.3386),
    "mlr.aggregate": OpModel(s_per_mb=0.0067, output_ratio=0.0625),
    "mlr.model": OpModel(s_per_mb=0.0018, output_ratio=0.5),
}


STREAMED_OPS = frozenset({"mlr.aggregate", "mlr.model"})
"""Ops whose worker adds each input frame into a running sum as it comes
(``testbed.workloads.mlr``: ``aggregate_task``, ``model_task``), so their compute overlaps
their fetch: with ``fetch_overlap`` the simulator runs them so, and ``testbed calibrate`` fits
their compute no lower than the worker's CPU seconds. Not an op that needs a whole input
before it starts (a gradient reads the whole model first)."""

FINAL_OP = ".final"
"""``<op>.final``: the model of an op's stages that are their job's final stage, which write the
run's output (text) instead of blocks and can cost otherwise (mlr's last model: 10x the seconds
per MB of the others, docs/simulation.md); ``testbed calibrate`` fits it apart when an op runs
both as a final stage and not. Without it a final stage takes its op's model."""


class SimulationSpec(Strict):
    calibration: str | None = Field(
        default=None,
        description="a calibration file (testbed calibrate): its simulation values replace the "
        "defaults; fields this section gives itself win. Relative: beside the scenario file, else "
        "the working directory",
    )
    launch_overhead: Duration = Field(
        default=0.06,
        ge=0,
        description="a launch command to the task's work starting (message, worker fork, its setup) "
        "and its report, but for launch_cpu_s",
    )
    launch_cpu_s: Duration = Field(
        default=0.0,
        ge=0,
        description="the part of an attempt's launch and report that is its agent's CPU work, in "
        "core-seconds: a node of c cores adds launch_cpu_s / c to launch_overhead, since a faithful "
        "agent does it under its node's quota (testbed calibrate fits it from nodes of several "
        "sizes); 0: every node's launch takes launch_overhead",
    )
    fetch_overlap: bool = Field(
        default=True,
        description="a STREAMED_OPS attempt computes on its input as it comes, as the real worker "
        "adds each frame: what is left of its compute after its last remote byte is its compute "
        "less its fetch time (testbed calibrate fits those ops so); false: the fetch, then the "
        "compute (the model before 2026-11-28)",
    )
    node_startup: Duration = Field(
        default=1.45, ge=0, description="a node's start to its announcement (agent and forkserver warm)"
    )
    node_startup_cores: float | None = Field(
        default=None,
        gt=0,
        description="the cores of the nodes node_startup was measured on: a node of c cores then "
        "starts in node_startup x node_startup_cores / c, since a faithful agent starts inside its "
        "node's CPU quota (testbed calibrate writes it for a faithful calibration); none: every "
        "node starts in node_startup",
    )
    detection: Literal["will", "heartbeat"] = Field(
        default="will",
        description="how a killed node's loss is heard: its Last Will, or missed heartbeats",
    )
    will_delay: Duration = Field(
        default=0.008, ge=0, description="a SIGKILL to its Last Will at the master (detection: will)"
    )
    push_overhead: Duration = Field(
        default=0.0085,
        ge=0,
        description="a push or checkpoint copy's fixed cost beyond its link time (the upload's "
        "connection, the receiver's staging, CRC check, fsync and commit, and its report)",
    )
    link_burst: Duration = Field(
        default=0.0,
        ge=0,
        description="how far ahead of its rate an idle NIC direction runs (the scale model's token "
        "bucket burst, testbed.node.bandwidth.BURST_S, in this model's seconds: wall / dilation)",
    )
    cpu_sharing: bool = Field(
        default=True,
        description="share each node's cores (its class's cpus) among its running attempts' compute "
        "and its agent's copy and serve work, so an attempt beside a copy slows (master.sim.cpu); "
        "false: every attempt computes at one core whatever runs beside it",
    )
    copy_send_cpu_s_per_mb: float = Field(
        default=0.0024,
        ge=0,
        description="the sending agent's CPU seconds per MB of a push or checkpoint copy (reading "
        "the block, the upload), on one core of the sender's (python -m agents.copy_cpu)",
    )
    copy_receive_cpu_s_per_mb: float = Field(
        default=0.0045,
        ge=0,
        description="the receiving agent's CPU seconds per MB of a copy (staging, CRC check, fsync "
        "and commit), after its last byte, on one core of the receiver's",
    )
    serve_cpu_s_per_mb: float = Field(
        default=0.00125,
        ge=0,
        description="the holder's agent's CPU seconds per MB of a block it serves to a fetch",
    )
    round_gap: Duration = Field(
        default=0.0,
        ge=0,
        description="least time between two scheduling rounds (0: a round after every instant "
        "with news, as a master whose round takes no time)",
    )
    charge_policy_time: bool | None = Field(
        default=None,
        description="a scheduling round's time advances the virtual clock before its decisions take "
        "effect, and news meanwhile waits for the next round (Firmament's placement latency): the "
        "scheduler's fitted model of its round (Scheduler.modelled_round_s; firmament's in "
        "docs/firmament.md), else the round's measured CPU time, which makes reruns differ; none: "
        "on for policy.scheduler firmament, off for the others",
    )
    ops: dict[str, OpModel] = Field(
        default_factory=dict, description="task models per op, over the measured defaults"
    )
    memory_penalty: bool = Field(
        default=True,
        description="stretch a task given less than its ideal memory by the scenario's profile curve",
    )

    def startup_s(self, cores: float) -> float:
        """A node of ``cores`` cores' start to its announcement (``node_startup_cores``)."""
        if self.node_startup_cores is None:
            return self.node_startup
        return self.node_startup * self.node_startup_cores / cores

    def launch_s(self, cores: float) -> float:
        """A launch on a node of ``cores`` cores (``launch_cpu_s``)."""
        return self.launch_overhead + self.launch_cpu_s / cores

    def op(self, name: str) -> OpModel:
        """The model of an op: the scenario's, else the measured default, else no cost."""
        return self.ops.get(name) or OP_MODELS.get(name) or OpModel(s_per_mb=0.0, output_ratio=1.0)

    def dag_op(self, meta: dict[str, Any]) -> OpModel:
        """A stage of a DAG job (its plan's ``dag`` parameters): the ``ops`` entry
        ``<workload>.<stage>``, else the stage's own ``StageCost``."""
        own = self.ops.get(f"{meta['workload']}.{meta['stage']}")
        cost = meta["cost"]
        return own or OpModel(s_per_mb=cost["s_per_mb"], output_ratio=cost["output_ratio"])

    def stage_op(self, name: str, final: bool) -> OpModel:
        """The model of a stage of op ``name``: a job's final stage's ``<op>.final`` when the
        scenario or its calibration has one, else the op's."""
        own = self.ops.get(name + FINAL_OP) if final else None
        return own or self.op(name)

    @model_validator(mode="before")
    @classmethod
    def _calibrated(cls, data: Any, info: ValidationInfo) -> Any:
        """The calibration file's values under the fields given here (``ops`` merged per op),
        its path made absolute."""
        if not isinstance(data, dict) or not isinstance(data.get("calibration"), str):
            return data
        base = (info.context or {}).get("base_dir")
        path = calibration_path(data["calibration"], Path(base) if base is not None else None)
        if not path.is_file():
            return data  # the field's own check says so
        try:
            values = load_calibration(path)
        except OSError as exc:
            raise ValueError(f"calibration file {path}: cannot read it: {exc.strerror}") from None
        merged = {**values, **data, "calibration": str(path)}
        if isinstance(data.get("ops", {}), dict):  # else the field's own check says what is wrong
            merged["ops"] = {**values.get("ops", {}), **data.get("ops", {})}
        return merged

    @field_validator("calibration")
    @classmethod
    def _calibration_exists(cls, value: str | None) -> str | None:
        if value is not None and not Path(value).expanduser().is_file():
            raise ValueError("no such calibration file; make one with `testbed calibrate --out FILE`")
        return value


CALIBRATION_KEYS = ("simulation", "measured")
"""A calibration file: ``simulation`` (the fields of a scenario's ``simulation`` section but
``calibration``) and ``measured`` (how, where and when it was measured: free form)."""


CALIBRATION_DIR = "calibration"
"""A simulated scenario that names no calibration takes ``<its directory>/calibration/<its
fidelity mode>.yaml`` when there is one (``default_calibration``)."""


def default_calibration(data: Any, scenario_dir: Path) -> None:
    """Name, in a raw scenario mapping run on ``backend: sim`` whose ``simulation`` section has
    no ``calibration`` key, the calibration file of its directory for its fidelity mode
    (``calibration/faithful.yaml`` or ``calibration/unisolated.yaml``) if that file exists.
    ``simulation: {calibration: null}`` keeps the built-in defaults. The mode is in the name
    because a calibration holds the seconds of the mode it was measured in (docs/simulation.md:
    one of the other mode gave +1453% mean JCT); the host is not: a scenario then simulates the same on
    every machine, and a run's summary.json names the file and its SHA-256."""
    if not isinstance(data, dict) or data.get("backend") != "sim":
        return
    section = data.get("simulation", {})
    fidelity = data.get("fidelity", {})
    if not isinstance(section, dict) or "calibration" in section or not isinstance(fidelity, dict):
        return  # named, refused (null), or malformed: the schema says what is wrong
    mode = fidelity.get("mode", "unisolated")
    path = scenario_dir / CALIBRATION_DIR / f"{mode}.yaml"
    if isinstance(mode, str) and path.is_file():
        data["simulation"] = {**section, "calibration": str(path.resolve())}


def calibration_path(name: str, scenario_dir: Path | None) -> Path:
    """A relative path names a file beside the scenario when there is one, else it is relative
    to the working directory; absolute either way."""
    path = Path(name).expanduser()
    if not path.is_absolute() and scenario_dir is not None and (scenario_dir / path).is_file():
        path = scenario_dir / path
    return path.resolve()


def load_calibration(path: Path) -> dict[str, Any]:
    """The ``simulation`` values of a calibration file, checked; a ``ValueError`` naming the file
    and the field otherwise."""
    with open(path, "rb") as handle:
        raw = handle.read(MAX_SCENARIO_BYTES + 1)
    if len(raw) > MAX_SCENARIO_BYTES:
        raise ValueError(f"calibration file {path}: larger than {MAX_SCENARIO_BYTES} bytes")
    try:
        document = parse_yaml(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError(f"calibration file {path}: not UTF-8 text") from None
    except (yaml.YAMLError, ValueError) as exc:
        raise ValueError(f"calibration file {path}: {describe_yaml_error(exc)}") from None
    if not isinstance(document, dict) or not isinstance(document.get("simulation"), dict):
        raise ValueError(f"calibration file {path}: expected a mapping with a simulation mapping")
    unknown = sorted(set(document) - set(CALIBRATION_KEYS))
    if unknown or "calibration" in document["simulation"]:
        field = f"field {unknown[0]!r}" if unknown else "field simulation.calibration"
        raise ValueError(f"calibration file {path}: unknown {field}; it has {', '.join(CALIBRATION_KEYS)}")
    try:
        SimulationSpec.model_validate(document["simulation"])
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(part) for part in err["loc"])
        raise ValueError(
            f"calibration file {path}: simulation.{where}: {err['msg'].removeprefix('Value error, ')}"
        ) from None
    return document["simulation"]


def calibration_digest(path: str) -> str:
    """SHA-256 of a calibration file's bytes: which calibration a run used."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
