"""The execution model: how long a task, a push and a node's start take in the simulator.

It lives beside ``master.sim``, not in it: the master's shell reads it too, for the duration
prior of a job's stages (``master.stage_prior``), and the simulator's shell imports the
master's shell (``master.shell.answers``), so a model inside ``master.sim`` would make the two
packages import each other.

A pure function of the task's launch command, the bytes of the blocks it reads, the node it
runs on and the scenario (its ``simulation`` section, its cluster's bandwidths, its task
profiles). docs/simulation.md states the model, where each default was measured, and what a
real run measures that the model cannot know.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from master.profiles import role_of
from testbed.api import SimModel
from testbed.node.bandwidth import book
from testbed.plan import DAG_OP
from testbed.scenario.schema import PluginJob, Scenario, ScenarioError
from testbed.scenario.simulation import STREAMED_OPS, OpModel
from testbed.settings.profiles import load_profiles
from testbed.wire.protocol import INLINE_NOOP, TaskSpec
from testbed.workloads.catalog import builtin
from testbed.workloads.layouts import OUTPUT_PARTS
from testbed.workloads.mlr import combined_partition, model_shaped_bytes
from testbed.workloads.pagerank import sizes as pagerank_sizes

MB = 2**20
PLUGIN_OP = "plugin."
"""The ops of a workload plugin's tasks: ``plugin.map``, ``plugin.reduce``."""
SUMMED_VECTORS = frozenset({"mlr.gradient"})
"""Ops whose combiner (``testbed.workloads.catalog.COMBINERS``) adds vectors of one shape into one: a
partial aggregate is its largest member's size, not the sum of them, whole in the partition
``testbed.workloads.mlr.combined_partition`` picks among the members' (as the real combiner
writes it).
Any other combiner (wordcount's: the union of the members' words) is counted as the sum,
an upper bound (sizes alone do not tell how many words the members share)."""
SUMS_ITS_INPUTS = frozenset({"mlr.aggregate"})
"""Ops whose output is the sum of their input blocks' vectors: one input block's size,
however many blocks (a partial aggregate of Pado's is one block standing for
many gradients: sized by its op's output ratio, it made Pado's model half Spark's)."""
MODEL_SHAPED = frozenset({"mlr.gradient", "mlr.model"})
"""Ops whose output has the MLR model's shape whatever they read (a gradient, whole in one
partition: ``testbed.workloads.layouts``; a model): sized from the job's features and classes
as the real task writes it (``testbed.workloads.mlr.model_shaped_bytes``). By their output
ratios the first iteration, which reads no model, wrote 0.66 (gradient) and 0.33 (model) of
it, and the model grew toward its size over the iterations; at another shape than the
ratios' it had no bound."""
GRAPH_SHAPED = frozenset({"pagerank.edges", "pagerank.links", "pagerank.scatter", "pagerank.iterate"})
"""Ops whose output a generated graph's shape sizes (nodes, edges, partitions: their expected
distinct edges, nodes and contributions, ``testbed.workloads.pagerank.sizes``); a graph read
from files keeps the ratios. Ratios fitted on one graph mispredicted another: iterate 0.0958
and scatter 0.1168 of their input in the calibration, 0.17 and 0.205 in pado-vs-spark's real
runs."""

PARTS_READ: dict[tuple[str, bool], tuple[int, ...]] = {
    ("pagerank.scatter", False): (0, 1),
    ("pagerank.iterate", False): (0, 1),
    ("pagerank.iterate", True): (1, 2),
}
"""The partitions of a block read through a narrow dependency that an op reads (by the op and
whether its stage is the job's final one), where it does not read every one. PageRank's
links block is the edges (0), the node table (1) and the names (2): scatter and an iterate
read the edges and the table, the last iterate the table and the names
(``testbed.workloads.pagerank``): the real last iterates of pado-vs-spark read 0.53 MB where
the whole block is 2.35."""


@dataclass(slots=True)
class Links:
    """A node's NIC as the scale model enforces it (``testbed.node.bandwidth``): one token bucket
    per direction, shared by every transfer of the node (fetches, blocks served, pushes sent
    and received), booked first come first served: the time each is next free."""

    out_free: float = 0.0
    in_free: float = 0.0
    slow: float = 1.0
    """How many times slower than its class's rate both directions run: its node's
    ``chaos.slowdown`` factor times its episode's under way, as the real node's buckets are
    divided (``testbed.node.slow_episodes``). A change leaves the bookings made as they are;
    the next ones are at the new rate (``SharedBucket.set_rate``)."""


@dataclass(frozen=True, slots=True)
class TaskCost:
    """What one attempt costs once its inputs are there (seconds, bytes)."""

    bytes_in: int
    fetch_s: float
    compute_s: float
    spill_bytes: int
    spill_s: float
    bytes_out: int

    @property
    def seconds(self) -> float:
        return self.fetch_s + self.compute_s + self.spill_s

    def slowed(self, factor: float) -> TaskCost:
        """The cost on a node ``factor`` times slower (``chaos.slowdown``): its compute (or
        sleep) and spills take that much longer."""
        if factor == 1.0:
            return self
        return replace(self, compute_s=self.compute_s * factor, spill_s=self.spill_s * factor)


def aggregate_sizes(op: str, held: list[tuple[int, ...]], partitions: int) -> tuple[int, ...]:
    """Each partition's bytes of the partial aggregate of outputs ``held`` (their partition
    sizes) merged by the op's combiner."""
    columns = [[parts[p] for parts in held if p < len(parts)] for p in range(partitions)]
    if op in SUMMED_VECTORS:
        written = [p for p, column in enumerate(columns) if any(column)]
        if not written:
            return (0,) * partitions
        target, size = combined_partition(written), max(max(column) for column in columns if column)
        return tuple(size if p == target else 0 for p in range(partitions))
    return tuple(sum(column) for column in columns)


def source_bytes(spec: TaskSpec) -> int:
    """Bytes a source task reads, from its plan (no data is generated or read)."""
    params: dict[str, Any] = spec.params
    if "file" in params:
        return int(params["file"]["end"]) - int(params["file"]["start"])
    generate = params.get("generate")
    if generate is None:
        return 0
    if "nbytes" in generate:
        return int(generate["nbytes"])
    workload = builtin(spec.op.partition(".")[0])  # its ``RECORD_BYTES``: a sort record, an edge
    return int(generate["count"]) * (1 if workload is None else workload.RECORD_BYTES)


class ExecutionModel:
    def __init__(
        self,
        scenario: Scenario,
        ideal_memory_mb: Callable[[str, int], int],
        dependency_kinds: Callable[[str, int], tuple[str, ...]],
    ) -> None:
        """``ideal_memory_mb(job_id, stage)``: the memory at which the stage's tasks do not spill;
        ``dependency_kinds(job_id, stage)``: the kind of each dependency of the stage, in the
        order of its tasks' inputs (``shuffle``, ``narrow``, ``broadcast``)."""
        self.scenario = scenario
        self.spec = scenario.simulation
        self.ideal_memory_mb = ideal_memory_mb
        self.dependency_kinds = dependency_kinds
        self.profiles = load_profiles(scenario) if self.spec.memory_penalty else {}
        classes = scenario.node_classes
        self.nic = {c: named.spec.network_mbps * 1e6 / 8 for c, named in classes.items()}
        """Each node class's (by name) NIC rate in bytes/s (looked up once per fetch, twice)."""
        self.disk = {c: named.spec.disk_mb_s for c, named in classes.items()}
        """Each node class's spill rate in MB/s (None: unlimited)."""
        self.plugin_models: dict[tuple[str, str], SimModel | None] = {}
        """A workload plugin's ``sim_model()`` per (import path, options as JSON)."""
        for index, job in enumerate(scenario.jobs):
            if isinstance(job, PluginJob):
                self.plugin_model(job.workload, job.options, f"jobs.{index}.workload")

    def plugin_model(
        self, workload: str, options: dict[str, Any], field: str = "workload"
    ) -> SimModel | None:
        """The plugin's own task model (built with the job's options), or None."""
        from testbed.workloads.user import load_workload  # late: the workloads import their ops

        key = (workload, json.dumps(options, sort_keys=True, default=str))
        if key not in self.plugin_models:
            model = load_workload(workload, options, field).sim_model
            try:
                found = model() if model is not None else None
            except Exception as exc:  # the plugin's code: its error, named, before the run
                raise ScenarioError(
                    [f"{field}: {workload}.sim_model() raised {type(exc).__name__}: {exc}"]
                ) from None
            if found is not None and not isinstance(found, SimModel):
                raise ScenarioError(
                    [f"{field}: {workload}.sim_model() must return a testbed.api.SimModel, got {found!r:.80}"]
                )
            self.plugin_models[key] = found
        return self.plugin_models[key]

    def op_model(self, spec: TaskSpec) -> OpModel:
        """The scenario's ``simulation.ops`` entry of the op (a job's final stage: its
        ``<op>.final`` when there is one); for a workload plugin's task,
        ``<import path>.<map|reduce>`` there, else the plugin's ``sim_model()``."""
        if spec.op == DAG_OP:
            return self.spec.dag_op(spec.params["dag"])
        if not spec.op.startswith(PLUGIN_OP):
            return self.spec.stage_op(spec.op, spec.final)
        role = spec.op.removeprefix(PLUGIN_OP)
        workload = spec.params["workload"]
        if f"{workload}.{role}" in self.spec.ops:
            return self.spec.ops[f"{workload}.{role}"]
        model = self.plugin_model(workload, spec.params["options"])
        if model is None:
            return self.spec.op(spec.op)
        if role == "map":
            return OpModel(s_per_mb=model.map_s_per_mb, output_ratio=model.map_output_ratio)
        if role == "step":
            return OpModel(s_per_mb=model.step_s_per_mb, output_ratio=model.step_output_ratio)
        return OpModel(s_per_mb=model.reduce_s_per_mb, output_ratio=1.0)

    def source_bytes(self, spec: TaskSpec) -> int:
        """Bytes a source task reads; a plugin's generated split: its model's ``generated_split_mb``;
        a DAG stage creating its rows: its ``StageCost.source_mb``."""
        if spec.op == DAG_OP and "file" not in spec.params and not spec.params["dag"]["inputs"]:
            return int(spec.params["dag"]["cost"]["source_mb"] * MB)
        generate = spec.params.get("generate")
        if spec.op.startswith(PLUGIN_OP) and generate is not None:
            model = self.plugin_model(spec.params["workload"], spec.params["options"])
            return int(model.generated_split_mb * MB) if model is not None else 0
        return source_bytes(spec)

    def workload_of(self, spec: TaskSpec) -> str:
        """The workload a task's profile is keyed by (a plugin's import path)."""
        if spec.op.startswith(PLUGIN_OP):
            return str(spec.params["workload"])
        if spec.op == DAG_OP:
            return str(spec.params["dag"]["workload"])
        return spec.op.partition(".")[0]

    # ------------------------------------------------------------------ nodes

    def nic_bytes_s(self, node_class: str) -> float:
        return self.nic[node_class]

    def link_bytes_s(self, links: Links, node_class: str) -> float:
        """The rate of a node's NIC now: its class's, divided by its ``slow``."""
        return self.nic[node_class] / links.slow

    def disk_bytes_s(self, node_class: str) -> float | None:
        rate = self.disk[node_class]
        return None if rate is None else rate * MB

    def move(
        self, nbytes: int, now: float, sender: Links, sender_class: str, receiver: Links, receiver_class: str
    ) -> float:
        """Book ``nbytes`` sent at ``now`` on the sender's ``net-out`` and the receiver's ``net-in``
        (the real agent paces every chunk on both): the seconds until they are through, the
        slower of the two bookings, each at its link's rate now (``link_bytes_s``).

        ``book``'s arithmetic on both links, inlined (a call per remote block read: 11 million
        in sim-yarn-me-1k); the wait is the later link's, as the rounding is monotonic, so the
        very same floats (tests/sim/test_links.py)."""
        burst, nic = self.spec.link_burst, self.nic
        idle = now - burst
        out, out_rate = sender.out_free, nic[sender_class] / sender.slow
        out = sender.out_free = (out if out > idle else idle) + nbytes / out_rate
        into, in_rate = receiver.in_free, nic[receiver_class] / receiver.slow
        into = receiver.in_free = (into if into > idle else idle) + nbytes / in_rate
        wait = (out if out > into else into) - now - burst
        return wait if wait > 0.0 else 0.0

    def unbook(
        self,
        nbytes: float,
        sender: tuple[Links, str, float],
        receiver: tuple[Links, str, float],
    ) -> None:
        """Give back ``nbytes`` booked by ``move`` and never sent (a fetch failed before them):
        both links are free that much sooner, by the seconds they were booked for. Each side is
        (its links, its node class, its links' ``slow`` when they were booked: an episode begun
        or ended since changed the rate of the next bookings, not of this one)."""
        (out, out_class, out_slow), (into, in_class, in_slow) = sender, receiver
        out.out_free -= nbytes / (self.nic[out_class] / out_slow)
        into.in_free -= nbytes / (self.nic[in_class] / in_slow)

    def whole_blocks(self, spec: TaskSpec) -> dict[str, tuple[int, ...] | None]:
        """The input blocks the task reads beyond the partition its reference names: those of
        its narrow and broadcast dependencies (task i reads parent i's output), each with the
        partitions it reads (``PARTS_READ``; None: every one); through a shuffle it reads the
        one partition its reference names."""
        kinds = self.dependency_kinds(spec.job_id, spec.stage)
        parts = PARTS_READ.get((spec.op, spec.final))
        return {
            ref.block: parts
            for kind, refs in zip(kinds, spec.inputs, strict=False)
            if kind != "shuffle"
            for ref in refs
        }

    def detection_s(self) -> float:
        """A killed node's death to the master hearing of it."""
        if self.spec.detection == "will":
            return self.spec.will_delay
        return self.scenario.heartbeat_timeout_s

    # ------------------------------------------------------------------ tasks

    def pinned_s(self, spec: TaskSpec) -> float | None:
        """A task whose duration the scenario fixes (sleep, noop): that duration; a CPU-bound
        sleep's is its CPU seconds of one core (``cpu_s``), which its node's cores share out."""
        if spec.op == INLINE_NOOP:
            return 0.0
        if "cpu_s" in spec.params:
            return float(spec.params["cpu_s"])
        if "duration_s" in spec.params:
            return float(spec.params["duration_s"])
        return None

    def waits(self, spec: TaskSpec) -> bool:
        """A task that takes its time off the node's cores: a plain sleep or a noop (a CPU-bound
        sleep spins on them, as the real one does: ``testbed.workloads.sleep``)."""
        return self.pinned_s(spec) is not None and "cpu_s" not in spec.params

    def cost(
        self, spec: TaskSpec, input_bytes: int, fetch_s: float, node_class: str, largest: int = 0
    ) -> TaskCost:
        """An attempt reading ``input_bytes`` of blocks (``largest``: the largest of them), from
        its own node or over the network (``fetch_s``: the links' time for its remote ones,
        ``move``), plus its source if it has one, on a node of ``node_class``."""
        pinned = self.pinned_s(spec)
        fraction = min(1.0, spec.memory_mb / max(1, self.ideal_memory_mb(spec.job_id, spec.stage)))
        profile = self.profiles.get((self.workload_of(spec), role_of(spec.stage)))
        if pinned is not None:  # a sleep task given less than its ideal memory: its profile's penalty
            penalty = profile.model.penalty.multiplier(fraction) if fraction < 1.0 and profile else 1.0
            return TaskCost(0, 0.0, pinned * penalty, 0, 0.0, 0)
        bytes_in = self.source_bytes(spec) + input_bytes
        op = self.op_model(spec)
        compute_s = op.fixed_s + op.s_per_mb * bytes_in / MB
        spill_bytes, spill_s = 0, 0.0
        if fraction < 1.0 and profile is not None:
            compute_s *= profile.model.penalty.multiplier(fraction)
        elif fraction < 1.0:
            spill_bytes = int(bytes_in * (1.0 - fraction))
            disk = self.disk_bytes_s(node_class)
            spill_s = 2 * spill_bytes / disk if disk else 0.0
        if spec.final:  # its output goes to the sink: no block (the real task reports 0 bytes out)
            bytes_out = 0
        elif spec.op in MODEL_SHAPED:
            bytes_out = model_shaped_bytes(spec.params)
        elif spec.op in GRAPH_SHAPED and (shaped := pagerank_sizes.task_bytes(spec)) is not None:
            bytes_out = shaped
        elif spec.op in SUMS_ITS_INPUTS and largest:
            bytes_out = largest
        else:
            bytes_out = int(bytes_in * op.output_ratio)
        return TaskCost(bytes_in, fetch_s, compute_s, spill_bytes, spill_s, bytes_out)

    def attempt_cost(
        self, spec: TaskSpec, input_bytes: int, fetch_s: float, node_class: str, largest: int = 0
    ) -> TaskCost:
        """``cost``, with an op that computes on its input as it comes (``STREAMED_OPS``, under
        ``fetch_overlap``) charged only what is left of its compute after its fetch."""
        cost = self.cost(spec, input_bytes, fetch_s, node_class, largest)
        if self.spec.fetch_overlap and spec.op in STREAMED_OPS:  # summed as they came
            return replace(cost, compute_s=max(0.0, cost.compute_s - fetch_s))
        return cost

    @staticmethod
    def partitions(total: int, count: int) -> tuple[int, ...]:
        """``total`` bytes cut into ``count`` partitions (the remainder to the first ones)."""
        base, extra = divmod(total, count)
        return tuple(base + (1 if p < extra else 0) for p in range(count))

    def output_parts(self, spec: TaskSpec, total: int) -> tuple[int, ...]:
        """The partitions of the ``total`` bytes the task writes: as its workload lays them
        out (``testbed.workloads.layouts``: a PageRank links block of a generated graph as its
        edges, node table and names, which ``PARTS_READ`` reads apart; an MLR gradient whole in
        one partition), any other block cut evenly."""
        layout = OUTPUT_PARTS.get(spec.op)
        parts = layout(spec, total) if layout is not None else None
        return parts if parts is not None else self.partitions(total, spec.partitions)

    def push_s(
        self,
        sizes: list[int],
        now: float,
        sender: tuple[Links, str],
        receivers: list[tuple[Links, str] | None],
        rate_bytes_s: float | None,
    ) -> list[float]:
        """The seconds from ``now`` until each copy of a push is through (``sizes[i]`` bytes to
        ``receivers[i]``, None: a receiver gone, refused at once). The real agent uploads to
        every receiver at once, their chunks interleaved on the sender's ``net-out``: every copy
        ends with the sender's booking of them all, or later on its receiver's ``net-in``, or at
        its own ``rate_bytes_s`` (Pado's push rate) if that is slower; then ``push_overhead``."""
        links, node_class = sender
        burst = self.spec.link_burst
        total = sum(size for size, receiver in zip(sizes, receivers, strict=True) if receiver is not None)
        links.out_free, out_s = book(links.out_free, now, total, self.link_bytes_s(links, node_class), burst)
        ends = []
        for size, receiver in zip(sizes, receivers, strict=True):
            if receiver is None:
                ends.append(0.0)
                continue
            their, their_class = receiver
            their.in_free, in_s = book(their.in_free, now, size, self.link_bytes_s(their, their_class), burst)
            link_s = max(out_s, in_s, size / rate_bytes_s if rate_bytes_s else 0.0)
            ends.append(self.spec.push_overhead + link_s)
        return ends
