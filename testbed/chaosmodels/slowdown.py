"""Slow nodes (``chaos.slowdown``): each node's slowdown factor, drawn once from the scenario's seed.

A factor f makes a node f times slower: its tasks' compute, spills and sleeps take f times
as long (``--backend sim``; the real backends do not enforce it yet and refuse it). A node's
factor is its entry in ``nodes`` if it has one, else a draw from its class's ``factor`` (a
number, or ``{choice: [[factor, weight], ...]}``) by a generator seeded with the scenario's
seed and the node's id, so a scenario and seed give every node the same factor on every run,
whatever the order nodes launch in.
"""

from __future__ import annotations

import random
from typing import Any


def slowdown_factor(spec: Any, seed: int, node_id: str, node_class: str) -> float:
    """The node's factor under ``spec`` (a ``SlowdownSpec``, or None: 1)."""
    if spec is None:
        return 1.0
    if node_id in spec.nodes:
        return float(spec.nodes[node_id])
    factor = getattr(spec, node_class).factor
    if isinstance(factor, int | float):
        return float(factor)
    values, weights = zip(*factor.choice, strict=True)
    return float(random.Random(f"{seed}:slowdown:{node_id}").choices(values, weights)[0])
