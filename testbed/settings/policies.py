"""A scenario's policies found in the registry (``testbed/registry.py``) the way a plugin is:
by name, its options checked, built, checked against its interface. No built-in is imported by
name here: the registry's entry points name them, so the settings need no import of ``master``.

``policy.options`` in a scenario holds one mapping per policy name, e.g.
``options: {yarn-me: {elastic_disk_mb_s: 100}}``.
"""

from __future__ import annotations

from typing import Any

from testbed.scenario.plugins import find_plugin
from testbed.scenario.schema import Scenario, ScenarioError


def options_for(scenario: Scenario, *path: str) -> dict[str, Any]:
    """The mapping at ``policy.options.<path>``: a policy's name (a plugin's ``options_path``:
    a speculation rule's is ``speculation``, its name)."""
    options: Any = scenario.policy.options
    for depth in range(len(path)):
        options = options.get(path[depth], {})
        if not isinstance(options, dict):
            at = ".".join(path[: depth + 1])
            raise ScenarioError([f"policy.options.{at}: expected a mapping of option: value"])
    return options


def make_policy(kind: str, scenario: Scenario) -> Any:
    """The scenario's policy of ``kind`` (``policy.<kind>``), a built-in or a plugin, built
    with ``policy.options.<its name>`` (a speculator's: ``policy.options.speculation.<its name>``);
    a ScenarioError (exit 2) when it cannot be."""
    name = getattr(scenario.policy, kind)
    plugin = find_plugin(kind, name, f"policy.{kind}")
    return plugin.build(options_for(scenario, *plugin.options_path), scenario)


def added_transient_nodes(scenario: Scenario) -> int:
    """The most transient nodes the autoscaler may run beyond the scenario's count, for sizing
    the scale model before the run (``dilation: auto``): its class's ``budget_before_run(options,
    scenario)`` when it defines one (CloudCoaster's budget), else 0 (size for the scenario's count)."""
    try:
        plugin = find_plugin("autoscaler", scenario.policy.autoscaler, "policy.autoscaler")
    except ScenarioError:
        return 0  # an autoscaler that cannot be found: building it says so, with the other problems
    budget = getattr(plugin.target, "budget_before_run", None)
    return 0 if budget is None else int(budget(options_for(scenario, *plugin.options_path), scenario))
