"""The scenario's policies typed by kind (``testbed.settings.policies.make_policy`` builds them
from the registry the way a plugin is), their provenance, and Eagle's partitions."""

from __future__ import annotations

from typing import Any

from master.schedulers.eagle import Partition, short_fraction_of, split_partitions
from testbed import registry
from testbed.api import Strategy
from testbed.api.policy import Autoscaler, Scheduler
from testbed.api.speculation import Speculator
from testbed.scenario.plugins import find_plugin
from testbed.scenario.schema import PluginJob, Scenario
from testbed.settings.policies import make_policy, options_for

POLICY_KINDS = ("scheduler", "strategy", "autoscaler", "speculation")


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
