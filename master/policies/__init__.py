"""Scheduling, placement and autoscaling policies: pure decisions over cluster snapshots.

``policy.options`` in a scenario holds one mapping per policy name, e.g.
``options: {yarn-me: {max_elastic_per_node: 2}}``.
"""

from __future__ import annotations

from typing import Any

from master.policies.base import Autoscaler, Scheduler
from master.policies.cloudcoaster import CloudCoasterAutoscaler
from master.policies.eagle import EagleScheduler, Partition, short_partition_size, split_partitions
from master.policies.fifo import FifoScheduler
from master.policies.static import StaticAutoscaler
from master.policies.yarn import YarnScheduler, checked_options
from master.policies.yarn_me import YarnMeScheduler
from testbed.durations import parse_duration
from testbed.scenario import Scenario, ScenarioError

EAGLE_OPTIONS = frozenset({"short_fraction", "probes", "queue_order", "on_demand_copies"})
CLOUDCOASTER_OPTIONS = frozenset({"threshold", "r", "p", "provisioning_delay"})
DEFAULT_SHORT_FRACTION = 0.1


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
        if name == "eagle":
            return _eagle(scenario, options)
    except ValueError as exc:
        raise ScenarioError([f"policy.options.{name}: {exc}"]) from None
    if name == "fifo":
        raise ScenarioError([f"policy.options.fifo: fifo takes no options, found {sorted(options)}"])
    raise ScenarioError(
        [f"policy.scheduler: {name!r} is not wired into the master yet; use fifo, yarn, yarn-me or eagle"]
    )


def _eagle(scenario: Scenario, options: dict[str, Any]) -> EagleScheduler:
    knobs = checked_options(options, EAGLE_OPTIONS, "eagle")
    short_fraction(scenario)  # checked here so that a bad fraction is a scenario error
    knobs.pop("short_fraction", None)
    return EagleScheduler(seed=scenario.seed, **knobs)


def short_fraction(scenario: Scenario) -> float:
    """``policy.options.eagle.short_fraction``: the reserved nodes' share in the short-only partition."""
    value = options_for(scenario, "eagle").get("short_fraction", DEFAULT_SHORT_FRACTION)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"short_fraction must be a number in [0, 1), got {value!r}")
    short_partition_size(1, value)  # raises ValueError outside [0, 1)
    return float(value)


def reserved_partitions(scenario: Scenario, node_ids: list[str]) -> dict[str, Partition]:
    """Each on-demand node's partition under ``scheduler: eagle`` (all ``general`` otherwise)."""
    if scenario.policy.scheduler != "eagle":
        return dict.fromkeys(node_ids, "general")
    return split_partitions(node_ids, short_fraction(scenario))


def make_autoscaler(scenario: Scenario) -> Autoscaler:
    """The scenario's autoscaler; a ScenarioError (exit 2) when it cannot be built.

    ``cloudcoaster`` resizes Eagle's short-only partition, so it needs ``scheduler: eagle``;
    its ``provisioning_delay`` is trace time, given to the policy in wall seconds.
    """
    name = scenario.policy.autoscaler
    options = options_for(scenario, name)
    try:
        if name == "static":
            checked_options(options, frozenset(), "static")
            return StaticAutoscaler()
        if scenario.policy.scheduler != "eagle":
            raise ScenarioError(
                [f"policy.autoscaler: cloudcoaster resizes Eagle's short-only partition; "
                 f"it needs scheduler: eagle, found {scenario.policy.scheduler!r}"]
            )  # fmt: skip
        knobs = checked_options(options, CLOUDCOASTER_OPTIONS, "cloudcoaster")
        delay = parse_duration(knobs.get("provisioning_delay", "120s"))
        return CloudCoasterAutoscaler(
            threshold=float(knobs.get("threshold", 0.95)),
            r=float(knobs.get("r", 3)),
            p=float(knobs.get("p", 0.5)),
            provisioning_delay_s=scenario.trace(delay),
            short_on_demand=short_partition_size(scenario.cluster.reserved.count, short_fraction(scenario)),
        )
    except (ValueError, TypeError) as exc:
        raise ScenarioError([f"policy.options.{name}: {exc}"]) from None
