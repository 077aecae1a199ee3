"""``scheduler: firmament``: min-cost flow placement (Gog 2017; camsas/firmament).

Each round the pending tasks, the machines with free slots and the aggregators between
them make a flow network (:mod:`.network`) priced by a cost model (:mod:`.costs`); a
min-cost flow (:mod:`.solver`) places every task it routes through a machine, and leaves
the others waiting. A task's wait is counted from the first round that saw it pending.

The solver's placements are checked before they are given: a machine that two request
classes filled past its memory keeps the first of them (in queue order), and the rest
wait (``deferred``). A solver that fails places nothing: the round journals
``solver_failed`` and its tasks wait for the next round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from master.chaos.rules import class_rules
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
from master.schedulers.firmament.network import FlowNetwork, build, extract
from master.schedulers.firmament.solver import Solution, solve
from testbed.api.policy import Assign, ClusterSnapshot, Decision, LogDecision, PendingTask, Scheduler
from testbed.scenario.schema import Scenario

OPTIONS = frozenset({"cost_model", "wait_factor", "preference_threshold"})
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

    def __init__(self, model: CostModel | None = None, solver: Solver = solve) -> None:
        self.model = model if model is not None else QuincyCostModel()
        self.solver = solver
        self._seen: dict[str, float] = {}
        """When each pending task was first seen pending (snapshot time)."""
        self.last: tuple[FlowNetwork, Solution] | None = None
        """The last round's network and solution (for its size, and for drawing it)."""

    @classmethod
    def from_scenario(cls, options: Mapping[str, Any], scenario: Scenario) -> FirmamentScheduler:
        """The cost model ``policy.options.firmament`` names, knowing the scenario's evictions."""
        given = {name: value for name, value in options.items() if value is not None}
        return cls(cost_model(given, eviction_risk(scenario)))

    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        jobs = sorted(snapshot.jobs, key=lambda j: (j.submitted, j.job_id))
        tasks = [task for job in jobs for task in job.pending]
        seen = self._seen
        self._seen = {t.task_id: seen.get(t.task_id, snapshot.now) for t in tasks}
        if not tasks:
            return []
        waited = {task_id: snapshot.now - since for task_id, since in self._seen.items()}
        net = build(snapshot, self.model, waited, tasks)
        solution = self.solver(net)
        self.last = (net, solution)
        if not solution.optimal:
            detail = {"tasks": float(len(tasks)), "arcs": float(net.num_arcs)}
            label = f"solver_failed: {solution.status}"
            return [LogDecision(tasks[0].job_id, tasks[0].task_id, label, None, detail)]
        return admitted(snapshot, tasks, extract(net, solution.flows))


def admitted(
    snapshot: ClusterSnapshot, tasks: list[PendingTask], placed: Mapping[str, str]
) -> list[Decision]:
    """The placements as ``Assign`` decisions, in queue order, each checked against what is
    left on its node: one that no longer fits waits (a ``deferred`` decision)."""
    left = {n.node_id: [n.free_slots, n.free_memory_mb] for n in snapshot.nodes}
    decisions: list[Decision] = []
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


def cost_model(options: Mapping[str, Any], risk: EvictionRisk | None = None) -> CostModel:
    """The cost model ``policy.options.firmament`` names (checked: a ValueError names the field)."""
    unknown = set(options) - OPTIONS
    if unknown:
        raise ValueError(f"unknown firmament options {sorted(unknown)}; known: {sorted(OPTIONS)}")
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
    each node class and of each zone that has its own, and the trace's clock."""
    models = {}
    for node_class in ("reserved", "transient"):
        rules = class_rules(scenario, node_class)
        models[(node_class, None)] = rules.model
        for zone in getattr(scenario.cluster, node_class).zones:
            models[(node_class, zone)] = rules.model_for(zone)
    return EvictionRisk(models, scenario.wall_per_trace)


def _number(options: Mapping[str, Any], key: str, default: float, most: float) -> float:
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= most:
        raise ValueError(f"{key}: expected a number from 0 to {most:g}, got {value!r}")
    return float(value)
