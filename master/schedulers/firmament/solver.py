"""The min-cost flow solver: OR-Tools' ``SimpleMinCostFlow`` (C++ cost scaling).

Firmament's Flowlessly races relaxation against incremental cost scaling (Gog 2017,
section 5.2); OR-Tools solves each round's network from scratch by cost scaling, the
algorithm Quincy used. A failure (a status other than optimal, or an error) is reported,
never raised: the scheduler then leaves the round's tasks pending.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ortools.graph.python.min_cost_flow import SimpleMinCostFlow

from master.schedulers.firmament.network import FlowNetwork


@dataclass(frozen=True, slots=True)
class Solution:
    status: str
    """``OPTIMAL``, or what went wrong (the solver's status, or the error)."""
    cost: int
    """The flow's total cost in solver units (0 unless optimal)."""
    flows: np.ndarray
    """Flow on each arc, in the network's arc order (zeros unless optimal)."""

    @property
    def optimal(self) -> bool:
        return self.status == "OPTIMAL"


def solve(net: FlowNetwork) -> Solution:
    """A min-cost flow of ``net`` that routes every supply to the sink."""
    solver = SimpleMinCostFlow()
    none = np.zeros(net.num_arcs, dtype=np.int64)
    try:
        solver.add_arcs_with_capacity_and_unit_cost(
            np.asarray(net.tails, dtype=np.int32),
            np.asarray(net.heads, dtype=np.int32),
            np.asarray(net.capacities, dtype=np.int64),
            np.asarray(net.costs, dtype=np.int64),
        )
        solver.set_nodes_supplies(
            np.arange(net.num_nodes, dtype=np.int32), np.asarray(net.supplies, dtype=np.int64)
        )
        status = solver.solve()
    except (ValueError, RuntimeError, OverflowError, TypeError) as exc:
        return Solution(f"error: {exc}", 0, none)
    if status != SimpleMinCostFlow.OPTIMAL:
        return Solution(status.name, 0, none)
    flows = solver.flows(np.arange(net.num_arcs, dtype=np.int32))
    return Solution("OPTIMAL", int(solver.optimal_cost()), np.asarray(flows, dtype=np.int64))
