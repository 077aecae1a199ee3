"""``autoscaler: static``: the cluster keeps the size the scenario gives it (the baseline)."""

from __future__ import annotations

from pydantic import BaseModel

from testbed.api.policy import Autoscaler, ClusterSnapshot, ScaleDecision


class StaticAutoscaler(Autoscaler):
    class Options(BaseModel, extra="forbid"):
        """``policy.options.static``: it takes none."""

    def decide(self, snapshot: ClusterSnapshot, provisioning: int) -> list[ScaleDecision]:
        return []
