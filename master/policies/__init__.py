"""Scheduling, placement and autoscaling policies: pure decisions over cluster snapshots.

``policy.options`` in a scenario holds one mapping per policy name, e.g.
``options: {yarn-me: {max_elastic_per_node: 2}}``.
"""

from __future__ import annotations

from typing import Any

from master.policies.base import Scheduler
from master.policies.fifo import FifoScheduler
from master.policies.yarn import YarnScheduler
from master.policies.yarn_me import YarnMeScheduler
from testbed.scenario import Scenario, ScenarioError


def options_for(scenario: Scenario, name: str) -> dict[str, Any]:
    options = scenario.policy.options.get(name, {})
    if not isinstance(options, dict):
        raise ScenarioError([f"policy.options.{name}: expected a mapping of option: value"])
    return options


def make_scheduler(scenario: Scenario) -> Scheduler:
    """The scenario's scheduler; a ScenarioError (exit 2) when it cannot be built."""
    name = scenario.policy.scheduler
    options = options_for(scenario, name)
    try:
        if name == "fifo" and not options:
            return FifoScheduler()
        if name == "yarn":
            return YarnScheduler.from_options(options)
        if name == "yarn-me":
            return YarnMeScheduler.from_options(options)
    except ValueError as exc:
        raise ScenarioError([f"policy.options.{name}: {exc}"]) from None
    if name == "fifo":
        raise ScenarioError([f"policy.options.fifo: fifo takes no options, found {sorted(options)}"])
    raise ScenarioError(
        [f"policy.scheduler: {name!r} is not wired into the master yet; use fifo, yarn or yarn-me"]
    )
