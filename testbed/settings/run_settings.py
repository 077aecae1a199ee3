"""What ``resolve`` compiles a scenario into: ``RunSettings`` (frozen data, no I/O: the core takes it)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from testbed.scenario.time_base import TimeBase
from testbed.settings.cluster import ChaosSettings, ClusterSettings
from testbed.workloads.task_model import Profiles

if TYPE_CHECKING:  # held for the shells; the core imports no schema (pyproject's import contract)
    from testbed.scenario.schema import Scenario


def host_cores() -> float:
    """The cores this process may run on."""
    return float(len(os.sched_getaffinity(0)))


@dataclass(frozen=True)
class Host:
    """What a run's settings depend on of the machine it runs on: an explicit input of ``resolve``."""

    cores: float

    @classmethod
    def this_machine(cls) -> Host:
        """This process's host (read at the CLI's edge, never by the core or the simulator)."""
        return cls(host_cores())


@dataclass(frozen=True)
class Policies:
    """The scenario's policies, each built once with its validated options (they keep a run's
    state: one ``Policies`` serves one run)."""

    scheduler: Any
    strategy: Any
    autoscaler: Any
    speculator: Any


@dataclass(frozen=True)
class RunSettings:
    """A scenario compiled for one host: ``dilation: auto`` resolved, the policies built.

    The master core reads these fields, never ``scenario`` (the shells' and the reports'; the
    import contract keeps the core off the scenario's schema)."""

    scenario: Scenario
    host: Host
    policies: Policies
    profiles: Profiles
    """The task profiles, read once (``testbed.settings.profiles``)."""
    cluster: ClusterSettings
    """Each node class's count, slots, memory, cores, zones and price."""
    chaos: ChaosSettings
    """Each node class's lifetimes, notice, replacement and capacity, the storms and the
    slowdowns, read once (``testbed.settings.cluster``): the core's chaos rules take them."""
    time: TimeBase
    """The run's time base: trace time to run time, the heartbeats (``Scenario.time_base``)."""
    jobs: tuple[Any, ...]
    """The scenario's jobs (``jobs``), then those of its ``arrivals`` as sleep jobs (each once)."""
    name: str

    @property
    def seed(self) -> int:
        """The scenario's seed (the chaos rules draw from it: ``ChaosSettings.seed``)."""
        return self.chaos.seed

    @property
    def dilation(self) -> float:
        return self.time.dilation

    @property
    def time_scale(self) -> float:
        return self.time.time_scale
