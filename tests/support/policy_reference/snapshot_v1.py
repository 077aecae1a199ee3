"""The snapshot's nodes before they were kept incrementally (reference, verbatim): every
node's view and free capacity rebuilt in every round, O(nodes x running)."""

from __future__ import annotations

from typing import Any

from master.schedulers.window import FreeNode
from testbed.api.policy import NodeView


def node_views(core: Any) -> tuple[NodeView, ...]:
    return tuple(
        NodeView(
            n.node_id,
            n.node_class,
            n.slots,
            n.memory_mb,
            core.running_views(n),
            draining=n.status == "draining",
            launched=n.launched_t,
            reserved_for=n.reserved_for,
            partition=n.partition,
            queued=tuple(n.queued),
            rebalance=n.rebalance_at is not None,
            zone=core.settings.cluster[n.node_class].zone_of(n.ordinal),
        )
        for n in core.nodes.values()
        if n.status in ("up", "draining")
    )


def free_nodes(core: Any) -> list[FreeNode]:
    return [
        FreeNode(
            n.node_id,
            n.node_class,
            n.slots - len(n.running),
            n.memory_mb - sum(t.memory_mb for t in core.running_views(n)),
        )
        for n in core.nodes.values()
        if n.status == "up"
    ]
