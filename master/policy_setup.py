"""The scenario's policies typed by kind (``testbed.settings.policies.make_policy`` builds them
from the registry the way a plugin is) and their provenance."""

from __future__ import annotations

from typing import Any

from testbed import registry
from testbed.api import Strategy
from testbed.api.policy import Autoscaler, Scheduler
from testbed.api.speculation import Speculator
from testbed.scenario.plugins import find_plugin
from testbed.scenario.schema import PluginJob, Scenario
from testbed.settings.policies import make_policy

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
