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

ROUND_S_PER_NODE = 2.96e-6
ROUND_S_PER_ARC = 1.00e-6
"""A round's CPU seconds per network node and per arc (build, solve, extraction and
admission together): least squares through the origin over 23 rounds of
benchmarks/firmament.py's clusters at 115236a (2026-12-02 06:12 UTC, load average 22 to 25
on 2 cores): quincy at 250 to 5,000 nodes and transient at 250 to 2,500 (3 rounds each), and
the medians at 12,500 nodes (quincy 12,526 nodes / 43,740 arcs: 79.8 ms; transient 13,214 /
300,373: 346.7 ms); median error 12%, worst 38% (a 250-node transient round). docs/firmament.md,
"Solver time"."""


def modelled_round_s(net: FlowNetwork) -> float:
    """The CPU seconds a round of ``net``'s size takes (``ROUND_S_PER_NODE``, ``_PER_ARC``)."""
    return ROUND_S_PER_NODE * net.num_nodes + ROUND_S_PER_ARC * net.num_arcs


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
