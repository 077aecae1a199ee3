"""The autoscaler shell against a stand-in master: launches, provisioning, join times, wake-ups.

No agent process and no broker: the stand-in master keeps node records and a
clock the test moves by hand; the shell runs on the test's event loop.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from master.autoscaling import AutoscalingShell
from master.policies.base import ClusterSnapshot, NodeView, RunningTask
from master.policies.cloudcoaster import CloudCoasterAutoscaler

DELAY = 5.0


@dataclass
class Record:
    node_id: str
    node_class: str
    partition: str
    status: str = "up"
    launched_t: float = 0.0
    long_task: bool = False


@dataclass
class Chaos:
    doomed: set[str] = field(default_factory=set)
    not_replaced: set[str] = field(default_factory=set)
    verdicts: list[float | None] = field(default_factory=list)
    """What ``launch_wait`` answers, in turn (then 0: capacity is there)."""
    asked: list[float] = field(default_factory=list)
    answered: asyncio.Event = field(default_factory=asyncio.Event)

    def node_launched(self, node: Record) -> None:
        pass

    def stop_replacing(self, node_class: str) -> None:
        self.not_replaced.add(node_class)

    def launch_wait(self, node_class: str, waited: float) -> float | None:
        self.asked.append(waited)
        self.answered.set()
        return self.verdicts.pop(0) if self.verdicts else 0.0


class StandInMaster:
    """Just what ``AutoscalingShell`` uses of ``master.master.Master``."""

    def __init__(self) -> None:
        self.now = 0.0
        self.nodes = {
            "g0": Record("g0", "reserved", "general", long_task=True),
            "s0": Record("s0", "reserved", "short"),
        }
        self.chaos = Chaos()
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.journal = self
        self.kicked = asyncio.Event()
        self.released: list[str] = []
        self.provider = self

    def owns(self, node_id: str) -> bool:
        return False  # no process to stop here

    def event(self, name: str, **fields: Any) -> None:
        self.events.append((name, fields))

    def snapshot(self) -> tuple[ClusterSnapshot, dict]:
        views = tuple(
            NodeView(
                n.node_id,
                n.node_class,  # type: ignore[arg-type]
                1,
                1024,
                (RunningTask("L", "j", 64, 0.0, 100.0, long=True),) if n.long_task else (),
                draining=n.status == "draining",
                launched=n.launched_t,
                partition=n.partition,  # type: ignore[arg-type]
            )
            for n in self.nodes.values()
            if n.status in ("up", "draining")
        )
        return ClusterSnapshot(self.now, views, ()), {}

    def kick(self) -> None:
        self.kicked.set()

    async def launch_node(self, node_class: str) -> Record:
        node_id = f"transient-{sum(n.node_class == 'transient' for n in self.nodes.values())}"
        self.nodes[node_id] = Record(node_id, node_class, "short", "launching", launched_t=self.now)
        return self.nodes[node_id]

    def drain(self, node: Record, reason: str) -> None:
        node.status = "draining"

    def release_node(self, node: Record, reason: str) -> None:
        node.status = "gone"
        self.released.append(node.node_id)


def shell_for(master: StandInMaster) -> AutoscalingShell:
    # N = 2 with nothing to replace among the nodes present; K = floor(1 * 2 * 0.5) = 1.
    # g0 runs long: l_r = 1/2 > 0.4 asks for one transient server.
    scaler = CloudCoasterAutoscaler(threshold=0.4, r=1, p=0.5, provisioning_delay_s=DELAY, short_on_demand=2)
    shell = AutoscalingShell(master, scaler)  # type: ignore[arg-type]
    shell.delay_s = 0.0  # the launch itself starts at once here; the policy still sees DELAY
    return shell


async def launched(master: StandInMaster) -> None:
    """Wait until the shell has started the node (it kicks the master when it has)."""
    master.kicked.clear()
    await master.kicked.wait()


async def test_a_launch_counts_as_provisioning_until_the_node_is_up() -> None:
    master = StandInMaster()
    shell = shell_for(master)
    shell.start()
    shell.step()
    assert [f["action"] for name, f in master.events if name == "autoscale"] == ["launch"]
    assert shell.provisioning == 1
    shell.step()  # the same state: no second launch while the first is provisioning
    assert sum(name == "autoscale" for name, _ in master.events) == 1
    await launched(master)
    assert master.nodes["transient-0"].status == "launching" and shell.provisioning == 1
    master.nodes["transient-0"].status = "up"
    assert shell.provisioning == 0
    await shell.stop()


async def test_the_minimum_age_before_a_drain_counts_from_joining() -> None:
    master = StandInMaster()
    shell = shell_for(master)
    shell.start()
    shell.step()
    await launched(master)
    node = master.nodes["transient-0"]  # its process started at t = 0
    master.now, node.status = 4.0, "up"  # it joined at t = 4
    shell.step()
    master.now, master.nodes["g0"].long_task = 6.0, False  # the long load is gone
    shell.step()
    assert node.status == "up"  # launched 6 s ago, but joined only 2 s ago (< DELAY)
    assert shell._wake is not None  # a wake-up is set for t = 4 + DELAY
    master.now = 4.0 + DELAY
    shell.step()  # drained, and released at once: it had nothing to finish
    actions = [(f["action"], f["node"]) for name, f in master.events if name == "autoscale"]
    assert actions[-2:] == [("drain", "transient-0"), ("release", "transient-0")]
    assert master.released == ["transient-0"]
    await shell.stop()


async def test_nodes_under_an_eviction_notice_are_not_seen_by_the_autoscaler() -> None:
    master = StandInMaster()
    shell = shell_for(master)
    shell.start()
    shell.step()
    await launched(master)
    master.nodes["transient-0"].status = "up"
    master.chaos.doomed.add("transient-0")
    shell.step()  # its replacement is launched at once
    assert [f["action"] for name, f in master.events if name == "autoscale"] == ["launch", "launch"]
    assert "transient-0" not in {v.node_id for v in shell.snapshot().nodes}
    await shell.stop()


async def test_the_chaos_controller_does_not_replace_autoscaled_servers() -> None:
    master = StandInMaster()
    shell_for(master).start()
    assert master.chaos.not_replaced == {"transient"}


async def test_a_launch_waits_for_capacity_and_a_refused_one_is_given_up() -> None:
    master = StandInMaster()
    master.chaos.verdicts = [0.01, 0.0]  # out of capacity for 10 ms, then there
    shell = shell_for(master)
    shell.start()
    shell.step()
    await launched(master)
    assert master.chaos.asked == [0.0, 0.01] and "transient-0" in master.nodes
    await shell.stop()

    master = StandInMaster()
    master.chaos.verdicts = [None]  # refused
    shell = shell_for(master)
    shell.start()
    shell.step()
    await master.chaos.answered.wait()
    assert shell.provisioning == 0 and "transient-0" not in master.nodes
    await shell.stop()
