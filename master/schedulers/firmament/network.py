"""Firmament's flow network, kept from round to round, and the placements read back from a flow.

The shape is the dissertation's (Gog 2017, section 2.3.3.2, Figs. 2.17-2.18) with the node
types of camsas/firmament ``src/scheduling/flow/flow_node_type.proto``::

    task T (supply 1) --> its job's unscheduled aggregator U --> sink S
                      --> its request class's cluster aggregator X
                            --> a node class aggregator C (reserved, transient)
                                  --> a zone aggregator Z (where the scenario gives zones)
                                        --> machine M (capacity: its free slots) --> S
                      --> preference arcs: straight to a machine M, or to a zone Z

A request class is Firmament's task equivalence class: the tasks of one memory size, node
classes allowed and nodes excluded (and, for the transient cost model, expected duration).
Memory is not a flow dimension (section 5.5): a request class's aggregators reach only the
machines where its memory fits, with as many units as fit there by slots and memory.
Running tasks are pinned (``--preemption=false``): their running arcs would carry a forced
unit each into their machine, so the machine's arc to the sink has only its free slots.
Under preemption (``running``) each running task given is a task node of its own with its
running arc, an arc to its job's unscheduled aggregator and one to its request class's
cluster aggregator (:func:`_add_running`), and its slot counts as its machine's (the
machine's arc to the sink has all its slots, ``CapacityFromResNodeToParent`` in
``cost_model_utils.cc``). Its memory does not: the flow cannot say whether a task that may
leave does leave, so a request class reaches a machine only where its memory fits beside
every task running there; a preemption frees slots, never memory, for the same round.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from master.schedulers.firmament.costs import CostModel
from master.schedulers.firmament.machines import MachineColumns, MachineTable, Rack
from testbed.api.policy import ClusterSnapshot, PendingTask, RunningTask

COST_SCALE = 100
"""Solver cost units per cost model unit (the solver takes integers): 0.01 resolution."""
COST_CEILING = 2**62
"""Costs are clamped here before the solver sees them (it reports a range it cannot take)."""
UNSCHEDULED_TIE_BREAK = 1
"""Solver units added to waiting: where placing costs exactly as much, the task is placed
(the code's rule: "the cost of leaving a task unscheduled should be higher than the cost of
scheduling it", quincy_cost_model.cc)."""

TASK, UNSCHEDULED, CLUSTER, CLASS, ZONE, MACHINE, SINK = range(7)
LEVEL = {TASK: 0, UNSCHEDULED: 1, CLUSTER: 1, CLASS: 2, ZONE: 3, MACHINE: 4, SINK: 5}
"""Every arc goes from a lower level to a higher one: the network is layered."""
KIND_NAMES = ("task", "unscheduled", "cluster", "class", "zone", "machine", "sink")


@dataclass
class FlowNetwork:
    """Nodes (a kind, a label and a supply each) and arcs (tail, head, capacity, cost)."""

    kinds: list[int] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    supplies: list[int] = field(default_factory=list)
    tails: list[int] = field(default_factory=list)
    heads: list[int] = field(default_factory=list)
    capacities: list[int] = field(default_factory=list)
    costs: list[int] = field(default_factory=list)
    tasks: dict[int, PendingTask] = field(default_factory=dict)
    running: dict[int, str] = field(default_factory=dict)
    """Under preemption: each running task's node -> the machine it runs on."""
    shift: dict[int, float] = field(default_factory=dict)
    """Under preemption: what each running task's arcs were raised by (``_add_running``)."""

    def node(self, kind: int, label: str, supply: int = 0) -> int:
        self.kinds.append(kind)
        self.labels.append(label)
        self.supplies.append(supply)
        return len(self.kinds) - 1

    def arc(self, tail: int, head: int, capacity: int, cost: float, extra: int = 0) -> None:
        """An arc of ``cost`` in the cost model's unit (plus ``extra`` solver units)."""
        self.tails.append(tail)
        self.heads.append(head)
        self.capacities.append(capacity)
        self.costs.append(min(COST_CEILING, scaled(cost) + extra))

    def raw_arc(self, tail: int, head: int, capacity: int, cost: int) -> None:
        """An arc of ``cost`` solver units (already scaled and clamped)."""
        self.tails.append(tail)
        self.heads.append(head)
        self.capacities.append(capacity)
        self.costs.append(cost)

    @property
    def num_nodes(self) -> int:
        return len(self.kinds)

    @property
    def num_arcs(self) -> int:
        return len(self.tails)


def scaled(cost: float) -> int:
    return min(COST_CEILING, max(0, round(cost * COST_SCALE)))


def scaled_array(costs: np.ndarray) -> np.ndarray:
    """``scaled`` of each (numpy's rounding, as Python's, is half to even)."""
    return np.clip(np.rint(costs * COST_SCALE), 0, COST_CEILING).astype(np.int64)


RequestKey = tuple[int, frozenset[str], frozenset[str], object]


def request_key(task: PendingTask, model: CostModel) -> RequestKey:
    return (task.ideal_memory_mb, task.allowed_classes, task.excluded_nodes, model.request_key(task))


@dataclass
class _Request:
    """One request class's part of the network: its cluster aggregator, zone aggregators
    and the machines it reaches (a mask over the round's ``MachineTable``)."""

    model_key: object = None
    """The cost model's part of its key (``CostModel.request_key``), shared by its tasks."""
    cluster: int | None = None
    zones: dict[Rack, int] = field(default_factory=dict)
    fits: np.ndarray | None = None
    costs: np.ndarray | None = None
    """What its arc into each machine it fits costs (model units; by the table's positions)."""


class MaintainedNetwork:
    """The network kept from round to round (Firmament's flow graph manager,
    ``flow_graph_manager.cc``): a round takes the snapshot's difference from the last one
    and hands the solver the network a fresh build of the snapshot gives, arc for arc.

    What a round keeps: every node's row of the machine table (:class:`MachineColumns`,
    recomputed only for the views it has not seen: a node joined, or its tasks, status or
    marks changed), the racks the cost models read (a new mapping only when a node joins,
    leaves or drains), and each pending task's request class, cluster cost and preference
    arcs (priced again only for a new view of the task, or, for a task whose input the cost
    model places on racks, when the racks change). What it prices every round: the cost of
    waiting (it grows with the time waited; one numpy expression over the tasks), the
    request classes' arcs into the machines (numpy over the table: free slots change with
    every placement and end, and the transient model's risk with every node's age), and,
    under preemption, the running tasks. The layout (node and arc order) is the fresh
    build's, so the solver's choice among equal optima is too."""

    def __init__(self, model: CostModel, preemption: bool = False) -> None:
        self.model = model
        self.preemption = preemption
        """Running tasks are in the network (``--preemption=true``), priced every round."""
        self.columns = MachineColumns()
        self._priced: dict[int, _Priced] = {}
        """Last round's pending tasks' prices, by the id of the task's view (held in it)."""

    def update(
        self, snapshot: ClusterSnapshot, waited: Mapping[str, float], tasks: list[PendingTask]
    ) -> FlowNetwork:
        """The round's network: ``tasks`` (pending, in queue order), ``waited`` each one's wait."""
        model = self.model
        self.columns.update(snapshot.nodes)
        table = self.columns.table(snapshot.now, self.preemption)
        racks = self.columns.placed
        net = FlowNetwork()
        sink = net.node(SINK, "sink")
        base = _machines(net, table, sink)
        requests: dict[RequestKey, _Request] = {}
        unscheduled: dict[str, int] = {}
        count: dict[str, int] = {}

        def request_of(key: RequestKey) -> _Request:
            request = requests.get(key)
            if request is None:
                request = requests[key] = _request(net, key, model, table, base)
            return request

        def waiting(job_id: str) -> int:
            """Its job's unscheduled aggregator (made on first use), counting one more task."""
            job_node = unscheduled.get(job_id)
            if job_node is None:
                job_node = unscheduled[job_id] = net.node(UNSCHEDULED, f"U {job_id}")
            count[job_id] = count.get(job_id, 0) + 1
            return job_node

        waits = np.fromiter((waited.get(t.task_id, 0.0) for t in tasks), dtype=float, count=len(tasks))
        waiting_costs = scaled_array(model.unscheduled_costs(waits)) + UNSCHEDULED_TIE_BREAK
        priced: dict[int, _Priced] = {}
        for task, wait in zip(tasks, np.minimum(COST_CEILING, waiting_costs).tolist(), strict=True):
            entry = priced[id(task)] = self._price(task, racks)
            index = _add_task(net, entry, request_of(entry.key), model.prices_preferred_machines, table, base)
            net.raw_arc(index, waiting(task.job_id), 1, wait)
        self._priced = priced
        running = self._running(snapshot)
        for view, node_id in running:
            task = as_pending(view)
            request = request_of(request_key(task, model))
            ran = snapshot.now - view.started
            index = _add_running(net, task, node_id, ran, model, request, racks, table, base)
            shift = net.shift[index]
            waiting_cost = float(model.unscheduled_costs(np.array([shift]))[0])
            net.arc(index, waiting(task.job_id), 1, waiting_cost + shift)
        for job_id, node in unscheduled.items():
            net.arc(node, sink, count[job_id], 0.0)
        net.supplies[sink] = -len(tasks) - len(running)
        return net

    def _running(self, snapshot: ClusterSnapshot) -> list[tuple[RunningTask, str]]:
        """Under preemption, the tasks running on nodes not draining, each with its node."""
        if not self.preemption:
            return []
        return [(t, n.node_id) for n in snapshot.nodes if not n.draining for t in n.running]

    def _price(self, task: PendingTask, racks: Mapping[str, Rack]) -> _Priced:
        """The task's prices: last round's, where its view and (if it reads them) the racks
        are the same, else priced now. An entry holds its task's view, so no other view
        can have its id while it is kept."""
        entry = self._priced.get(id(task))
        if entry is not None and (entry.racks is None or entry.racks is racks):
            return entry
        model = self.model
        preferred = model.preferences(task, racks)
        return _Priced(
            task,
            request_key(task, model),
            scaled(model.cluster_cost(task, racks)),
            tuple(preferred.machines.items()),
            tuple((rack, scaled(cost)) for rack, cost in preferred.racks.items()),
            racks if model.reads_racks(task) else None,
        )


def build(
    snapshot: ClusterSnapshot,
    model: CostModel,
    waited: Mapping[str, float],
    tasks: list[PendingTask],
    preemption: bool = False,
) -> FlowNetwork:
    """A fresh build: the network of a snapshot, maintained from nothing."""
    return MaintainedNetwork(model, preemption).update(snapshot, waited, tasks)


@dataclass(frozen=True, slots=True)
class _Priced:
    """What a pending task's arcs cost, as far as it depends on the task alone (and on the
    racks, where ``racks`` is the mapping it was priced against)."""

    task: PendingTask
    key: RequestKey
    cluster: int
    """Its arc to its request class's cluster aggregator (solver units)."""
    machines: tuple[tuple[str, float], ...]
    """Its preference arcs into machines: node id, cost (model units, before the machine's own)."""
    zones: tuple[tuple[Rack, int], ...]
    """Its preference arcs into zone aggregators: rack, cost (solver units)."""
    racks: Mapping[str, Rack] | None


def as_pending(view: RunningTask) -> PendingTask:
    """A running task as the request it would be pending (its memory; its expected duration)."""
    duration = view.expected_end - view.started
    return PendingTask(view.task_id, view.job_id, 0, 0, view.memory_mb, duration if duration > 0 else 0.0)


def _add_running(
    net: FlowNetwork,
    task: PendingTask,
    node_id: str,
    ran_s: float,
    model: CostModel,
    request: _Request,
    racks: Mapping[str, Rack],
    table: MachineTable,
    base: int,
) -> int:
    """A running task's node (supply 1), its running arc and its arc to its request class's
    cluster aggregator; its index. Priced as Quincy's (``quincy_cost_model.cc``): staying, the
    continuation cost d* - p* (d*: what the arc into its machine costs it, p*: the seconds it
    has run, ``TaskContinuationCost``); another machine, its request class's arcs; waiting
    (the caller's arc), the preemption cost: waiting as long as it ran
    (``TaskPreemptionCost``). Every arc of the task gets p* more (``net.shift``), so that no
    cost is negative: each unit leaves the task by one arc, so the optimum is the same."""
    index = net.node(TASK, task.task_id, supply=1)
    net.tasks[index] = task
    net.running[index] = node_id
    position = table.position[node_id]
    shift = net.shift[index] = max(0.0, ran_s)
    continuation = float(model.machine_costs(request.model_key, table, np.array([position]))[0]) - shift
    net.arc(index, base + position, 1, continuation + shift)
    if request.cluster is not None:
        net.arc(index, request.cluster, 1, model.cluster_cost(task, racks) + shift)
    return index


def _machines(net: FlowNetwork, table: MachineTable, sink: int) -> int:
    """A node per machine, each with an arc to the sink of its free slots; the first's index
    (the others follow in the table's order)."""
    base, count = net.num_nodes, len(table)
    net.kinds.extend([MACHINE] * count)
    net.labels.extend(table.position)
    net.supplies.extend([0] * count)
    net.tails.extend(range(base, base + count))
    net.heads.extend([sink] * count)
    net.capacities.extend(table.slots.tolist())
    net.costs.extend([0] * count)
    return base


def _add_task(
    net: FlowNetwork, entry: _Priced, request: _Request, priced_machines: bool, table: MachineTable, base: int
) -> int:
    """The task's node (supply 1), its arc to its cluster aggregator and its preference arcs.
    A preference arc straight into a machine costs what the model prices the machine at too
    where ``priced_machines`` (``prices_preferred_machines``: the transient model's eviction
    risk), as the request class's arc into it does."""
    task = entry.task
    index = net.node(TASK, task.task_id, supply=1)
    net.tasks[index] = task
    if request.cluster is None or request.fits is None or request.costs is None:
        return index  # no machine up takes it now: it can only wait
    net.raw_arc(index, request.cluster, 1, entry.cluster)
    fits, costs = request.fits, request.costs
    for node_id, cost in entry.machines:
        position = table.position.get(node_id)
        if position is not None and fits[position]:
            net.arc(index, base + position, 1, cost + float(costs[position]) if priced_machines else cost)
    for rack, cost in entry.zones:
        zone = request.zones.get(rack)
        if zone is not None:
            net.raw_arc(index, zone, 1, cost)
    return index


def _request(net: FlowNetwork, key: RequestKey, model: CostModel, table: MachineTable, base: int) -> _Request:
    """A request class's aggregators and arcs to the machines where its tasks fit, with as
    many units as fit there by free slots and free memory (``base``: the first machine's node)."""
    memory_mb, classes, excluded, model_key = key
    mask = table.of_classes(classes)
    for node_id in excluded:
        position = table.position.get(node_id)
        if position is not None:
            mask[position] = False
    units = table.slots if memory_mb <= 0 else np.minimum(table.slots, table.memory // memory_mb)
    fits = mask & (units > 0)
    positions = np.flatnonzero(fits)
    request = _Request(model_key)
    if not positions.size:
        return request
    units = units[positions]
    costs = model.machine_costs(model_key, table, positions)
    request.cluster = net.node(CLUSTER, f"X {memory_mb} MB")
    request.fits = fits
    request.costs = np.zeros(len(table))
    request.costs[positions] = costs
    totals = np.bincount(table.rack[positions], weights=units, minlength=len(table.racks)).astype(np.int64)
    feeder = _aggregators(net, request.cluster, request.zones, table.racks, totals)
    net.tails.extend(feeder[table.rack[positions]].tolist())
    net.heads.extend((positions + base).tolist())
    net.capacities.extend(units.tolist())
    net.costs.extend(scaled_array(costs).tolist())
    return request


def _aggregators(
    net: FlowNetwork, cluster: int, zones: dict[Rack, int], racks: list[Rack], totals: np.ndarray
) -> np.ndarray:
    """A request class's node class and zone aggregators, over the racks whose machines
    take ``totals`` of its units; the aggregator that feeds each rack's machines (-1: none)."""
    feeder = np.full(len(racks), -1, dtype=np.int64)
    by_class: dict[str, int] = {}
    order = sorted(range(len(racks)), key=lambda code: (racks[code][0], racks[code][1] or ""))
    for code in order:
        if totals[code] <= 0:
            continue
        node_class, zone = racks[code]
        if node_class not in by_class:
            by_class[node_class] = net.node(CLASS, f"C {node_class}")
            in_class = sum(int(totals[c]) for c in order if racks[c][0] == node_class)
            net.arc(cluster, by_class[node_class], in_class, 0.0)
        feeder[code] = by_class[node_class]
        if zone is not None:
            feeder[code] = zones[(node_class, zone)] = net.node(ZONE, f"Z {node_class}/{zone}")
            net.arc(by_class[node_class], int(feeder[code]), int(totals[code]), 0.0)
    return feeder


def extract(net: FlowNetwork, flows: np.ndarray) -> dict[str, str]:
    """Task id -> machine id, read back from an optimal flow (Listing 5.1).

    From the machines backwards: each node hands the machines it sent flow to back along its
    incoming arcs, as many as each arc carries, until a single machine reaches each placed
    task. The network is layered, so visiting the nodes level by level from the machines
    down visits each once, with all its machines gathered."""
    incoming: dict[int, list[int]] = {}
    for arc in np.flatnonzero(flows > 0).tolist():
        incoming.setdefault(net.heads[arc], []).append(arc)
    machines: dict[int, list[str]] = {}
    for arc in incoming.get(_sink(net), ()):
        tail = net.tails[arc]
        if net.kinds[tail] == MACHINE:
            machines[tail] = [net.labels[tail]] * int(flows[arc])
    for level in (LEVEL[MACHINE], LEVEL[ZONE], LEVEL[CLASS], LEVEL[CLUSTER]):
        for node in [n for n in list(machines) if LEVEL[net.kinds[n]] == level]:
            held = machines.pop(node)
            for arc in incoming.get(node, ()):
                units = int(flows[arc])
                machines.setdefault(net.tails[arc], []).extend(held[-units:])
                del held[-units:]
    return {net.tasks[node].task_id: ids[0] for node, ids in machines.items() if node in net.tasks and ids}


def _sink(net: FlowNetwork) -> int:
    return net.kinds.index(SINK)
