"""The eviction-recovery strategies on the running master: ``spark``, ``spark-checkpoint``, ``pado``.

The pure decisions live in ``master/recovery/lineage.py``, the Pado compiler in
``master/recovery/pado_compiler.py`` and Pado's runtime rules in ``pado_rules.py``;
``spark.py`` and ``pado.py`` here map them onto the physical plans of our
workloads (``testbed/workloads/*.plan``) and turn the core's events into
decisions the core applies: each is a ``testbed.api.Strategy``, with two
queries (``plan``, ``launch``) and one handler per event (job submitted, task
started, task succeeded, block reported, push reported, tick, reconnected, node
lost); see docs/strategies.md, section 6.
"""

from __future__ import annotations

from master.policy_setup import options_for
from master.recovery.pado import PadoStrategy
from master.recovery.spark import CheckpointStrategy, SparkStrategy
from testbed.api import Strategy
from testbed.scenario.plugins import find_plugin
from testbed.scenario.schema import Scenario, ScenarioError

STRATEGIES = {"spark": SparkStrategy, "spark-checkpoint": CheckpointStrategy, "pado": PadoStrategy}


def make_strategy(scenario: Scenario) -> Strategy:
    """The scenario's strategy, built in or a plugin (an import path or an entry point of
    ``transient_testbed.strategies``, built with ``policy.options.<name>``); a ScenarioError
    (exit 2) when it cannot be found or built, or its cluster cannot run it."""
    name = scenario.policy.strategy
    cluster = scenario.cluster
    if name in ("spark-checkpoint", "pado") and (cluster.reserved.count == 0 or cluster.transient.count == 0):
        raise ScenarioError([f"policy.strategy: {name} needs at least one reserved and one transient node"])
    if name in STRATEGIES:
        return STRATEGIES[name](scenario)
    plugin = find_plugin("strategy", name, "policy.strategy", tuple(STRATEGIES))
    built: Strategy = plugin.build(options_for(scenario, name))  # given Strategy's defaults it lacks
    return built
