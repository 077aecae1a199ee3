"""The cluster, the chaos and the jobs compiled once (``RunSettings.cluster``, ``.chaos``,
``.jobs``): each class's shape is the scenario's, and the master core runs a whole simulated
run without reading the scenario (it reads these instead)."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from master.sim.run import sim_settings, simulate
from testbed.scenario.schema import Scenario, load_scenario
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
CORE_MODULES = ("master.core", "master.chaos.rules")
"""The core and its chaos rules: pure functions of the compiled settings."""


def test_each_class_chaos_is_read_once_with_the_settings() -> None:
    settings = resolve(load_scenario(SCENARIOS / "eviction-storm.yaml"), Host(2.0))
    classes = settings.chaos.classes
    assert set(classes) == {"reserved", "transient"}
    assert classes["transient"].replace == settings.scenario.chaos.transient.replace
    assert not classes["reserved"].model.evicts
    assert settings.chaos.storms == tuple(settings.scenario.chaos.storms) != ()
    assert settings.chaos.seed == settings.seed == settings.scenario.seed


def test_each_class_shape_is_the_scenarios() -> None:
    scenario = load_scenario(SCENARIOS / "firmament-locality.yaml", ["cluster.transient.cpus=3"])
    settings = resolve(scenario, Host(2.0))
    for node_class in ("reserved", "transient"):
        spec, shape = getattr(scenario.cluster, node_class), settings.cluster[node_class]
        assert (shape.count, shape.slots, shape.memory_mb, shape.price_per_hour) == (
            spec.count, spec.slots, spec.memory_mb, spec.price_per_hour,
        )  # fmt: skip
        assert shape.cores == spec.cores
        assert [shape.zone_of(i) for i in range(spec.count + 3)] == [
            spec.zone_of(i) for i in range(spec.count + 3)
        ]
    assert settings.cluster["transient"].cores == 3.0
    zones = {settings.cluster["transient"].zone_of(i) for i in range(24)}
    assert zones == set(scenario.cluster.transient.zones)
    assert settings.cluster.memory_increment_mb == scenario.cluster.memory_increment_mb


def test_the_jobs_are_the_scenarios_then_its_arrivals() -> None:
    scenario = load_scenario(SCENARIOS / "cloudcoaster.yaml")
    settings = resolve(scenario, Host(2.0))
    arriving = scenario.arriving_jobs()
    assert arriving and settings.jobs == (*scenario.jobs, *arriving)
    assert settings.name == scenario.name


class HiddenFromTheCore:
    """A scenario that notes every attribute the core or its chaos rules read of it (the shells
    may read it: they plan the jobs and write the run directory)."""

    def __init__(self, scenario: Scenario) -> None:
        self._scenario = scenario
        self.read_by_core: list[str] = []

    def __getattr__(self, name: str) -> Any:
        caller = sys._getframe(1).f_globals.get("__name__", "")
        if caller.startswith(CORE_MODULES):
            self.read_by_core.append(f"{caller} read scenario.{name}")
        return getattr(self._scenario, name)


@pytest.mark.parametrize("name", ["eviction-storm", "cloudcoaster", "firmament-locality"])
def test_the_core_reads_no_scenario_through_a_whole_run(name: str, tmp_path: Path) -> None:
    """Storms, replacements and zones (eviction-storm, firmament-locality), Eagle's partitions
    and arrivals (cloudcoaster): the core takes them from the settings, never the scenario."""
    settings = sim_settings(load_scenario(SCENARIOS / f"{name}.yaml", ["seed=3"]))
    hidden = HiddenFromTheCore(settings.scenario)
    shell, ok = simulate(replace(settings, scenario=hidden), tmp_path)  # type: ignore[arg-type]
    assert ok and shell.core.records.all_succeeded()
    assert hidden.read_by_core == []
