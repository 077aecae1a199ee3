"""The CloudCoaster autoscaler before it counted once per snapshot (reference): it counted
afresh at every call, with these formulas (verbatim); ``_replaced_ids`` is the previous
``replaced_ids`` moved unchanged. The rest is ``cloudcoaster_v2``'s (the census before it
was kept across snapshots)."""

from __future__ import annotations

from master.autoscalers.cloudcoaster import LongLoad
from master.schedulers.eagle import long_node_ids
from testbed.api.policy import ClusterSnapshot, NodeView
from tests.support.policy_reference import cloudcoaster_v2 as cloudcoaster


class CloudCoasterAutoscaler(cloudcoaster.CloudCoasterAutoscaler):
    def replaced_ids(self, snapshot: ClusterSnapshot) -> frozenset[str]:
        return self._replaced_ids(snapshot)

    def long_load(self, snapshot: ClusterSnapshot) -> LongLoad:
        long_ids = long_node_ids(snapshot)
        counted = self._counted(snapshot)
        return LongLoad(sum(n.node_id in long_ids for n in counted), len(counted))

    def _counted(self, snapshot: ClusterSnapshot) -> list[NodeView]:
        replaced = self.replaced_ids(snapshot)
        return [n for n in snapshot.nodes if not n.draining and n.node_id not in replaced]
