"""Victim selection for an eviction storm: which nodes a storm takes, as a pure function.

The caller passes the nodes that may be evicted (alive, not already warned), the
storm's ``EvictSpec``, a seeded generator and, for ``most-data``, the bytes of
task outputs each node stores. Ties are broken at random with that generator, so
the same inputs and seed always give the same victims, and no node is favoured
by its name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np

from testbed.scenario.chaos import EvictSpec


class EvictableNode(Protocol):
    """What selection reads of a node; ``testbed.api.policy.NodeView`` has it all."""

    @property
    def node_id(self) -> str: ...
    @property
    def node_class(self) -> str: ...
    @property
    def launched(self) -> float: ...
    @property
    def running(self) -> Sequence[object]: ...
    @property
    def zone(self) -> str | None: ...


def victim_count(evict: EvictSpec, candidates: int) -> int:
    """How many of ``candidates`` nodes a storm evicts.

    ``count`` is capped at the candidates. ``fraction`` rounds half up
    (0.5 of 5 nodes is 3, 0.25 of 10 is 3) and is at least 1 when any node exists.
    """
    if candidates == 0:
        return 0
    if evict.count is not None:
        return min(evict.count, candidates)
    fraction = evict.fraction or 0.0  # the schema guarantees one of count and fraction
    wanted = math.floor(fraction * candidates + 0.5 + 1e-9)
    return min(max(wanted, 1), candidates)


def select_victims(
    nodes: Sequence[EvictableNode],
    evict: EvictSpec,
    rng: np.random.Generator,
    stored_bytes: Mapping[str, int] | None = None,
) -> list[str]:
    """The node ids a storm evicts, first choice first.

    ``kind`` filters by class (``any`` takes both), ``zone`` (if given) by zone. ``select``: ``random``;
    ``oldest``/``youngest`` by launch time; ``busiest`` by running tasks;
    ``most-data`` by ``stored_bytes`` (missing nodes count as 0 bytes).
    """
    candidates = [
        node for node in nodes if evict.kind in ("any", node.node_class) and evict.zone in (None, node.zone)
    ]
    candidates.sort(key=lambda node: _natural(node.node_id))
    shuffled = [candidates[i] for i in rng.permutation(len(candidates))]
    ranked = sorted(shuffled, key=_rank_key(evict.select, stored_bytes or {}))
    return [node.node_id for node in ranked[: victim_count(evict, len(candidates))]]


def _rank_key(select: str, stored_bytes: Mapping[str, int]) -> Callable[[EvictableNode], float]:
    """Sort key, smallest first; ``random`` keeps the shuffled order (all keys equal)."""
    keys: dict[str, Callable[[EvictableNode], float]] = {
        "random": lambda node: 0.0,
        "oldest": lambda node: node.launched,
        "youngest": lambda node: -node.launched,
        "busiest": lambda node: -len(node.running),
        "most-data": lambda node: -stored_bytes.get(node.node_id, 0),
    }
    return keys[select]


def _natural(node_id: str) -> list[tuple[int, int | str]]:
    """``transient-2`` before ``transient-10``: a canonical order before shuffling."""
    return [(0, int(part)) if part.isdigit() else (1, part) for part in re.split(r"(\d+)", node_id)]
