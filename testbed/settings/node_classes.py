"""Each node class's chaos, read once by ``resolve``: its lifetime model (and each zone's own),
its notice, whether and after what delay a killed node is replaced, and its capacity schedule.

A lifetime or a capacity may come from a trace file (``lifetime: {trace: ...}``,
``capacity: {trace: ...}``): reading them here, where the scenario is compiled, keeps the
master core from reading a file (its chaos rules take these, ``master.chaos.rules``), and
parses each once, not once per reader.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from testbed.chaosmodels.capacity import CapacitySchedule, parse_capacity
from testbed.chaosmodels.lifetime_model import LifetimeModel
from testbed.chaosmodels.lifetimes import effective_notice, parse_lifetime

if TYPE_CHECKING:  # only typed by it: the core, which imports these, imports no schema
    from testbed.scenario.schema import Scenario


@dataclass
class ClassChaos:
    model: LifetimeModel
    notice: float
    replace: bool
    delay: float
    """The replacement's provisioning delay."""
    zone_models: dict[str, LifetimeModel] = field(default_factory=dict)
    """Zones with a lifetime model of their own (``chaos.<class>.zones``)."""
    capacity: CapacitySchedule | None = None
    """When the class's launches must wait or are refused (None: capacity never runs out).
    Drawn lazily, a pure function of its model, the seed and the class: one run's."""

    def model_for(self, zone: str | None) -> LifetimeModel:
        return self.zone_models.get(zone, self.model) if zone is not None else self.model


def class_chaos(scenario: Scenario, name: str, base_dir: str | Path | None = None) -> ClassChaos:
    """The chaos of the class ``name`` (``chaos.<class>``, or ``cluster.classes.NAME.chaos``)."""
    spec = scenario.node_classes[name].chaos
    model = parse_lifetime(spec.lifetime, base_dir)
    notice = effective_notice(spec.notice, "notice" in spec.model_fields_set, model)
    zone_models = {zone: parse_lifetime(z.lifetime, base_dir) for zone, z in spec.zones.items()}
    capacity = parse_capacity(spec.capacity, base_dir)
    index = scenario.class_index(name)
    schedule = None if capacity is None else CapacitySchedule(capacity, scenario.seed, name, index)
    return ClassChaos(model, notice, spec.replace, spec.provisioning_delay, zone_models, schedule)


def chaos_classes(scenario: Scenario, base_dir: str | Path | None = None) -> dict[str, ClassChaos]:
    """Every node class's chaos (``class_chaos``), by name."""
    return {name: class_chaos(scenario, name, base_dir) for name in scenario.node_classes}
