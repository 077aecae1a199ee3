"""Scheduling, placement and autoscaling policies: pure decisions over cluster snapshots."""

from __future__ import annotations

from master.policies.base import Scheduler
from master.policies.fifo import FifoScheduler
from testbed.scenario import Scenario


def make_scheduler(scenario: Scenario) -> Scheduler:
    name = scenario.policy.scheduler
    if name == "fifo":
        return FifoScheduler()
    raise ValueError(f"scheduler {name!r} is not wired into the master yet; use fifo")
