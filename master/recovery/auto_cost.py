"""``strategy: auto``'s cost model: each recovery strategy's predicted makespan of one job.

Musketeer (Gog's dissertation, section 3.5) maps each job onto the back-end its cost model
predicts fastest; here the back-ends are the recovery strategies. A pure function of the
job's physical plan and the scenario's settings (``Setting``: its cluster, the simulator's
calibrated rates, its transient lifetime model), read once when the strategy is built.

The stages' volumes and times are ``merge: auto``'s model (``testbed.workflows.cost``:
``stage_estimates``, the critical path of the stages, ``slots`` tasks at a time), at the
rates the simulator costs a DAG stage by (``SimulationSpec.dag_op``: a calibration's
``sql.s<i>`` entries, else the stage's ``StageCost``; ``launch_overhead`` per task; every MB a
stage reads from its parents over its NIC). On it, per strategy:

- ``spark``: executors on both classes. An eviction loses the evicted node's share of every
  finished stage's outputs, and Spark recomputes them parents first: the chain of finished
  stages' task times (``chain_s``), plus the tasks it was running (``running_s``);
- ``spark-checkpoint``: executors on transient nodes only; every output read across a stage
  boundary is written to the reserved nodes, all of it through their NICs (``write_s``); an
  eviction loses only the tasks it was running;
- ``pado``: each stage on the class Pado's Algorithm 1 gives it (its reserved stages share
  the reserved slots); each pushed stage's output goes through the reserved NICs
  (``write_s``); an eviction loses only the transient tasks it was running.

Expected evictions over a strategy's predicted eviction-free length ``T``: every transient
node's probability of its lifetime ending within ``T`` (trace seconds: ``T`` x time_scale /
dilation), the replacements' own evictions neglected; each costs the strategy's loss averaged
over an eviction time uniform in ``[0, T]``. The cheapest prediction wins, the first of
``STRATEGIES`` on a tie.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from master.recovery.pado_compiler import compile_pado
from master.recovery.pado_state import pushed_stages
from master.recovery.spark import logical_dag, stage_classes, wide_consumers
from testbed.api import JobPlan, NodeClass
from testbed.chaosmodels.lifetime_model import LifetimeModel
from testbed.chaosmodels.lifetimes import NODE_CLASSES, parse_lifetime
from testbed.plan import DAG_OP, StagePlan
from testbed.scenario.schema import Scenario
from testbed.scenario.simulation import SimulationSpec
from testbed.workflows.cost import StageEstimate, StageRate, stage_estimates

MB = 2**20
STRATEGIES = ("spark", "spark-checkpoint", "pado")
"""The strategies ``auto`` chooses among, in the order a tie is broken."""


@dataclass(frozen=True)
class Setting:
    """What the model reads of a scenario (``setting_of``)."""

    nodes: dict[NodeClass, int]
    slots: dict[NodeClass, int]
    """Each class's task slots over all its nodes."""
    nic_mb_s: dict[NodeClass, float]
    """One node's NIC rate in MB/s, per class."""
    simulation: SimulationSpec
    lifetime: LifetimeModel
    trace_s_per_run_s: float
    """Trace seconds (the lifetime model's) per run second: time_scale / dilation."""


@dataclass(frozen=True)
class Prediction:
    """One strategy's prediction for a job (seconds; evictions expected)."""

    strategy: str
    eviction_free_s: float
    evictions: float
    per_eviction_s: float

    @property
    def seconds(self) -> float:
        return self.eviction_free_s + self.evictions * self.per_eviction_s


def setting_of(scenario: Scenario) -> Setting:
    """The scenario's setting; its transient lifetime model parsed (a file it names is read)."""
    cluster = scenario.cluster
    classes = {c: getattr(cluster, c) for c in NODE_CLASSES}
    return Setting(
        nodes={c: spec.count for c, spec in classes.items()},
        slots={c: spec.count * spec.slots for c, spec in classes.items()},
        nic_mb_s={c: spec.network_mbps * 1e6 / 8 / MB for c, spec in classes.items()},
        simulation=scenario.simulation,
        lifetime=parse_lifetime(scenario.chaos.transient.lifetime),
        trace_s_per_run_s=scenario.time_scale / scenario.fidelity.factor,
    )


def predict(plan: JobPlan, setting: Setting, candidates: Sequence[str] = STRATEGIES) -> list[Prediction]:
    """Each candidate's prediction for the job, in the order given."""
    return [PREDICTORS[name](plan, setting) for name in candidates]


def choose(predictions: Sequence[Prediction]) -> Prediction:
    """The cheapest prediction, the first on a tie."""
    return min(predictions, key=lambda p: p.seconds)


def expected_evictions(setting: Setting, run_s: float) -> float:
    """Transient evictions expected within ``run_s`` run seconds of a fresh cluster."""
    if setting.nodes["transient"] == 0 or not setting.lifetime.evicts:
        return 0.0
    within = setting.lifetime.cdf_at(np.array([run_s * setting.trace_s_per_run_s]))
    return setting.nodes["transient"] * float(within[0])


def estimates(plan: JobPlan, setting: Setting, slots: int | Sequence[int]) -> list[StageEstimate]:
    """The job's stages at the simulator's rates, on ``slots`` (one count, or one per stage)."""
    nic = min(setting.nic_mb_s.values())

    def rate_of(stage: StagePlan) -> StageRate:
        launch = setting.simulation.launch_overhead
        if stage.op != DAG_OP:
            op = setting.simulation.stage_op(stage.op, stage.final)
            return StageRate(launch + op.fixed_s, op.s_per_mb, op.output_ratio)
        meta = stage.shared_params["dag"]
        op = setting.simulation.dag_op(meta)
        network = 1 / nic if stage.deps else 0.0
        return StageRate(
            launch + op.fixed_s, op.s_per_mb + network, op.output_ratio, source_mb=meta["cost"]["source_mb"]
        )

    return stage_estimates(plan, rate_of, slots)


def _length(found: Sequence[StageEstimate]) -> float:
    return max((e.end_s for e in found), default=0.0)


def running_s(found: Sequence[StageEstimate], length: float, stages: Sequence[int] | None = None) -> float:
    """The work an eviction interrupts, averaged over its time: half a task of the stage then
    running (of ``stages`` only, if given), weighted by how long each stage runs."""
    if length <= 0:
        return 0.0
    chosen = range(len(found)) if stages is None else stages
    return sum(found[s].task_s / 2 * (found[s].end_s - found[s].start_s) / length for s in chosen)


def chain_s(plan: JobPlan, found: Sequence[StageEstimate], length: float) -> float:
    """Lineage recomputation after an eviction at a uniform time: every finished non-final
    stage's task, parents first (the evicted node held a share of each)."""
    if length <= 0:
        return 0.0
    return sum(
        e.task_s * (length - e.end_s) / length
        for e, stage in zip(found, plan.stages, strict=True)
        if not stage.final
    )


def write_s(setting: Setting, found: Sequence[StageEstimate], stages: Sequence[int]) -> float:
    """The outputs of ``stages`` written into the reserved nodes, through their NICs."""
    reserved_mb_s = setting.nic_mb_s["reserved"] * setting.nodes["reserved"]
    return sum(found[s].out_mb for s in stages) / reserved_mb_s if reserved_mb_s else 0.0


def _spark(plan: JobPlan, setting: Setting) -> Prediction:
    found = estimates(plan, setting, setting.slots["reserved"] + setting.slots["transient"])
    length = _length(found)
    loss = chain_s(plan, found, length) + running_s(found, length)
    return Prediction("spark", length, expected_evictions(setting, length), loss)


def _checkpoint(plan: JobPlan, setting: Setting) -> Prediction:
    found = estimates(plan, setting, setting.slots["transient"])
    copied = [s for s in range(len(plan.stages)) if wide_consumers(plan, s)]
    length = _length(found) + write_s(setting, found, copied)
    return Prediction(
        "spark-checkpoint", length, expected_evictions(setting, length), running_s(found, length)
    )


def _pado(plan: JobPlan, setting: Setting) -> Prediction:
    dag = logical_dag(plan)
    classes = stage_classes(compile_pado(dag), plan) if dag is not None else ["transient"] * len(plan.stages)
    found = estimates(plan, setting, [setting.slots[c] for c in classes])
    length = _length(found) + write_s(setting, found, sorted(pushed_stages(plan, classes)))
    transient = [s for s, c in enumerate(classes) if c == "transient"]
    loss = running_s(found, length, transient)
    return Prediction("pado", length, expected_evictions(setting, length), loss)


PREDICTORS = {"spark": _spark, "spark-checkpoint": _checkpoint, "pado": _pado}
