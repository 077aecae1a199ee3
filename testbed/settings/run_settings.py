"""What ``resolve`` compiles a scenario into: ``RunSettings`` (frozen data, no I/O: the core takes it)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from testbed.scenario.fidelity import host_cores
from testbed.scenario.schema import Scenario
from testbed.settings.cluster import ChaosSettings, ClusterSettings
from testbed.settings.profiles import Profiles


@dataclass(frozen=True)
class Host:
    """What a run's settings depend on of the machine it runs on: an explicit input of ``resolve``."""

    cores: float

    @classmethod
    def this_machine(cls) -> Host:
        """This process's host (read at the CLI's edge, never by the core or the simulator)."""
        return cls(host_cores())


@dataclass(frozen=True)
class TimeBase:
    """A run's clocks: trace seconds to the run's (wall, or emulated) seconds, and its heartbeats.

    The scenario's ``time_scale`` compresses trace time, the dilation stretches every run
    second; heartbeats and their timeout are not compressed, only stretched (``Scenario.trace``,
    ``Scenario.dilated``: the same arithmetic, so a run's times are the same to the bit)."""

    time_scale: float
    dilation: float
    heartbeat_interval_s: float
    heartbeat_timeout_s: float

    @classmethod
    def of(cls, scenario: Scenario) -> TimeBase:
        return cls(
            scenario.time_scale,
            scenario.fidelity.factor,
            scenario.heartbeat_interval_s,
            scenario.heartbeat_timeout_s,
        )

    @property
    def wall_per_trace(self) -> float:
        return self.dilation / self.time_scale

    @property
    def trace_per_wall(self) -> float:
        """Trace seconds per run second (the chaos rules' clock)."""
        return self.time_scale / self.dilation

    def trace(self, seconds: float) -> float:
        """Run seconds for a trace-time duration (divided by time_scale, stretched by the dilation)."""
        return seconds * self.wall_per_trace


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
    """The run's time base: trace time to run time, the heartbeats."""
    jobs: tuple[Any, ...]
    """The scenario's jobs (``jobs``), then those of its ``arrivals`` as sleep jobs (each once)."""
    name: str
    seed: int

    @property
    def dilation(self) -> float:
        return self.time.dilation

    @property
    def time_scale(self) -> float:
        return self.time.time_scale
