"""The ``cluster`` section of a scenario: the node classes, their zones and prices."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from testbed.chaosmodels.prices import parse_price
from testbed.chaosmodels.zones import check_zones, zone_of
from testbed.limits import MAX_BANDWIDTH, MAX_NODE_MEMORY_MB, MAX_SIM_NODES_PER_CLASS
from testbed.scenario.base import Duration, Strict
from testbed.scenario.chaos import anchored

# --------------------------------------------------------------------- cluster


class NodeClassSpec(Strict):
    """One class of nodes (reserved or transient)."""

    count: int = Field(ge=0, le=MAX_SIM_NODES_PER_CLASS)
    slots: int = Field(default=2, ge=1, le=64, description="concurrent tasks (cores)")
    memory_mb: int = Field(default=1024, ge=16, le=MAX_NODE_MEMORY_MB, description="memory for tasks")
    cpus: float | None = Field(
        default=None, gt=0, le=1024, description="cores of one node (default: slots); its CPU share"
    )
    network_mbps: float = Field(
        default=1000, ge=1, le=MAX_BANDWIDTH, description="NIC bandwidth in Mbit/s, each direction"
    )
    disk_mb_s: float | None = Field(
        default=None, ge=1, le=MAX_BANDWIDTH, description="spill bandwidth in MB/s (default: unlimited)"
    )
    price_per_hour: float = Field(default=1.0, ge=0, description="for the cost report")
    price: dict[str, Any] | None = Field(
        default=None, description="a price that moves (steps, trace, walk): the cost report integrates it"
    )
    zones: dict[str, int | float] = Field(
        default_factory=dict, description="availability zones: node counts or fractions per zone"
    )

    @field_validator("price", mode="before")
    @classmethod
    def _known_price(cls, value: Any, info: ValidationInfo) -> Any:
        """Parsed now so a typo is a scenario error; a relative trace path is anchored at the
        scenario file's folder (``testbed.chaosmodels.prices``)."""
        if value is None:
            return None
        base_dir = (info.context or {}).get("base_dir")
        parse_price(value, base_dir=base_dir)
        return anchored(value, "trace", base_dir)

    @model_validator(mode="after")
    def _zones(self) -> NodeClassSpec:
        check_zones(self.zones, self.count)
        return self

    def zone_of(self, ordinal: int) -> str | None:
        """The zone of the class's node ``ordinal`` (``testbed.chaosmodels.zones``); None without zones."""
        return zone_of(self.zones, self.count, ordinal)

    @property
    def cores(self) -> float:
        """The node's cores: ``cpus``, else one per slot."""
        return self.cpus if self.cpus is not None else float(self.slots)


def _node_class(default_price: float):
    def coerce(value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return {"count": value, "price_per_hour": default_price}
        if isinstance(value, dict):
            return {"price_per_hour": default_price, **value}
        raise ValueError("expected a node count or a mapping with count, slots, memory_mb")

    return BeforeValidator(coerce)


class ClusterSpec(Strict):
    reserved: Annotated[NodeClassSpec, _node_class(1.0)] = NodeClassSpec(count=1)
    transient: Annotated[NodeClassSpec, _node_class(0.3)] = NodeClassSpec(count=3, price_per_hour=0.3)
    heartbeat_interval: Duration = Field(default=0.5, gt=0)
    heartbeat_timeout: Duration = Field(default=3.0, gt=0)
    memory_increment_mb: int = Field(default=100, ge=1)
    warm_workers: bool = Field(
        default=True, description="start each agent's task forkserver at once (faster first task)"
    )
    start_window: int | None = Field(
        default=None,
        ge=0,
        description="how many nodes may be starting at once (default: 32 per CPU core; 0: all at once)",
    )

    @model_validator(mode="after")
    def _some_nodes(self) -> ClusterSpec:
        if self.reserved.count + self.transient.count == 0:
            raise ValueError("the cluster has no nodes: give reserved or transient a count >= 1")
        if self.heartbeat_timeout < 2 * self.heartbeat_interval:
            raise ValueError(
                f"heartbeat_timeout ({self.heartbeat_timeout:g}s) must be at least twice heartbeat_interval "
                f"({self.heartbeat_interval:g}s), or the master declares healthy nodes lost; raise "
                f"heartbeat_timeout to {2 * self.heartbeat_interval:g}s or more"
            )
        return self
