"""Firmament's cost models: what each arc of the flow network costs (docs/firmament.md).

A cost model prices the arcs of :mod:`master.schedulers.firmament.network`: a task's arc to
its job's unscheduled aggregator (the cost of waiting), to its request class's cluster
aggregator, its preference arcs (to machines and zones holding its input), and the arcs
from an aggregator to each machine. Costs are floats in the model's own unit; the network
scales them to the solver's integers.

The constants are those of camsas/firmament ``src/scheduling/flow/``:

- ``trivial_cost_model.cc``: unscheduled 5, cluster aggregator 2, everything else 0.
- ``octopus_cost_model.cc``: unscheduled 1,000,000, cluster aggregator 0, an arc into a
  machine costs the tasks already running on it (``ResourceNodeToResourceNodeCost``).
- ``quincy_cost_model.cc``: waiting costs 0.5 per second unscheduled
  (``quincy_wait_time_factor``); moving input costs 1 per GB within a rack
  (``quincy_tor_transfer_cost``) and 2 per GB across racks (``quincy_core_transfer_cost``);
  a machine or rack holding at least 10% of the task's input gets a preference arc
  (``quincy_prefered_machine_data_fraction``, ``quincy_prefered_rack_data_fraction``).
  The testbed's zones are Quincy's racks.

``transient`` is ours: Quincy's, plus on the arc into a machine the work its eviction is
expected to lose (1 per second of work lost): P(evicted before the task ends | the node's
lifetime model and age) x the task's expected duration, and, for a task whose output a later
stage reads (a map's, read by its reduces), P(evicted after it ends but before those readers
have read its output) x the work that loses (``PendingTask.expected_run_s``, ``exposed_s``
and ``loss_s``, the core's estimates: ``master.core.exposure``). A node with a rebalance recommendation counts
as certain to go (P = 1); a node under an eviction notice is draining and gets no arc at all
(nor does it under any model).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from master.schedulers.firmament.machines import MachineTable, Rack
from testbed.api.policy import NodeView, PendingTask
from testbed.chaosmodels.lifetimes import LifetimeModel

GB = 1024**3

TRIVIAL_UNSCHEDULED = 5.0
TRIVIAL_CLUSTER = 2.0
OCTOPUS_UNSCHEDULED = 1_000_000.0
QUINCY_WAIT_FACTOR = 0.5
QUINCY_PREFERENCE_FRACTION = 0.1
QUINCY_TOR_TRANSFER_COST = 1.0
QUINCY_CORE_TRANSFER_COST = 2.0
DURATION_BUCKETS_PER_OCTAVE = 2
"""The transient model groups tasks whose expected durations are within 2^(1/2) of each other
(each group a request class of its own: fewer groups, a smaller network)."""


@dataclass(frozen=True, slots=True)
class TaskInput:
    """Where a task's input lives: its size and the bytes each node holds.

    A task has one where its job replicates its input (``jobs[].input_replication``,
    ``task_input``); any other reads its source, and gets no preference arcs."""

    size_bytes: int
    on_node: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Preferences:
    """A task's preference arcs: machine id -> cost, zone aggregator -> cost."""

    machines: Mapping[str, float] = field(default_factory=dict)
    racks: Mapping[Rack, float] = field(default_factory=dict)


NO_PREFERENCES = Preferences()
InputSource = Callable[[PendingTask], TaskInput | None]


def task_input(task: PendingTask) -> TaskInput | None:
    """The task's input as its snapshot shows it: where its job replicates its input
    (``jobs[].input_replication``), its split's bytes and the holders' bytes."""
    if task.input_bytes <= 0:
        return None
    return TaskInput(task.input_bytes, dict(task.input_on_node))


class CostModel:
    """The trivial model's costs; the other models override what they price differently."""

    name = "trivial"
    prices_preferred_machines = False
    """Whether a preference arc into a machine costs ``machine_costs`` too (the transient
    model's risk); the others price a machine at 0, or have no preference arcs (Octopus)."""
    reads_exposure = False
    """Whether it reads ``PendingTask.expected_run_s``, ``exposed_s`` and ``loss_s`` (the
    transient model's risk): the scheduler asks the master for them only then."""

    def request_key(self, task: PendingTask) -> object:
        """What besides memory, classes and exclusions sets a task's request class (the
        tasks that share one cluster aggregator must cost the same on its machine arcs)."""
        return None

    def reads_racks(self, task: PendingTask) -> bool:
        """Whether the task's cluster cost or preferences depend on the nodes' racks (a node
        joining, leaving or draining then prices it again)."""
        return False

    def unscheduled_costs(self, waited_s: np.ndarray) -> np.ndarray:
        """The cost of waiting of tasks that waited ``waited_s`` each (vectorised: it changes
        with time, so every round prices it again)."""
        return np.full(len(waited_s), TRIVIAL_UNSCHEDULED)

    def cluster_cost(self, task: PendingTask, racks: Mapping[str, Rack]) -> float:
        return TRIVIAL_CLUSTER

    def preferences(self, task: PendingTask, racks: Mapping[str, Rack]) -> Preferences:
        """Preference arcs. Trivial's code draws random machines (``num_pref_arcs_task_to_res``);
        ours are the recovery strategy's preferred nodes (where the task's input is cached)."""
        return Preferences(dict.fromkeys(task.preferred_nodes, 0.0))

    def machine_costs(self, request: object, machines: MachineTable, positions: np.ndarray) -> np.ndarray:
        """The cost of the arc from a request class's aggregator into each machine of
        ``machines`` at ``positions`` (the round's table: ``machines.memo`` keeps what the
        round's request classes share)."""
        return np.zeros(len(positions))


class OctopusCostModel(CostModel):
    """Load spreading: a machine costs the tasks already running on it."""

    name = "octopus"

    def unscheduled_costs(self, waited_s: np.ndarray) -> np.ndarray:
        return np.full(len(waited_s), OCTOPUS_UNSCHEDULED)

    def cluster_cost(self, task: PendingTask, racks: Mapping[str, Rack]) -> float:
        return 0.0

    def preferences(self, task: PendingTask, racks: Mapping[str, Rack]) -> Preferences:
        return NO_PREFERENCES  # GetTaskPreferenceArcs: "Not used in Octopus cost model"

    def machine_costs(self, request: object, machines: MachineTable, positions: np.ndarray) -> np.ndarray:
        return machines.running[positions].astype(float)


class QuincyCostModel(CostModel):
    """Quincy (SOSP'09) as Firmament's code has it: waiting against moving input."""

    name = "quincy"

    def __init__(
        self,
        wait_factor: float = QUINCY_WAIT_FACTOR,
        preference_threshold: float = QUINCY_PREFERENCE_FRACTION,
        inputs: InputSource = task_input,
    ) -> None:
        self.wait_factor = wait_factor
        self.threshold = preference_threshold
        self.inputs = inputs
        self._sized: tuple[Mapping[str, Rack] | None, dict[Rack, int]] = (None, {})

    def reads_racks(self, task: PendingTask) -> bool:
        return self.inputs(task) is not None

    def unscheduled_costs(self, waited_s: np.ndarray) -> np.ndarray:
        return waited_s * self.wait_factor

    def cluster_cost(self, task: PendingTask, racks: Mapping[str, Rack]) -> float:
        found = self.inputs(task)
        if found is None:
            return 0.0
        return self._worst_cluster_cost(found, racks)

    def preferences(self, task: PendingTask, racks: Mapping[str, Rack]) -> Preferences:
        found = self.inputs(task)
        if found is None or found.size_bytes <= 0:
            return NO_PREFERENCES
        on_rack = _data_on_racks(found, racks)
        least = found.size_bytes * self.threshold
        machines = {
            node_id: _transfer_cost(found.size_bytes - held, on_rack[racks[node_id]] - held)
            for node_id, held in found.on_node.items()
            if node_id in racks and held >= least
        }
        preferred_racks = {
            rack: self._rack_cost(found, rack, held, racks) for rack, held in on_rack.items() if held >= least
        }
        return Preferences(machines, preferred_racks)

    def _rack_cost(self, found: TaskInput, rack: Rack, on_rack: int, racks: Mapping[str, Rack]) -> float:
        """The cost to the rack's worst machine (``ComputeTransferCostToRack``): a holder's, or
        that of a machine holding none of the input, where the rack has one."""
        held = [h for node_id, h in found.on_node.items() if racks.get(node_id) == rack]
        costs = [_transfer_cost(found.size_bytes - h, on_rack - h) for h in held]
        if self._rack_sizes(racks).get(rack, 0) > len(held):
            costs.append(_transfer_cost(found.size_bytes, on_rack))
        return max(costs, default=0.0)

    def _rack_sizes(self, racks: Mapping[str, Rack]) -> dict[Rack, int]:
        """Machines per rack, counted once per round (a round hands every task the same racks)."""
        if racks is not self._sized[0]:
            sizes: dict[Rack, int] = {}
            for rack in racks.values():
                sizes[rack] = sizes.get(rack, 0) + 1
            self._sized = (racks, sizes)
        return self._sized[1]

    def _worst_cluster_cost(self, found: TaskInput, racks: Mapping[str, Rack]) -> float:
        """The cluster aggregator's cost: the worst rack's, or all input across the core when
        some rack holds none of it (the code multiplies bytes there; we take GB, as elsewhere)."""
        on_rack = _data_on_racks(found, racks)
        worst = 0.0
        if len(on_rack) < len(set(racks.values())):
            worst = QUINCY_CORE_TRANSFER_COST * found.size_bytes / GB
        least = found.size_bytes * self.threshold
        for rack, held in on_rack.items():
            if held >= least:
                worst = max(worst, self._rack_cost(found, rack, held, racks))
        return worst


@dataclass(frozen=True, slots=True)
class TransientRequest:
    """What a transient request class's arcs into the machines depend on (each to a half
    octave: ``duration_bucket``)."""

    duration_s: float
    """The task's expected run (``expected_run``)."""
    exposed_s: float = 0.0
    """Until the later tasks reading its output have read it (``PendingTask.exposed_s``, at least
    ``duration_s``); 0: no later stage reads it."""
    loss_s: float = 0.0
    """The work its output's loss costs (``PendingTask.loss_s``)."""


class TransientCostModel(QuincyCostModel):
    """Quincy's, plus the work an arc's machine is expected to lose to its eviction: the task's
    own run, and the output a later stage has not read yet.

    A node evicted at T (seconds from now) loses the task's run if T < d (its expected
    duration: ``expected_run``), and its output if d <= T < w, while its readers have not read it (w, the
    exposure: ``PendingTask.exposed_s``, at least d): the cost is P(T < d) x d + P(d <= T < w)
    x l, with l the work that costs (``PendingTask.loss_s``). A task whose output no later stage
    reads (w = 0) costs P(T < d) x d alone."""

    name = "transient"
    prices_preferred_machines = True
    reads_exposure = True

    def __init__(self, risk: EvictionRisk, **quincy: float | InputSource) -> None:
        super().__init__(**quincy)  # type: ignore[arg-type]
        self.risk = risk

    def request_key(self, task: PendingTask) -> object:
        duration = duration_bucket(expected_run(task))
        if task.exposed_s <= 0 or task.loss_s <= 0:
            return TransientRequest(duration)
        exposed = max(duration, duration_bucket(task.exposed_s))
        return TransientRequest(duration, exposed, duration_bucket(task.loss_s))

    def machine_costs(self, request: object, machines: MachineTable, positions: np.ndarray) -> np.ndarray:
        """The risks are computed once per round and window over every machine (the request
        classes of one window and other memory sizes share them)."""
        assert isinstance(request, TransientRequest)
        during = self._risk(machines, request.duration_s)[positions]
        cost = during * request.duration_s
        if request.exposed_s > request.duration_s:
            after = self._risk(machines, request.exposed_s)[positions] - during
            cost = cost + np.maximum(0.0, after) * request.loss_s
        return cost

    def _risk(self, machines: MachineTable, window_s: float) -> np.ndarray:
        """P(evicted within ``window_s``) of every machine, memoised for the round."""
        key = ("transient risk", window_s)
        risk = machines.memo.get(key)
        if risk is None:
            risk = machines.memo[key] = self.risk.over(machines, window_s)
        return risk


def expected_run(task: PendingTask) -> float:
    """The task's own run as the transient model prices it: the core's estimate
    (``PendingTask.expected_run_s``: its stage's observed mean, else its prior, or the job's own
    estimate), else, where the view has none, the job's ``est_duration_s``."""
    return task.expected_run_s if task.expected_run_s > 0 else task.est_duration_s


def duration_bucket(seconds: float) -> float:
    """``seconds`` rounded to a quarter octave (0 stays 0)."""
    if seconds <= 0 or not math.isfinite(seconds):
        return max(0.0, seconds) if math.isfinite(seconds) else 0.0
    steps = round(DURATION_BUCKETS_PER_OCTAVE * math.log2(seconds))
    return 2.0 ** (steps / DURATION_BUCKETS_PER_OCTAVE)


class EvictionRisk:
    """P(a node is evicted before a task of some duration ends there), from the scenario's
    lifetime models (per node class, and per zone where a zone has its own) and the node's age.

    ``wall_per_trace``: the snapshot's clock runs in wall seconds, the lifetime models in
    trace seconds (``Scenario.wall_per_trace``)."""

    def __init__(self, models: Mapping[Rack, LifetimeModel], wall_per_trace: float = 1.0) -> None:
        self.models = dict(models)
        self.wall_per_trace = wall_per_trace

    def probability(self, machines: list[NodeView], now: float, duration_s: float) -> np.ndarray:
        """For each of ``machines``, P(evicted before a task of ``duration_s`` ends there)."""
        return self.over(MachineTable.of(machines, now), duration_s)

    def over(self, machines: MachineTable, duration_s: float) -> np.ndarray:
        """``probability`` over a round's table, by rack (node class and zone)."""
        risk = np.zeros(len(machines))
        ages = np.maximum(0.0, machines.now - machines.launched) / self.wall_per_trace
        for code, (node_class, zone) in enumerate(machines.racks):
            model = self.models.get((node_class, zone)) or self.models.get((node_class, None))
            if model is None or not model.evicts:
                continue
            positions = np.flatnonzero(machines.rack == code)
            risk[positions] = _conditional(model, ages[positions], duration_s / self.wall_per_trace)
        risk[machines.rebalance] = 1.0
        return risk


def _conditional(model: LifetimeModel, ages: np.ndarray, duration: float) -> np.ndarray:
    """P(lifetime <= age + duration | lifetime > age), elementwise; 1 where it cannot have lived."""
    alive = 1.0 - model.cdf_at(ages)
    ending = model.cdf_at(ages + duration) - model.cdf_at(ages)
    with np.errstate(divide="ignore", invalid="ignore"):
        risk = np.where(alive > 1e-12, ending / np.where(alive > 1e-12, alive, 1.0), 1.0)
    return np.clip(risk, 0.0, 1.0)


def _data_on_racks(found: TaskInput, racks: Mapping[str, Rack]) -> dict[Rack, int]:
    """Bytes of the input in each rack (``ComputeDataOnRacks``; a replica counts once per holder)."""
    on_rack: dict[Rack, int] = {}
    for node_id, held in found.on_node.items():
        rack = racks.get(node_id)
        if rack is not None:
            on_rack[rack] = on_rack.get(rack, 0) + held
    return on_rack


def _transfer_cost(remote: int, on_rack: int) -> float:
    """``ComputeTransferCostToMachine``: bytes within the rack over the ToR switch, the rest
    across the core, per GB."""
    return (QUINCY_TOR_TRANSFER_COST * on_rack + QUINCY_CORE_TRANSFER_COST * (remote - on_rack)) / GB


COST_MODELS = ("trivial", "octopus", "quincy", "transient")
