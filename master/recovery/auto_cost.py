"""``strategy: auto``'s cost model: each recovery strategy's predicted makespan of one job.

Musketeer (Gog's dissertation, section 3.5) maps each job onto the back-end its cost model
predicts fastest; here the back-ends are the recovery strategies. A pure function of the
job's physical plan and the scenario's settings (``Setting``: its cluster, the simulator's
calibrated rates, its transient lifetime model), read once when the strategy is built.

The stages' volumes and times are ``merge: auto``'s model (``testbed.workflows.cost``:
``stage_estimates``, the critical path of the stages, ``slots`` tasks at a time), at the
rates the simulator costs a DAG stage by (``SimulationSpec.dag_op``: a calibration's
``sql.s<i>`` entries, else the stage's ``StageCost``; ``launch_overhead`` per task; every MB a
stage reads from its parents over its NIC). On it, per strategy, a ``Timeline``: the stages'
eviction-free times, when each stage's output is there for its readers, which outputs an
eviction can take and what rebuilding one costs:

- ``spark``: executors on both classes, outputs on their producers' disks: an evicted node's
  outputs are rebuilt by lineage, their own lost inputs first (``rebuild_s``);
- ``spark-checkpoint``: executors on transient nodes only; every output read across a stage
  boundary is copied into the reserved nodes (``Copies``: the simulator's push, booked on the
  reserved NICs); with ``read_from: checkpoint`` a reader waits for its parents' copies and
  reads them back through the reserved NICs; a copied output survives an eviction;
- ``pado``: each stage on the class Pado's Algorithm 1 gives it (its reserved stages share
  the reserved slots); each pushed stage's output goes through the reserved NICs
  (``write_s``) and survives, as a reserved stage's does.

An eviction at run time ``t`` (``loss_at``): the evicted transient node ran a task of each
stage with the chance ``exposed`` (tasks spread one a node, transient nodes first, as the
simulator's FIFO places them); its running task starts again after the master hears of the
loss (the simulator's detection) and after its lost inputs are rebuilt; a finished output it
held that is read after ``t`` is rebuilt; the rest of the job waits for them as its
dependencies say. Expected evictions over a strategy's eviction-free length ``T``: every
transient node's probability of its lifetime ending within ``T`` (trace seconds: ``T`` x
time_scale / dilation), the replacements' own evictions neglected; each costs ``loss_at``
averaged over the eviction's time as the lifetime model distributes it within ``[0, T]``
(``per_eviction_s``). The cheapest prediction wins, the first of ``STRATEGIES`` on a tie.
"""

from __future__ import annotations

import math
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
from testbed.scenario.cluster import NodeClassSpec
from testbed.scenario.schema import Scenario
from testbed.scenario.simulation import SimulationSpec
from testbed.settings.policies import options_for
from testbed.workflows.cost import ReadyOf, StageEstimate, StageRate, stage_estimates

MB = 2**20
STRATEGIES = ("spark", "spark-checkpoint", "pado")
"""The strategies ``auto`` chooses among, in the order a tie is broken."""
EVICTION_TIMES = 64
"""The cells of ``[0, T]`` over which an eviction's loss is averaged (numerical resolution)."""


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
    detection_s: float
    """A killed node's death to the master hearing of it (the simulator's ``detection``)."""
    fetch_back: bool
    """spark-checkpoint's readers wait for their parents' copies and read them from the
    reserved nodes (``policy.options.spark-checkpoint.read_from: checkpoint``)."""


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


@dataclass(frozen=True)
class Timeline:
    """A strategy's eviction-free run of a job, and what an eviction can take of it."""

    stages: list[StageEstimate]
    available_s: list[float]
    """When each stage's output is there for its readers across a stage boundary (its end,
    or its copies' landing)."""
    exposed: list[float]
    """The chance that an evicted transient node ran a task of the stage (held an output)."""
    safe_s: list[float]
    """From when the stage's output survives an eviction (its copies all landed; inf: never,
    it lives on its producers' disks)."""
    rebuild_s: list[float]
    """Seconds to rebuild the stage's output lost with a node: its task, after the longest
    rebuild of the inputs the node held that survive nowhere (parents in parallel)."""
    copy_s: list[float]
    """One task's copy of its output, where the stage's output is copied (else 0)."""
    extra_s: float = 0.0
    """Seconds beyond the stages' critical path (Pado's pushes)."""

    @property
    def length_s(self) -> float:
        return max((e.end_s for e in self.stages), default=0.0) + self.extra_s


def setting_of(scenario: Scenario) -> Setting:
    """The scenario's setting, per kind (its classes' nodes and slots summed, the NIC and the
    lifetime model of its first class of the kind); the lifetime model parsed (a file it names
    is read)."""
    kinds = {c: scenario.of_kind(c) for c in NODE_CLASSES}
    first = {c: named[0].spec if named else NodeClassSpec(count=0) for c, named in kinds.items()}
    sim = scenario.simulation
    transient = kinds["transient"][0].chaos if kinds["transient"] else scenario.chaos.transient
    return Setting(
        nodes={c: scenario.kind_count(c) for c in NODE_CLASSES},
        slots={c: sum(n.spec.count * n.spec.slots for n in named) for c, named in kinds.items()},
        nic_mb_s={c: spec.network_mbps * 1e6 / 8 / MB for c, spec in first.items()},
        simulation=sim,
        lifetime=parse_lifetime(transient.lifetime),
        trace_s_per_run_s=scenario.time_scale / scenario.fidelity.factor,
        detection_s=sim.will_delay if sim.detection == "will" else scenario.heartbeat_timeout_s,
        fetch_back=options_for(scenario, "spark-checkpoint").get("read_from") == "checkpoint",
    )


def predict(plan: JobPlan, setting: Setting, candidates: Sequence[str] = STRATEGIES) -> list[Prediction]:
    """Each candidate's prediction for the job, in the order given."""
    return [prediction(name, plan, TIMELINES[name](plan, setting), setting) for name in candidates]


def prediction(name: str, plan: JobPlan, line: Timeline, setting: Setting) -> Prediction:
    length = line.length_s
    return Prediction(name, length, expected_evictions(setting, length), per_eviction_s(plan, line, setting))


def choose(predictions: Sequence[Prediction]) -> Prediction:
    """The cheapest prediction, the first on a tie."""
    return min(predictions, key=lambda p: p.seconds)


def expected_evictions(setting: Setting, run_s: float) -> float:
    """Transient evictions expected within ``run_s`` run seconds of a fresh cluster."""
    if setting.nodes["transient"] == 0 or not setting.lifetime.evicts:
        return 0.0
    within = setting.lifetime.cdf_at(np.array([run_s * setting.trace_s_per_run_s]))
    return setting.nodes["transient"] * float(within[0])


def eviction_times(setting: Setting, length: float) -> tuple[np.ndarray, np.ndarray]:
    """The eviction's time within ``[0, length]`` run seconds: cell midpoints and the chance of
    each, a node's lifetime ending there given it ends within (uniform where none does)."""
    edges = np.linspace(0.0, length, EVICTION_TIMES + 1)
    weights = np.diff(setting.lifetime.cdf_at(edges * setting.trace_s_per_run_s))
    total = float(weights.sum())
    if total <= 0:
        weights, total = np.ones(EVICTION_TIMES), float(EVICTION_TIMES)
    return (edges[:-1] + edges[1:]) / 2, weights / total


def per_eviction_s(plan: JobPlan, line: Timeline, setting: Setting) -> float:
    """An eviction's loss, averaged over its time (``eviction_times``)."""
    length = line.length_s
    if length <= 0:
        return 0.0
    times, weights = eviction_times(setting, length)
    losses = [loss_at(plan, line, float(t), setting.detection_s) for t in times]
    return float(np.dot(weights, losses))


def loss_at(plan: JobPlan, line: Timeline, t: float, detection_s: float) -> float:
    """The job's delay when a transient node is evicted at ``t`` run seconds: its running task
    of a stage starts again once the loss is heard and its lost inputs are rebuilt (then its
    copy); a finished output it held, not safe elsewhere and read after ``t``, is rebuilt; a
    stage not yet begun waits for its parents as they now are. Each loss weighs by the chance
    ``exposed`` that the node had it; an output whose copies are in flight is lost by the
    share of them not landed (the largest such share at ``t``, outside the critical path's max)."""
    share = max((_in_flight(plan, line, s, t) for s in range(len(line.stages))), default=0.0)
    kept = _delay(plan, line, t, detection_s, False) if share < 1 else 0.0
    lost = _delay(plan, line, t, detection_s, True) if share > 0 else 0.0
    return (1 - share) * kept + share * lost


def _in_flight(plan: JobPlan, line: Timeline, s: int, t: float) -> float:
    """The share of a finished stage's copies not landed at ``t`` (0 unless copied, exposed
    and still to be read)."""
    safe, end = line.safe_s[s], line.stages[s].end_s
    if (
        math.isinf(safe)
        or not end <= t < safe
        or not line.exposed[s]
        or not _read_after(plan, line.stages, s, t)
    ):
        return 0.0
    return (safe - t) / (safe - end)


def _delay(plan: JobPlan, line: Timeline, t: float, detection_s: float, in_flight_lost: bool) -> float:
    """``loss_at``'s critical path, the outputs whose copies are in flight lost or not."""
    ends: list[float] = []
    ready: list[float] = []
    for s, (e, stage) in enumerate(zip(line.stages, plan.stages, strict=True)):
        if e.start_s > t:
            at = max(
                (ends[d.stage] if d.kind == "narrow" else ready[d.stage] for d in stage.deps), default=0.0
            )
            end = e.end_s + max(0.0, at - e.start_s)
            there = line.available_s[s] + end - e.end_s
        elif t < e.end_s:
            again = t + detection_s + _lost_inputs(line, stage) + e.task_s
            end = e.end_s + line.exposed[s] * max(0.0, again - e.end_s)
            at = max((ready[d.stage] for d in stage.deps if d.kind != "narrow"), default=0.0)
            end = max(end, at + e.task_s)  # its tasks run again on a rebuilt input
            there = max(line.available_s[s], end + line.copy_s[s])
        else:
            end, there = e.end_s, _rebuilt(plan, line, s, t, detection_s, in_flight_lost)
        ends.append(end)
        ready.append(there)
    return max(ends, default=0.0) + line.extra_s - line.length_s


def _lost_inputs(line: Timeline, stage: StagePlan) -> float:
    """The longest rebuild of a stage's inputs that the evicted node held and that survive
    nowhere, by the chance it held each."""
    return max(
        (
            line.exposed[d.stage] * line.rebuild_s[d.stage]
            for d in stage.deps
            if math.isinf(line.safe_s[d.stage])
        ),
        default=0.0,
    )


def _rebuilt(
    plan: JobPlan, line: Timeline, s: int, t: float, detection_s: float, in_flight_lost: bool
) -> float:
    """When a stage finished by ``t`` has its output there for its readers after the eviction:
    rebuilt (then copied) where the node held an output not safe elsewhere (never, or its copies
    in flight and ``in_flight_lost``) that is still to be read."""
    available, safe = line.available_s[s], line.safe_s[s]
    kept = t >= safe or (not math.isinf(safe) and not in_flight_lost)
    if plan.stages[s].final or kept or not _read_after(plan, line.stages, s, t):
        return available
    rebuilt = t + detection_s + line.rebuild_s[s] + line.copy_s[s]
    return available + line.exposed[s] * max(0.0, rebuilt - available)


def _read_after(plan: JobPlan, found: Sequence[StageEstimate], stage: int, t: float) -> bool:
    """Whether a stage reading ``stage`` ends after ``t``: a task reads its input blocks one
    after another while it computes (the simulator's ``fetch_overlap``, the agents' streamed
    segments), so a reader still running fails on a lost one and runs again."""
    return any(
        found[c].end_s > t for c, st in enumerate(plan.stages) if any(d.stage == stage for d in st.deps)
    )


def estimates(
    plan: JobPlan,
    setting: Setting,
    slots: int | Sequence[int],
    reads_back: frozenset[int] = frozenset(),
    ready_of: ReadyOf | None = None,
) -> list[StageEstimate]:
    """The job's stages at the simulator's rates, on ``slots`` (one count, or one per stage);
    the stages ``reads_back`` read their parents' copies from the reserved nodes, their
    tasks of a wave sharing those NICs."""
    nic = min(setting.nic_mb_s.values())
    reserved_mb_s = setting.nic_mb_s["reserved"] * setting.nodes["reserved"]
    number = {id(stage): s for s, stage in enumerate(plan.stages)}

    def rate_of(stage: StagePlan) -> StageRate:
        launch = setting.simulation.launch_overhead
        if stage.op != DAG_OP:
            op = setting.simulation.stage_op(stage.op, stage.final)
            return StageRate(launch + op.fixed_s, op.s_per_mb, op.output_ratio)
        meta = stage.shared_params["dag"]
        op = setting.simulation.dag_op(meta)
        network = 1 / nic if stage.deps else 0.0
        s = number[id(stage)]
        if s in reads_back and reserved_mb_s:
            wave = min(stage.tasks, slots if isinstance(slots, int) else slots[s])
            network = max(network, wave / reserved_mb_s)
        return StageRate(
            launch + op.fixed_s, op.s_per_mb + network, op.output_ratio, source_mb=meta["cost"]["source_mb"]
        )

    return stage_estimates(plan, rate_of, slots, ready_of)


def rebuilds(
    plan: JobPlan, found: Sequence[StageEstimate], exposed: Sequence[float], safe: Sequence[float]
) -> list[float]:
    """Each stage's rebuild by lineage (``Timeline.rebuild_s``)."""
    out: list[float] = []
    for e, stage in zip(found, plan.stages, strict=True):
        lost = (exposed[d.stage] * out[d.stage] for d in stage.deps if math.isinf(safe[d.stage]))
        out.append(0.0 if stage.final else e.task_s + max(lost, default=0.0))
    return out


def exposure(plan: JobPlan, setting: Setting, transient: Sequence[bool]) -> list[float]:
    """The chance that a given transient node ran a task of each stage: tasks spread one a
    node, transient nodes first (none of a stage run on reserved nodes)."""
    nodes = max(1, setting.nodes["transient"])
    return [min(1.0, st.tasks / nodes) if on else 0.0 for st, on in zip(plan.stages, transient, strict=True)]


def write_s(setting: Setting, found: Sequence[StageEstimate], stages: Sequence[int]) -> float:
    """The outputs of ``stages`` written into the reserved nodes, through their NICs."""
    reserved_mb_s = setting.nic_mb_s["reserved"] * setting.nodes["reserved"]
    return sum(found[s].out_mb for s in stages) / reserved_mb_s if reserved_mb_s else 0.0


class Copies:
    """spark-checkpoint's copies into the reserved nodes, as the simulator pushes them: each
    producer's upload (its agent's CPU) beside the link time, the copies booked one after
    another on the reserved nodes' NICs taken together, ``push_overhead``, then each
    receiver's agent (one core) checking and committing its share."""

    def __init__(self, plan: JobPlan, setting: Setting, copied: frozenset[int]) -> None:
        self.plan, self.setting, self.copied = plan, setting, copied
        self.landed: dict[int, float] = {}
        self.free_s = 0.0
        """When the reserved NICs are next free."""

    def land(self, stage: int, e: StageEstimate) -> float:
        """When the stage's copies are all in (booked on first asking)."""
        if stage not in self.landed:
            sim, reserved = self.setting.simulation, max(1, self.setting.nodes["reserved"])
            self.free_s = max(self.free_s, e.end_s) + e.out_mb / (
                reserved * self.setting.nic_mb_s["reserved"]
            )
            uploaded = e.end_s + e.out_mb / max(1, e.tasks) * sim.copy_send_cpu_s_per_mb
            through = max(self.free_s + sim.push_overhead, uploaded)
            self.landed[stage] = through + e.out_mb / reserved * sim.copy_receive_cpu_s_per_mb
        return self.landed[stage]

    def one_s(self, e: StageEstimate) -> float:
        """One task's copy alone (a relaunched or rebuilt task's), the NICs otherwise idle."""
        sim, reserved_mb_s = self.setting.simulation, self.setting.nic_mb_s["reserved"]
        mb = e.out_mb / max(1, e.tasks)
        return (
            sim.push_overhead
            + max(mb / reserved_mb_s, mb * sim.copy_send_cpu_s_per_mb)
            + mb * sim.copy_receive_cpu_s_per_mb
        )

    def ready_of(self, number: int, found: list[StageEstimate]) -> float:
        """A reader waits for each copied parent's copies (a narrow parent: its end)."""
        deps = self.plan.stages[number].deps
        return max(
            (
                self.land(d.stage, found[d.stage])
                if d.kind != "narrow" and d.stage in self.copied
                else found[d.stage].end_s
                for d in deps
            ),
            default=0.0,
        )


def _spark(plan: JobPlan, setting: Setting) -> Timeline:
    found = estimates(plan, setting, setting.slots["reserved"] + setting.slots["transient"])
    exposed = exposure(plan, setting, [True] * len(found))
    safe = [math.inf] * len(found)
    ends = [e.end_s for e in found]
    return Timeline(found, ends, exposed, safe, rebuilds(plan, found, exposed, safe), [0.0] * len(found))


def _checkpoint(plan: JobPlan, setting: Setting) -> Timeline:
    copied = frozenset(s for s in range(len(plan.stages)) if wide_consumers(plan, s))
    copies = Copies(plan, setting, copied)
    readers = (
        frozenset(c for s in copied for c in wide_consumers(plan, s)) if setting.fetch_back else frozenset()
    )
    ready_of = copies.ready_of if setting.fetch_back else None
    found = estimates(plan, setting, setting.slots["transient"], readers, ready_of)
    safe = [copies.land(s, e) if s in copied else math.inf for s, e in enumerate(found)]
    fetched = setting.fetch_back
    available = [safe[s] if fetched and s in copied else e.end_s for s, e in enumerate(found)]
    exposed = exposure(plan, setting, [True] * len(found))
    one = [copies.one_s(e) if s in copied else 0.0 for s, e in enumerate(found)]
    return Timeline(found, available, exposed, safe, rebuilds(plan, found, exposed, safe), one)


def _pado(plan: JobPlan, setting: Setting) -> Timeline:
    dag = logical_dag(plan)
    classes = stage_classes(compile_pado(dag), plan) if dag is not None else ["transient"] * len(plan.stages)
    found = estimates(plan, setting, [setting.slots[c] for c in classes])
    pushed = pushed_stages(plan, classes)
    pushes = Copies(plan, setting, pushed)
    transient = [c == "transient" for c in classes]
    exposed = exposure(plan, setting, transient)
    safe = [
        pushes.land(s, e) if s in pushed else (math.inf if on else e.end_s)
        for s, (e, on) in enumerate(zip(found, transient, strict=True))
    ]
    extra = write_s(setting, found, sorted(pushed))
    ends = [e.end_s for e in found]
    one = [pushes.one_s(e) if s in pushed else 0.0 for s, e in enumerate(found)]
    return Timeline(found, ends, exposed, safe, rebuilds(plan, found, exposed, safe), one, extra)


TIMELINES = {"spark": _spark, "spark-checkpoint": _checkpoint, "pado": _pado}
