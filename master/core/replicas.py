"""Input replicas (issue #43, point 5): where each input split's copies live.

A pure decision of the core: ``place`` puts each split's ``n`` replicas on distinct nodes,
drawn from a generator seeded by the scenario; an evicted node loses its replicas
(``lose``); a map's read is local when its node holds the split, a fetch from a holder
otherwise, and from the source ("durable storage") when no replica is left (``read_from``).
``held`` gives the bytes of a task's input each node holds, the figure Quincy's preference
arcs need. The copying itself is the shell's and agents' job.
``master.core.input_replicas`` wires it into the run (``jobs[].input_replication``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

REPLICA_STREAM = 0x5E91CA
"""The placement generator is seeded by (scenario seed, this)."""

SOURCE = "source"
"""Where a split with no replica left is read from: durable storage."""


@dataclass(frozen=True)
class Read:
    kind: Literal["local", "remote", "source"]
    holder: str
    """The node read from (the reader itself when local), or ``SOURCE``."""


@dataclass
class Replicas:
    holders: dict[str, list[str]] = field(default_factory=dict)
    """Each split's holders, in placement order."""

    def lose(self, node: str) -> list[str]:
        """An evicted node's replicas are gone; returns the splits it held."""
        lost = [split for split, nodes in self.holders.items() if node in nodes]
        for split in lost:
            self.holders[split].remove(node)
        return lost

    def read_from(self, split: str, reader: str) -> Read:
        nodes = self.holders.get(split, [])
        if reader in nodes:
            return Read("local", reader)
        if nodes:
            return Read("remote", nodes[0])
        return Read("source", SOURCE)

    def held(self, sizes: Mapping[str, int]) -> dict[str, int]:
        """The bytes of these splits (a task's input: split -> size) each holding node has: the
        ``on_node`` of Firmament's ``TaskInput``, whose cost models apply their own thresholds
        (Quincy's preference arc where >= 10% of the input lives)."""
        on_node: dict[str, int] = {}
        for split, size in sizes.items():
            for node in self.holders.get(split, []):
                on_node[node] = on_node.get(node, 0) + size
        return dict(sorted(on_node.items()))


def place(splits: Sequence[str], nodes: Sequence[str], n: int, seed: int) -> Replicas:
    """Each split's ``n`` replicas on distinct nodes, drawn uniformly without replacement."""
    if n < 0 or n > len(nodes):
        raise ValueError(f"input_replication {n} must be between 0 and the node count {len(nodes)}")
    rng = np.random.default_rng([seed, REPLICA_STREAM])
    ordered = sorted(nodes)
    return Replicas(
        {split: [ordered[i] for i in rng.choice(len(ordered), size=n, replace=False)] for split in splits}
    )
