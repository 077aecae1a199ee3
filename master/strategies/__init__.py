"""The eviction-recovery strategies on the running master: ``spark``, ``spark-checkpoint``, ``pado``.

The pure decisions live in ``master/policies/lineage.py``, the Pado compiler in
``master/policies/pado.py`` and Pado's runtime rules in ``pado_rules.py``;
``spark.py`` and ``pado.py`` here map them onto the
physical plans of our workloads (``testbed/workloads/*.plan``) and apply them to
the master's job states. The master calls one hook per event (job submitted,
task ready, task launched, task succeeded, block received, push delivered,
node lost); see docs/strategies.md, section 6.
"""

from __future__ import annotations

from master.core.ports import StrategyPort
from master.strategies.pado import PadoStrategy
from master.strategies.spark import CheckpointStrategy, SparkStrategy
from testbed.scenario import ScenarioError

STRATEGIES = {"spark": SparkStrategy, "spark-checkpoint": CheckpointStrategy, "pado": PadoStrategy}


def make_strategy(master: StrategyPort) -> SparkStrategy:
    """The scenario's strategy; a ScenarioError when its cluster cannot run it."""
    name = master.scenario.policy.strategy
    cluster = master.scenario.cluster
    if name != "spark" and (cluster.reserved.count == 0 or cluster.transient.count == 0):
        raise ScenarioError([f"policy.strategy: {name} needs at least one reserved and one transient node"])
    return STRATEGIES[name](master)
