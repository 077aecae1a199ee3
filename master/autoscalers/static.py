"""``autoscaler: static``: the cluster keeps the size the scenario gives it (the baseline)."""

from __future__ import annotations

from testbed.api.policy import Autoscaler, ClusterSnapshot, ScaleDecision


class StaticAutoscaler(Autoscaler):
    def decide(self, snapshot: ClusterSnapshot, provisioning: int) -> list[ScaleDecision]:
        return []
