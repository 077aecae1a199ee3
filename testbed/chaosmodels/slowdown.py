"""Slow nodes (``chaos.slowdown``): each node's slowdown factor, drawn once from the scenario's seed.

A factor f makes a node f times slower: its tasks' compute, spills and sleeps take f times
as long (``--backend sim``; local and Docker nodes in faithful mode: docs/speculation.md). A node's
factor is its entry in ``nodes`` if it has one, else a draw from its class's ``factor`` (a
number, or ``{choice: [[factor, weight], ...]}``) by a generator seeded with the scenario's
seed and the node's id, times its host's co-location factor under ``colocation: ec2-2008``
(``testbed.chaosmodels.colocation``), so a scenario and seed give every node the same factor on
every run, whatever the order nodes launch in.

A run journals each node's factor (``slowdown_drawn``) and each change its slowdown episodes
make (``slowdown_episode``); ``own_factors`` and ``episode_spans`` read them back (the report's
node lanes, the fidelity monitor's allowance).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from testbed.chaosmodels.colocation import colocation_factor


def slowdown_factor(spec: Any, seed: int, node_id: str, node_class: str) -> float:
    """The node's factor under ``spec`` (a ``SlowdownSpec``, or None: 1)."""
    if spec is None:
        return 1.0
    if node_id in spec.nodes:
        return float(spec.nodes[node_id])
    shared = colocation_factor(seed, node_id) if spec.colocation == "ec2-2008" else 1.0
    return shared * _class_factor(getattr(spec, node_class).factor, seed, node_id)


def _class_factor(factor: Any, seed: int, node_id: str) -> float:
    """The node's draw from its class's ``factor`` (a number, or a ``FactorChoice``)."""
    if isinstance(factor, int | float):
        return float(factor)
    values, weights = zip(*factor.choice, strict=True)
    return float(random.Random(f"{seed}:slowdown:{node_id}").choices(values, weights)[0])


@dataclass(frozen=True)
class SlowSpan:
    node_id: str
    start_s: float
    stop_s: float
    factor: float
    """How many times slower than its own factor the node was (its episodes' product)."""


def own_factors(events: list[dict[str, Any]]) -> dict[str, float]:
    """Each node's own factor, as journaled at its launch (a node not slowed is left out)."""
    drawn = {str(e["node"]): float(e["factor"]) for e in events if e.get("event") == "slowdown_drawn"}
    return {node: factor for node, factor in drawn.items() if factor != 1}


def episode_spans(events: list[dict[str, Any]], ends: Mapping[str, float]) -> list[SlowSpan]:
    """The spans over which episodes slowed each node, by start: one from each change of its
    factor to the next, the last to the node's end (``ends``), a span at factor 1 left out."""
    since: dict[str, tuple[float, float]] = {}
    spans = []
    for event in events:
        if event.get("event") != "slowdown_episode":
            continue
        node, t, factor = str(event["node"]), float(event["t"]), float(event["factor"])
        if node in since:
            start, held = since.pop(node)
            spans.append(SlowSpan(node, start, t, held))
        if factor != 1:
            since[node] = (t, factor)
    spans.extend(SlowSpan(node, start, ends[node], factor) for node, (start, factor) in since.items())
    return sorted(spans, key=lambda s: (s.start_s, s.node_id))


def effective_factor(own: float, spans: list[SlowSpan], start_s: float, end_s: float) -> float:
    """The factor a task on a node of factor ``own`` ran under from ``start_s`` to ``end_s``,
    its node's episode ``spans`` (which do not overlap) included: the one that would have
    allowed it the same CPU had it held throughout (the episodes' 1/f averaged over its time)."""
    length = end_s - start_s
    if length <= 0:
        return own
    held = length - sum(
        max(0.0, min(end_s, s.stop_s) - max(start_s, s.start_s)) * (1 - 1 / s.factor) for s in spans
    )
    return own * length / held
