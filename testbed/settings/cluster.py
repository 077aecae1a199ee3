"""The cluster and the chaos of a run, read once by ``resolve``: what the master core needs of
each node class (count, slots, memory, cores, zones, price, chaos), and the storms and slowdowns.

The core takes these (``RunSettings.cluster``, ``RunSettings.chaos``) instead of the scenario,
so that a class's shape and chaos come from one place; a third node class (issue 47) is one
more entry of ``ClusterSettings.classes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from testbed.chaosmodels.lifetimes import NODE_CLASSES
from testbed.chaosmodels.zones import zone_of
from testbed.scenario.chaos import SlowdownSpec, StormSpec
from testbed.settings.node_classes import ClassChaos, chaos_classes
from testbed.wire.protocol import NodeClass

if TYPE_CHECKING:  # only typed by it: the core, which imports these, imports no schema
    from testbed.scenario.schema import Scenario


@dataclass(frozen=True)
class NodeClassShape:
    """One node class's nodes: how many at the start, and what each has."""

    count: int
    slots: int
    memory_mb: int
    cores: float
    """``cpus``, else one per slot."""
    price_per_hour: float
    zones: Mapping[str, int | float]
    """Availability zones: node counts or fractions per zone (empty: none)."""

    def zone_of(self, ordinal: int) -> str | None:
        """The zone of the class's node ``ordinal`` (``testbed.chaosmodels.zones``); None without zones."""
        return zone_of(self.zones, self.count, ordinal)


@dataclass(frozen=True)
class ClusterSettings:
    classes: Mapping[NodeClass, NodeClassShape]
    memory_increment_mb: int
    """The unit a task's memory grant is rounded up to."""

    def __getitem__(self, node_class: str) -> NodeClassShape:
        return self.classes[node_class]  # type: ignore[index]

    @classmethod
    def of(cls, scenario: Scenario) -> ClusterSettings:
        classes = {}
        for node_class in NODE_CLASSES:
            spec = getattr(scenario.cluster, node_class)
            classes[node_class] = NodeClassShape(
                spec.count, spec.slots, spec.memory_mb, spec.cores, spec.price_per_hour, dict(spec.zones)
            )
        return cls(classes, scenario.cluster.memory_increment_mb)


@dataclass(frozen=True)
class ChaosSettings:
    """What the chaos rules draw from: the seed, each class's chaos, the storms, the slowdowns."""

    seed: int
    classes: Mapping[NodeClass, ClassChaos]
    """Each node class's lifetimes, notice, replacement and capacity (``ClassChaos``)."""
    storms: tuple[StormSpec, ...]
    slowdown: SlowdownSpec | None


def chaos_settings(scenario: Scenario, base_dir: str | Path | None = None) -> ChaosSettings:
    """The scenario's chaos, its lifetime and capacity traces read (``chaos_classes``)."""
    classes = chaos_classes(scenario, base_dir)
    return ChaosSettings(scenario.seed, classes, tuple(scenario.chaos.storms), scenario.chaos.slowdown)
