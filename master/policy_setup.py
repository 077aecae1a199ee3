"""The scenario's policies, built from the registry (``testbed/registry.py``) the way a
plugin is: found by name, its options checked, built, checked against its interface.

``policy.options`` in a scenario holds one mapping per policy name, e.g.
``options: {yarn-me: {elastic_disk_mb_s: 100}}``.
"""

from __future__ import annotations

from typing import Any

from master.autoscalers.cloudcoaster import CloudCoasterAutoscaler
from master.schedulers.eagle import Partition, short_fraction_of, split_partitions
from testbed import registry
from testbed.api import Strategy
from testbed.api.policy import Autoscaler, Scheduler
from testbed.api.speculation import Speculator
from testbed.scenario.plugins import find_plugin
from testbed.scenario.schema import PluginJob, Scenario, ScenarioError

POLICY_KINDS = ("scheduler", "strategy", "autoscaler", "speculation")


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


def make_scheduler(scenario: Scenario) -> Scheduler:
    built: Scheduler = make_policy("scheduler", scenario)
    return built


def make_strategy(scenario: Scenario) -> Strategy:
    built: Strategy = make_policy("strategy", scenario)
    return built


def make_autoscaler(scenario: Scenario) -> Autoscaler:
    built: Autoscaler = make_policy("autoscaler", scenario)
    return built


def make_speculator(scenario: Scenario) -> Speculator:
    built: Speculator = make_policy("speculation", scenario)
    return built


def policy_plugins(scenario: Scenario) -> dict[str, Any]:
    """The scenario's plugins with their import path and version (provenance): the policies
    by role, and ``workloads`` by the name the jobs give them."""
    plugins: dict[str, Any] = {
        kind: find_plugin(kind, name, f"policy.{kind}").provenance()
        for kind in POLICY_KINDS
        if not registry.is_builtin(kind, name := getattr(scenario.policy, kind))
    }
    workloads = {
        job.workload: find_plugin("workload", job.workload, f"jobs.{index}.workload").provenance()
        for index, job in enumerate(scenario.jobs)
        if isinstance(job, PluginJob)
    }
    if workloads:
        plugins["workloads"] = workloads
    return plugins


def short_fraction(scenario: Scenario) -> float:
    """``policy.options.eagle.short_fraction``: the reserved nodes' share in the short-only partition."""
    return short_fraction_of(options_for(scenario, "eagle"))


def reserved_partitions(scenario: Scenario, node_ids: list[str]) -> dict[str, Partition]:
    """Each on-demand node's partition under ``scheduler: eagle`` (all ``general`` otherwise)."""
    if scenario.policy.scheduler != "eagle":
        return dict.fromkeys(node_ids, "general")
    return split_partitions(node_ids, short_fraction(scenario))


def added_transient_nodes(scenario: Scenario) -> int:
    """The most transient nodes the autoscaler may run beyond the scenario's count (its
    budget), for sizing the scale model before the run (dilation ``auto``)."""
    if scenario.policy.autoscaler != "cloudcoaster":
        return 0  # a plugin's budget is unknown before the run: size for the scenario's count
    try:
        return CloudCoasterAutoscaler.sized(options_for(scenario, "cloudcoaster"), scenario).budget
    except (ValueError, TypeError) as exc:
        raise ScenarioError([f"policy.options.cloudcoaster: {exc}"]) from None
