"""Optional policy capabilities are declared in the interfaces, with defaults, never probed."""

from __future__ import annotations

from master.autoscalers.cloudcoaster import CloudCoasterAutoscaler
from master.autoscalers.static import StaticAutoscaler
from master.schedulers.eagle import EagleScheduler
from master.schedulers.fifo import FifoScheduler
from master.schedulers.yarn import YarnScheduler
from master.schedulers.yarn_me import YarnMeScheduler
from testbed.api.policy import ClusterSnapshot, Decision, NodeView, RunningTask, Scheduler


class Nothing(Scheduler):
    def schedule(self, snapshot: ClusterSnapshot) -> list[Decision]:
        return []


def test_a_scheduler_sees_every_ready_task_unless_it_says_otherwise() -> None:
    assert Nothing().needs_all_pending
    assert not FifoScheduler().needs_all_pending
    assert YarnScheduler().needs_all_pending and YarnMeScheduler().needs_all_pending
    assert EagleScheduler(seed=1).needs_all_pending


def test_the_autoscaler_defaults() -> None:
    static = StaticAutoscaler()
    snapshot = ClusterSnapshot(0.0, (), ())
    assert static.provisioning_delay_s == 0.0
    assert static.wake_at(snapshot, 0) is None and static.facts(snapshot) == {}


def test_cloudcoaster_journals_its_long_load_and_target() -> None:
    scaler = CloudCoasterAutoscaler(threshold=0.5, r=1, p=0.5, provisioning_delay_s=3.0, short_on_demand=2)
    long_task = RunningTask("L", "j", 64, 0.0, 100.0, long=True)
    nodes = (
        NodeView("reserved-0", "reserved", 1, 1024, (long_task,)),
        NodeView("reserved-1", "reserved", 1, 1024, partition="short"),
        NodeView("reserved-2", "reserved", 1, 1024, partition="short"),
    )
    snapshot = ClusterSnapshot(0.0, nodes, ())
    load = scaler.long_load(snapshot)
    assert scaler.provisioning_delay_s == 3.0
    assert scaler.facts(snapshot) == {
        "long_servers": load.long_servers,
        "total_servers": load.total_servers,
        "target": scaler.target(snapshot),
    }
    assert load.long_servers == 1
