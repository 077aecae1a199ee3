"""``resolve(scenario, host)``: the scenario's dilation fixed for ``host`` and its policies built once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from testbed.scenario.fidelity import host_cores
from testbed.scenario.schema import Scenario, ScenarioError


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
    """The scenario's policies, each built once with its validated options."""

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

    @property
    def dilation(self) -> float:
        return self.scenario.fidelity.factor

    @property
    def time_scale(self) -> float:
        return self.scenario.time_scale


def resolve(scenario: Scenario, host: Host, where: str | None = None) -> RunSettings:
    """The settings of ``scenario`` on ``host``; every problem at once as a ``ScenarioError``
    (its lines prefixed with ``where``, the scenario file, when given)."""
    from master.policy_setup import make_autoscaler, make_scheduler, make_speculator, make_strategy
    from master.shell.scale_model import resolve as resolve_dilation

    scenario = resolve_dilation(scenario, host.cores)
    built: dict[str, Any] = {}
    problems: list[str] = []
    makers: dict[str, Callable[[Scenario], Any]] = {
        "scheduler": make_scheduler, "strategy": make_strategy, "autoscaler": make_autoscaler,
        "speculator": make_speculator,
    }  # fmt: skip
    for kind, make in makers.items():
        try:
            built[kind] = make(scenario)
        except ScenarioError as exc:
            problems += [f"{where}: {problem}" if where else problem for problem in exc.problems]
    if problems:
        raise ScenarioError(problems)
    return RunSettings(scenario, host, Policies(**built))
