"""The cluster and the chaos of a run, read once by ``resolve``: what the master core needs of
each node class (count, slots, memory, cores, zones, price, chaos), and the storms and slowdowns.

The core takes these (``RunSettings.cluster``, ``RunSettings.chaos``) instead of the scenario,
so that a class's shape and chaos come from one place. Both are keyed by the class's name
(its nodes' id prefix): ``reserved`` and ``transient`` in the shorthand form, each of its own
kind; any names with ``cluster.classes`` (README, "Named node classes").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from testbed.chaosmodels.zones import zone_of
from testbed.scenario.chaos import SlowdownSpec, StormSpec
from testbed.settings.node_classes import ClassChaos, chaos_classes
from testbed.wire.protocol import NodeClass

if TYPE_CHECKING:  # only typed by it: the core, which imports these, imports no schema
    from testbed.scenario.schema import Scenario


@dataclass(frozen=True)
class NodeClassShape:
    """One node class's nodes: their kind, how many at the start, and what each has."""

    kind: NodeClass
    """What policies see of its nodes (``NodeView.node_class``)."""
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
    classes: Mapping[str, NodeClassShape]
    """Each class by name, in launch order."""
    memory_increment_mb: int
    """The unit a task's memory grant is rounded up to."""

    def __getitem__(self, name: str) -> NodeClassShape:
        return self.classes[name]

    def first_of(self, kind: str) -> str | None:
        """The first class (in launch order) of ``kind``: the one an autoscaler's launch of that
        kind starts (``Launch.node_class`` is a kind); None if the cluster has none."""
        return next((name for name, shape in self.classes.items() if shape.kind == kind), None)

    def of_kind(self, kind: str) -> list[str]:
        """The classes of ``kind``, in launch order."""
        return [name for name, shape in self.classes.items() if shape.kind == kind]

    def index(self, name: str) -> int:
        """The class's position in launch order: its random streams' key (``lifetime_for``;
        the shorthand's ``reserved`` is 0, ``transient`` 1)."""
        return list(self.classes).index(name)

    @classmethod
    def of(cls, scenario: Scenario) -> ClusterSettings:
        classes = {}
        for name, named in scenario.node_classes.items():
            spec = named.spec
            classes[name] = NodeClassShape(
                named.kind,
                spec.count,
                spec.slots,
                spec.memory_mb,
                spec.cores,
                spec.price_per_hour,
                dict(spec.zones),
            )
        return cls(classes, scenario.cluster.memory_increment_mb)


@dataclass(frozen=True)
class ChaosSettings:
    """What the chaos rules draw from: the seed, each class's chaos, the storms, the slowdowns."""

    seed: int
    classes: Mapping[str, ClassChaos]
    """Each node class's (by name) lifetimes, notice, replacement and capacity (``ClassChaos``)."""
    storms: tuple[StormSpec, ...]
    slowdown: SlowdownSpec | None


def chaos_settings(scenario: Scenario, base_dir: str | Path | None = None) -> ChaosSettings:
    """The scenario's chaos, its lifetime and capacity traces read (``chaos_classes``)."""
    classes = chaos_classes(scenario, base_dir)
    return ChaosSettings(scenario.seed, classes, tuple(scenario.chaos.storms), scenario.chaos.slowdown)
