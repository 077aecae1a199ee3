"""Pado's runtime state of a job and its options, for ``master.recovery.pado``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from master.recovery.pado_compiler import PadoPlan, aggregates_partially
from master.recovery.pado_rules import AggregationLimits, Block, CommitLedger, Push
from master.recovery.spark import physical_operators, shuffle_consumers
from testbed.api import FlushAggregate, JobPlan, NodeClass, PushDelivered, PushedPart, TaskKey
from testbed.scenario.schema import ScenarioError
from testbed.workloads.catalog import COMBINERS

DEFAULT_INPUT_CACHE_MB = 64
"""Each transient agent's task input cache under ``pado`` (``policy.options.pado.input_cache_mb``)."""
DEFAULT_AGGREGATION = AggregationLimits(max_delay_s=1.0, max_tasks=4)
"""``policy.options.pado.aggregate_max_delay_s`` / ``aggregate_max_tasks`` (1: no aggregation)."""


@dataclass(frozen=True)
class Held:
    """A finished task's output held on its transient node for partial aggregation."""

    key: TaskKey
    attempt: int
    since: float


@dataclass(frozen=True)
class Aggregate:
    """A partial aggregate being made and pushed by ``node``: one push for ``keys``."""

    push: Push
    node: str
    stage: int
    keys: tuple[TaskKey, ...]
    command: FlushAggregate
    """Sent again after a broker outage: the agent ignores a flush it has seen."""


@dataclass
class PadoJob:
    """Pado's runtime state of one job."""

    classes: list[NodeClass]
    pushed: frozenset[int]
    """Transient stages whose outputs are pushed to the reserved tasks reading them."""
    aggregated: frozenset[int] = frozenset()
    """Pushed stages whose outputs are partially aggregated on their node (section 3.2.7)."""
    ledger: CommitLedger = field(default_factory=CommitLedger)
    receivers: dict[TaskKey, str] = field(default_factory=dict)
    """Reserved task -> the reserved node it was set up on (receives its pushes)."""
    waiting: dict[str, tuple[tuple[TaskKey, ...], Push, dict[str, Block]]] = field(default_factory=dict)
    """Commits that arrived before every receiver's report: retried on each report."""
    held: dict[tuple[int, str], list[Held]] = field(default_factory=dict)
    """(stage, transient node) -> outputs held there, oldest first, not yet flushed."""
    aggregates: dict[str, Aggregate] = field(default_factory=dict)
    """Aggregate block id -> the aggregate, from its flush until its commit or loss."""
    flushes: int = 0
    streaming: dict[TaskKey, int] = field(default_factory=dict)
    """Receivers launched before all their inputs were committed -> their attempt."""
    early: dict[str, tuple[str, PushDelivered]] = field(default_factory=dict)
    """Commit requests that overtook their task's success message (by block id)."""
    receipts: set[tuple[str, str]] = field(default_factory=set)
    """(block, reserved node) of every receipt (``BlockReceived``) taken into account."""


@dataclass(frozen=True)
class PadoOptions:
    """``policy.options.pado``, checked."""

    rate: float | None
    """Push bandwidth in bytes per second (None: unlimited)."""
    cache_mb: int
    limits: AggregationLimits
    incremental: bool

    KNOWN = frozenset(
        {
            "push_bandwidth_mbps",
            "input_cache_mb",
            "aggregate_max_tasks",
            "aggregate_max_delay_s",
            "incremental_receivers",
        }
    )

    @classmethod
    def parse(cls, options: dict[str, Any]) -> PadoOptions:
        """The options, or a ``ScenarioError`` naming the bad one."""
        unknown = set(options) - cls.KNOWN
        if unknown:
            raise ScenarioError([f"policy.options.pado: unknown option(s) {sorted(unknown)}"])
        mbps = options.get("push_bandwidth_mbps")
        cache_mb = _non_negative_int(options, "input_cache_mb", DEFAULT_INPUT_CACHE_MB)
        max_tasks = _non_negative_int(options, "aggregate_max_tasks", DEFAULT_AGGREGATION.max_tasks)
        delay = options.get("aggregate_max_delay_s", DEFAULT_AGGREGATION.max_delay_s)
        try:
            limits = AggregationLimits(float(delay), max_tasks)
        except (TypeError, ValueError) as exc:
            raise ScenarioError([f"policy.options.pado: {exc}"]) from None
        incremental = options.get("incremental_receivers", True)
        if not isinstance(incremental, bool):
            raise ScenarioError(
                [f"policy.options.pado.incremental_receivers: true or false, not {incremental!r}"]
            )
        return cls(float(mbps) * 1e6 / 8 if mbps else None, cache_mb, limits, incremental)

    def dilated(self, dilation: float) -> PadoOptions:
        """The options on the core's clock, the shell's: wall seconds, ``dilation`` times the
        emulated ones a faithful run's options are written in (docs/fidelity.md; the
        simulator's dilation is 1). The push rate is divided by it, as the nodes'
        bandwidths are, and the aggregation's time cap multiplied by it: undilated, a 1 s cap
        at dilation 6 flushed each held gradient of scenarios/pado-mlr.yaml alone, before
        its node's next one (0.5 emulated s, 3 wall s) could join it."""
        if dilation == 1.0:
            return self
        limits = AggregationLimits(self.limits.max_delay_s * dilation, self.limits.max_tasks)
        rate = self.rate / dilation if self.rate is not None else None
        return replace(self, rate=rate, limits=limits)


def aggregates_into(pado: PadoPlan, plan: JobPlan, stage: int) -> bool:
    """Whether a pushed physical stage's outputs may be partially aggregated: the Pado
    stage anchored on the reserved operator receiving them is commutative and associative
    (``aggregates_partially``) and the stage's op has a combiner."""
    if plan.stages[stage].op not in COMBINERS:
        return False
    receiving = {physical_operators(plan)[c][0] for c in shuffle_consumers(plan, stage)}
    anchored = [s for s in pado.stages if s.anchor in receiving]
    return bool(anchored) and all(aggregates_partially(pado, s) for s in anchored)


def push_block_id(push_id: str) -> str:
    """The block a committed push left on its receivers: ``<task>.a<attempt>`` for a task's
    own output (push id ``<task>#<attempt>``), the aggregate's block id otherwise."""
    task_id, mark, attempt = push_id.rpartition("#")
    return f"{task_id}.a{attempt}" if mark else push_id


def _non_negative_int(options: dict[str, Any], name: str, default: int) -> int:
    value = options.get(name, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ScenarioError([f"policy.options.pado.{name}: a whole number >= 0, not {value!r}"])
    return value


def blocks_by_partition(parts: tuple[PushedPart, ...]) -> dict[int, Block]:
    return {p.partition: (p.nbytes, p.crc32) for p in parts if p.nbytes}


def pushed_stages(plan: JobPlan, classes: Sequence[NodeClass]) -> frozenset[int]:
    """The transient stages whose shuffle consumers all run on reserved nodes: they push."""
    return frozenset(
        s
        for s, cls in enumerate(classes)
        if cls == "transient"
        and shuffle_consumers(plan, s)
        and all(classes[c] == "reserved" for c in shuffle_consumers(plan, s))
    )
