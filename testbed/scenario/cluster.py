"""The ``cluster`` section of a scenario: the node classes, their zones and prices."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from testbed.chaosmodels.lifetimes import NODE_CLASSES
from testbed.chaosmodels.prices import parse_price
from testbed.chaosmodels.zones import check_zones, zone_of
from testbed.limits import MAX_BANDWIDTH, MAX_NODE_CLASSES, MAX_NODE_MEMORY_MB, MAX_SIM_NODES_PER_CLASS
from testbed.scenario.base import Duration, Strict
from testbed.scenario.chaos import ChaosSpec, ClassChaosSpec, anchored
from testbed.wire.protocol import NodeClass

CLASS_NAME = re.compile(r"[a-z][a-z0-9._-]{0,31}")
"""A named class (``cluster.classes.NAME``): its nodes are ``NAME-0``, ``NAME-1``, ..."""

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


DEFAULT_PRICES = {"reserved": 1.0, "transient": 0.3}
"""Each kind's ``price_per_hour`` unless a class gives its own."""


class ClassSpec(NodeClassSpec):
    """A named node class (``cluster.classes.NAME``): its kind, its nodes' shape and price, its chaos."""

    kind: NodeClass = Field(description="reserved or transient: what every policy sees of its nodes")
    chaos: ClassChaosSpec = ClassChaosSpec()
    """The class's lifetime model, notice, replacement and capacity (as ``chaos.<class>``)."""

    @model_validator(mode="before")
    @classmethod
    def _default_price(cls, data: Any) -> Any:
        """A class's default price is its kind's, as in the shorthand (1.0 reserved, 0.3 transient)."""
        if isinstance(data, dict) and data.get("kind") in DEFAULT_PRICES:
            return {"price_per_hour": DEFAULT_PRICES[data["kind"]], **data}
        return data

    @model_validator(mode="after")
    def _chaos_zones(self) -> ClassSpec:
        for zone in self.chaos.zones:
            if zone not in self.zones:
                known = ", ".join(self.zones) or "none: give the class zones"
                raise ValueError(f"chaos.zones: unknown zone {zone!r}; zones of this class: {known}")
        return self


def class_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a class (its nodes' ids are ``NAME-<ordinal>``), or None."""
    if not CLASS_NAME.fullmatch(name):
        return (
            f"class name {name!r}: use 1 to 32 lowercase letters, digits, '.', '_' or '-', "
            "beginning with a letter (e.g. m5.large, spot-a)"
        )
    if name.endswith("-") or re.search(r"-[0-9]+$", name):
        return f"class name {name!r}: it must not end in '-' or '-<digits>' (a node id reads NAME-<ordinal>)"
    return None


@dataclass(frozen=True)
class NamedClass:
    """One node class, in either form: its name (its nodes' id prefix), its kind, its nodes'
    shape and price (``spec``) and its chaos."""

    name: str
    kind: NodeClass
    spec: NodeClassSpec
    chaos: ClassChaosSpec


def node_classes(cluster: ClusterSpec, chaos: ChaosSpec) -> dict[str, NamedClass]:
    """The scenario's node classes, in launch order: ``cluster.classes`` as written, or the
    shorthand's ``reserved`` then ``transient`` (each its own kind, its chaos ``chaos.<class>``)."""
    if cluster.classes is None:
        return {k: NamedClass(k, k, getattr(cluster, k), getattr(chaos, k)) for k in NODE_CLASSES}
    return {name: NamedClass(name, spec.kind, spec, spec.chaos) for name, spec in cluster.classes.items()}


def class_specs(cluster: ClusterSpec) -> dict[str, tuple[NodeClass, NodeClassSpec]]:
    """Each node class of ``cluster`` by name, in launch order: its kind and its nodes' shape
    (``node_classes`` without the chaos, for readers of a run's cluster alone)."""
    if cluster.classes is None:
        return {k: (k, getattr(cluster, k)) for k in NODE_CLASSES}
    return {name: (spec.kind, spec) for name, spec in cluster.classes.items()}


def _node_class(default_price: float):
    def coerce(value: Any) -> Any:
        if isinstance(value, int) and not isinstance(value, bool):
            return {"count": value, "price_per_hour": default_price}
        if isinstance(value, dict):
            return {"price_per_hour": default_price, **value}
        raise ValueError("expected a node count or a mapping with count, slots, memory_mb")

    return BeforeValidator(coerce)


class ClusterSpec(Strict):
    reserved: Annotated[NodeClassSpec, _node_class(DEFAULT_PRICES["reserved"])] = NodeClassSpec(count=1)
    transient: Annotated[NodeClassSpec, _node_class(DEFAULT_PRICES["transient"])] = NodeClassSpec(
        count=3, price_per_hour=DEFAULT_PRICES["transient"]
    )
    classes: dict[str, ClassSpec] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_NODE_CLASSES,
        description="named node classes (instance types), instead of reserved and transient",
    )
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

    @model_validator(mode="before")
    @classmethod
    def _one_form(cls, data: Any) -> Any:
        if isinstance(data, dict) and "classes" in data and {"reserved", "transient"} & data.keys():
            raise ValueError(
                "give the nodes either as classes or as reserved/transient, not both; move reserved "
                "and transient into classes (each with kind: reserved or kind: transient)"
            )
        return data

    @field_validator("classes")
    @classmethod
    def _class_names(cls, classes: dict[str, ClassSpec] | None) -> dict[str, ClassSpec] | None:
        for name in classes or {}:
            problem = class_name_problem(name)
            if problem is not None:
                raise ValueError(problem)
        return classes

    @model_validator(mode="after")
    def _some_nodes(self) -> ClusterSpec:
        if self.classes is not None and not any(spec.count for spec in self.classes.values()):
            raise ValueError("the cluster has no nodes: give a class a count >= 1")
        if self.classes is None and self.reserved.count + self.transient.count == 0:
            raise ValueError("the cluster has no nodes: give reserved or transient a count >= 1")
        if self.heartbeat_timeout < 2 * self.heartbeat_interval:
            raise ValueError(
                f"heartbeat_timeout ({self.heartbeat_timeout:g}s) must be at least twice heartbeat_interval "
                f"({self.heartbeat_interval:g}s), or the master declares healthy nodes lost; raise "
                f"heartbeat_timeout to {2 * self.heartbeat_interval:g}s or more"
            )
        return self
