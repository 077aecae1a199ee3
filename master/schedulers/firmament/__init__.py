"""``scheduler: firmament``: min-cost flow placement (Gog 2017; camsas/firmament).

Each round the pending tasks, the machines with free slots and the aggregators between
them make a flow network (:mod:`.network`) priced by a cost model (:mod:`.costs`); a
min-cost flow (:mod:`.solver`) places every task it routes through a machine, and leaves
the others waiting. A task's wait is counted from the first round that saw it pending.

Under ``preemption: true`` (Firmament's ``--preemption=true``) the running tasks on nodes not
draining are in the network too, each free to stay, to move to another machine or to wait:
one whose flow leaves its machine is preempted (``Preempt``) or migrated (``Migrate``).

The solver's placements are checked before they are given: a machine that two request
classes filled past its memory keeps the first of them (in queue order), and the rest
wait (``deferred``). A solver that fails places nothing: the round journals
``solver_failed`` and its tasks wait for the next round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from master.options import PolicyOptions
from master.schedulers.firmament.costs import (
    COST_MODELS,
    QUINCY_PREFERENCE_FRACTION,
    QUINCY_WAIT_FACTOR,
    CostModel,
    EvictionRisk,
    OctopusCostModel,
    QuincyCostModel,
    TransientCostModel,
)
from master.schedulers.firmament.network import FlowNetwork, MaintainedNetwork, extract
from master.schedulers.firmament.solver import Solution, modelled_round_s, solve
from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    Decision,
    LogDecision,
    Migrate,
    PendingTask,
    Preempt,
    Scheduler,
)
from testbed.scenario.schema import Scenario
from testbed.settings.node_classes import class_chaos

OPTIONS = frozenset({"cost_model", "wait_factor", "preference_threshold", "preemption"})
DEFAULT_COST_MODEL = "quincy"
MAX_WAIT_FACTOR = 1e6
"""Cost units per second waited: beyond this, a day's wait overflows the solver's range."""

Solver = Callable[[FlowNetwork], Solution]


class FirmamentScheduler(Scheduler):
    needs_all_pending = True
    """The flow network holds every ready task."""
    needs_free_index = False
    """It reads the nodes' views (their running tasks, age and zone), not the free index."""

    class Options(PolicyOptions):
        """``policy.options.firmament``: the cost model and its knobs (quincy's and transient's;
        unset: the paper's values, ``cost_model``)."""

        cost_model: str = DEFAULT_COST_MODEL
        wait_factor: float | None = None
        preference_threshold: float | None = None
        preemption: bool = False
        """Running tasks may be preempted or migrated (Firmament's ``--preemption``)."""

    def __init__(
        self, model: CostModel | None = None, solver: Solver = solve, preemption: bool = False
    ) -> None:
        self.model = model if model is not None else QuincyCostModel()
        self.needs_exposure = self.model.reads_exposure
        """The master estimates its tasks' output exposure only for a cost model that reads it."""
        self.solver = solver
        self.preemption = preemption
        self.network = MaintainedNetwork(self.model, preemption)
        """The flow network, kept from round to round."""
        self._seen: dict[str, float] = {}
        """When each pending task was first seen pending (snapshot time)."""
        self.last: tuple[FlowNetwork, Solution] | None = None
        """The last round's network and solution (for its size, and for drawing it)."""

    @classmethod
    def from_scenario(cls, options: Mapping[str, Any], scenario: Scenario) -> FirmamentScheduler:
        """The cost model ``policy.options.firmament`` names, knowing the scenario's evictions."""
        given = {name: value for name, value in options.items() if value is not None}
        return cls(cost_model(given, eviction_risk(scenario)), preemption=given.get("preemption", False))

    def modelled_round_s(self) -> float | None:
        """The last round's time by the fitted model of its network's size (``solver.ROUND_S_PER_ARC``)."""
        return modelled_round_s(self.last[0]) if self.last is not None else None

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        jobs = sorted(snapshot.jobs, key=lambda j: (j.submitted, j.job_id))
        tasks = [task for job in jobs for task in job.pending]
        seen = self._seen
        self._seen = {t.task_id: seen.get(t.task_id, snapshot.now) for t in tasks}
        if not tasks:
            self.last = None
            return []
        waited = {task_id: snapshot.now - since for task_id, since in self._seen.items()}
        net = self.network.update(snapshot, waited, tasks)
        solution = self.solver(net)
        self.last = (net, solution)
        if not solution.optimal:
            detail = {"tasks": float(len(tasks)), "arcs": float(net.num_arcs)}
            label = f"solver_failed: {solution.status}"
            return [LogDecision(tasks[0].job_id, tasks[0].task_id, label, None, detail)]
        placed = extract(net, solution.flows)
        return admitted(snapshot, tasks, placed, moved(net, placed))


def moved(net: FlowNetwork, placed: Mapping[str, str]) -> dict[str, tuple[str, str | None]]:
    """The running tasks whose flow left their machine: task id -> (its machine, the machine
    it goes to, or None: it waits)."""
    moves: dict[str, tuple[str, str | None]] = {}
    for index, origin in net.running.items():
        task_id = net.tasks[index].task_id
        target = placed.get(task_id)
        if target != origin:
            moves[task_id] = (origin, target)
    return moves


def admitted(
    snapshot: ClusterSnapshot,
    tasks: list[PendingTask],
    placed: Mapping[str, str],
    moves: Mapping[str, tuple[str, str | None]],
) -> list[Decision]:
    """The moves as ``Preempt`` then ``Migrate`` decisions and the placements as ``Assign``
    decisions, in queue order, each checked against what is left on its node (a preempted
    task's slot and memory are left on its machine): one that no longer fits waits (a
    ``deferred`` decision; a migration not taken leaves its task where it runs)."""
    involved = {*placed.values(), *(node for move in moves.values() for node in move if node is not None)}
    left = {n.node_id: [n.free_slots, n.free_memory_mb] for n in snapshot.nodes if n.node_id in involved}
    decisions: list[Decision] = _moves(snapshot, moves, left)
    for task in tasks:
        node_id = placed.get(task.task_id)
        if node_id is None:
            continue
        room = left[node_id]
        if room[0] < 1 or room[1] < task.ideal_memory_mb:
            detail = {"free_slots": float(room[0]), "free_memory_mb": float(room[1])}
            decisions.append(LogDecision(task.job_id, task.task_id, "deferred", node_id, detail))
            continue
        room[0] -= 1
        room[1] -= task.ideal_memory_mb
        decisions.append(Assign(task.task_id, node_id, task.ideal_memory_mb, predicted_duration_s=None))
    return decisions


def _moves(
    snapshot: ClusterSnapshot, moves: Mapping[str, tuple[str, str | None]], left: dict[str, list[int]]
) -> list[Decision]:
    """The preemptions, then the migrations whose target has room left (``left``: each node's
    free slots and memory, given back by the tasks that leave it)."""
    memory = {t.task_id: t.memory_mb for n in snapshot.nodes for t in n.running if t.task_id in moves}
    decisions: list[Decision] = []
    for task_id, (origin, target) in sorted(moves.items(), key=lambda move: move[1][1] is not None):
        if target is not None:
            room = left[target]
            if room[0] < 1 or room[1] < memory[task_id]:
                continue
            room[0] -= 1
            room[1] -= memory[task_id]
        decisions.append(
            Preempt(task_id, "firmament") if target is None else Migrate(task_id, target, "firmament")
        )
        left[origin][0] += 1
        left[origin][1] += memory[task_id]
    return decisions


def cost_model(options: Mapping[str, Any], risk: EvictionRisk | None = None) -> CostModel:
    """The cost model ``policy.options.firmament`` names (checked: a ValueError names the field)."""
    unknown = set(options) - OPTIONS
    if unknown:
        raise ValueError(f"unknown firmament options {sorted(unknown)}; known: {sorted(OPTIONS)}")
    if not isinstance(options.get("preemption", False), bool):
        raise ValueError(f"preemption: expected true or false, got {options['preemption']!r}")
    name = options.get("cost_model", DEFAULT_COST_MODEL)
    if name not in COST_MODELS:
        raise ValueError(f"cost_model: unknown cost model {name!r}; expected one of {', '.join(COST_MODELS)}")
    knobs = {
        "wait_factor": _number(options, "wait_factor", QUINCY_WAIT_FACTOR, MAX_WAIT_FACTOR),
        "preference_threshold": _number(options, "preference_threshold", QUINCY_PREFERENCE_FRACTION, 1.0),
    }
    if name in ("trivial", "octopus") and set(options) & set(knobs):
        raise ValueError(f"{sorted(set(options) & set(knobs))} are quincy's and transient's, not {name}'s")
    if name == "trivial":
        return CostModel()
    if name == "octopus":
        return OctopusCostModel()
    if name == "quincy":
        return QuincyCostModel(**knobs)
    return TransientCostModel(risk if risk is not None else EvictionRisk({}), **knobs)


def eviction_risk(scenario: Scenario) -> EvictionRisk:
    """What the transient cost model knows of evictions: the scenario's lifetime model of
    each node kind (as a machine's rack is: ``NodeView.node_class``) and of each zone that has
    its own; with several classes of a kind, its first class's model (and a zone's, the first
    class's that has it)."""
    models = {}
    for name, named in scenario.node_classes.items():
        rules = class_chaos(scenario, name)
        models.setdefault((named.kind, None), rules.model)
        for zone in named.spec.zones:
            models.setdefault((named.kind, zone), rules.model_for(zone))
    return EvictionRisk(models, scenario.wall_per_trace)


def _number(options: Mapping[str, Any], key: str, default: float, most: float) -> float:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= most:
        raise ValueError(f"{key}: expected a number from 0 to {most:g}, got {value!r}")
    return float(value)
