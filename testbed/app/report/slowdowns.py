"""Slow nodes in the report's node lanes (``chaos.slowdown``): each node's own factor, drawn at
its launch (``slowdown_drawn``), and the spans its slowdown episodes held (``slowdown_episode``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


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


def episode_spans(events: list[dict[str, Any]], ends: dict[str, float]) -> list[SlowSpan]:
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
