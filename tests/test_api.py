"""The public plugin API: complete, versioned, and the very types the master uses."""

from __future__ import annotations

import re

import master.core.recovery as recovery
import master.core.rounds as rounds
import testbed.api as api
import testbed.api.dag as api_dag
import testbed.api.policy as base
import testbed.api.speculation as api_speculation
import testbed.api.strategy as api_strategy
import testbed.plan as plan
import testbed.wire.protocol as protocol


def test_api_version_is_major_minor() -> None:
    assert re.fullmatch(r"\d+\.\d+", api.API_VERSION)


def test_every_exported_name_exists_and_is_the_masters_own() -> None:
    """A policy's types are testbed.api.policy's, a strategy's the core's (it applies and
    hands out those very classes), the wire messages and plans the agents' and the core's, a
    stage DAG's testbed.api.dag's (which the workloads lower to the plan)."""
    own = (base, recovery, rounds, protocol, plan, api_strategy, api_speculation, api_dag)
    for name in api.__all__:
        if name in ("API_VERSION", "Workload", "SimModel"):  # the workers' own, not the master's
            continue
        home = next(m for m in own if hasattr(m, name))
        assert getattr(api, name) is getattr(home, name), name


def test_a_workloads_optional_members_have_defaults() -> None:
    class Minimal(api.Workload):
        def map(self, record):
            yield record, 1

        def reduce(self, key, values):
            return key

    workload = Minimal()
    assert list(workload.read(b"a\nb\xff\n\nlast")) == ["a", "b\ufffd", "", "last"]
    assert (workload.combine, workload.generate, workload.reference, workload.sim_model) == (None,) * 4
    assert workload.api_version == api.API_VERSION


def test_optional_capabilities_are_declared_with_defaults() -> None:
    class Minimal(api.Autoscaler):
        def decide(self, snapshot, provisioning):
            return []

    snapshot = api.ClusterSnapshot(now=0.0, nodes=(), jobs=())
    scaler = Minimal()
    assert scaler.provisioning_delay_s == 0.0
    assert (scaler.wake_at(snapshot, 0), scaler.facts(snapshot)) == (None, {})
    assert api.Scheduler.needs_all_pending is True
