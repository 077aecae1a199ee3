"""What ``resolve`` compiles a scenario into: ``RunSettings`` (frozen data, no I/O: the core takes it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from testbed.scenario.fidelity import host_cores
from testbed.scenario.schema import Scenario
from testbed.settings.node_classes import ClassChaos
from testbed.settings.profiles import Profiles
from testbed.wire.protocol import NodeClass


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
    """A scenario compiled for one host: ``dilation: auto`` resolved, the policies built."""

    scenario: Scenario
    host: Host
    policies: Policies
    profiles: Profiles
    """The task profiles, read once (``testbed.settings.profiles``)."""
    chaos: Mapping[NodeClass, ClassChaos]
    """Each node class's lifetimes, notice, replacement and capacity, read once
    (``testbed.settings.node_classes``): the core's chaos rules take them."""

    @property
    def dilation(self) -> float:
        return self.scenario.fidelity.factor

    @property
    def time_scale(self) -> float:
        return self.scenario.time_scale
