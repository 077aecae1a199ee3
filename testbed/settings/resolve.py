"""``resolve(scenario, host)``: the scenario's dilation fixed for ``host``, its policies built and its
profiles read, once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from testbed.scenario.schema import Scenario, ScenarioError
from testbed.settings.cluster import ChaosSettings, ClusterSettings, chaos_settings
from testbed.settings.dilation import resolve_dilation
from testbed.settings.policies import make_policy
from testbed.settings.profiles import Profiles, load_profiles
from testbed.settings.run_settings import Host, Policies, RunSettings

T = TypeVar("T")

POLICY_FIELDS = {
    "scheduler": "scheduler", "strategy": "strategy", "autoscaler": "autoscaler", "speculator": "speculation",
}  # fmt: skip
"""Each field of ``Policies`` and the policy kind (``policy.<kind>``) it is built from."""


@dataclass(frozen=True)
class Resolution:
    """What ``resolution`` found: the scenario with its dilation resolved, the policies that
    built and every problem (one line each)."""

    scenario: Scenario
    host: Host
    built: dict[str, Any]
    profiles: Profiles
    chaos: ChaosSettings | None
    problems: tuple[str, ...]
    where: str | None = None
    """The scenario file, that its problems name."""

    def settings(self) -> RunSettings:
        """The run's settings, or a ``ScenarioError`` with every problem."""
        if self.problems:
            raise ScenarioError(list(self.problems))
        scenario = self.scenario
        assert self.chaos is not None  # it is made, or its problems are
        return RunSettings(
            scenario,
            self.host,
            Policies(**self.built),
            self.profiles,
            ClusterSettings.of(scenario),
            self.chaos,
            scenario.time_base,
            jobs=(*scenario.jobs, *scenario.arriving_jobs()),
            name=scenario.name,
        )


def resolution(scenario: Scenario, host: Host, where: str | None = None) -> Resolution:
    """``scenario`` on ``host``: its problems' lines prefixed with ``where``, the scenario file,
    when given (a dilation ``auto`` that fits no host is a ``ScenarioError`` at once)."""
    scenario = resolve_dilation(scenario, host.cores)
    built: dict[str, Any] = {}
    problems: list[str] = []
    for field, kind in POLICY_FIELDS.items():
        built[field], found = _attempt(partial(make_policy, kind, scenario))
        problems += found
    profiles, found = _attempt(partial(load_profiles, scenario))
    problems += found
    chaos, found = _attempt(partial(chaos_settings, scenario))
    named = [f"{where}: {problem}" if where else problem for problem in [*problems, *found]]
    return Resolution(scenario, host, built, profiles or {}, chaos, tuple(named), where)


def refuse_named_classes(scenario: Scenario, backend: str, where: str | None) -> None:
    """Named node classes (``cluster.classes``) run on the simulator, plan (``testbed chaos
    plan``) and run on local processes; Docker, attached nodes and compose files take the
    shorthand only, for now (issue #47)."""
    if scenario.cluster.classes is not None and backend not in ("sim", "local"):
        prefix = f"{where}: " if where else ""
        raise ScenarioError(
            [
                f"{prefix}cluster.classes: named node classes run on the simulator and local processes "
                f"only today (backend: sim or local), not on {backend}; write the cluster as "
                "cluster.reserved and cluster.transient to run it there"
            ]
        )


def _attempt(make: Callable[[], T]) -> tuple[T | None, list[str]]:
    """What ``make`` made, or what it refused, one line each (every part is made: one pass
    says all)."""
    try:
        return make(), []
    except ScenarioError as exc:
        return None, exc.problems


def resolve(scenario: Scenario, host: Host, where: str | None = None) -> RunSettings:
    """The settings of ``scenario`` on ``host``; every problem at once as a ``ScenarioError``."""
    return resolution(scenario, host, where).settings()
