"""Failure detection's clock: heartbeats heard while the cluster came up still count once the
run's time 0 is set, so a node that falls silent right then is lost after heartbeat_timeout."""

from __future__ import annotations

from pathlib import Path

from master.master import Master, NodeRecord
from testbed.mqtt import BrokerAddress
from tests.conftest import make_scenario


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def master_with_a_node(tmp_path: Path, clock: Clock) -> tuple[Master, NodeRecord]:
    master = Master(
        make_scenario(),
        "run",
        tmp_path,
        provider=object(),  # type: ignore[arg-type]  (not used before run())
        broker=BrokerAddress.parse("mqtt://127.0.0.1:1"),
        token="t",
        agent_command=lambda node_id, node_class: [],
    )
    master.journal.clock, master.journal.t0 = clock, clock()
    node = NodeRecord("transient-0", "transient", 0, 0.0, 2, 1024, 0.3, status="up")
    master.nodes[node.node_id] = node
    return master, node


async def test_silence_before_time_zero_counts(tmp_path: Path) -> None:
    clock = Clock()
    master, node = master_with_a_node(tmp_path, clock)
    clock.now += 8  # the other nodes take 8 s to come up; this one was heard just now
    node.last_seen = master.journal.now()
    clock.now += 1.5
    master._start_clock()
    assert master.journal.now() == 0
    assert master.journal.now() - node.last_seen == 1.5
