"""The runtime chaos controller against a stand-in master: each node is evicted at most once.

No agent process and no broker: the stand-in provider's kill waits for a gate the
test opens, so two eviction requests for one node overlap the way a storm kill and
a lifetime expiry a moment apart do in a real run.
"""

from __future__ import annotations

import asyncio
from typing import Any

from master.chaos.controller import ChaosController, RealClock
from master.chaos.rules import KILL, LAUNCH, STORM, WARN, ChaosRules, VirtualClock
from master.core.nodes import NodeRecord
from tests.conftest import make_scenario


class StandInMaster:
    """Just what ``ChaosController.evict`` uses of ``master.master.Master``."""

    def __init__(self) -> None:
        self.scenario = make_scenario(chaos={"transient": {"lifetime": "none", "replace": False}})
        node = NodeRecord("transient-0", "transient", 0, 0.0, 1, 256, 0.3, status="up")
        self.nodes = {node.node_id: node}
        self.provider = self
        self.live = set(self.nodes)
        self.gate = asyncio.Event()
        self.kills: list[str] = []
        self.recorded: list[tuple[str, str]] = []
        self.journal = self

    def now(self) -> float:
        return 0.0

    def event(self, name: str, **fields: Any) -> None:
        self.recorded.append((fields["node"], name))

    def owns(self, node_id: str) -> bool:
        return node_id in self.live

    async def evict(self, node_id: str) -> None:
        """Like the local provider: the node is the run's until its process has died."""
        self.kills.append(node_id)
        await self.gate.wait()
        self.live.remove(node_id)

    def stored_bytes(self) -> dict[str, int]:
        return {}

    def record_eviction(self, node: NodeRecord, reason: str, *_: Any) -> None:
        self.recorded.append((node.node_id, reason))


async def test_a_node_killed_by_a_storm_is_not_evicted_again_by_its_lifetime() -> None:
    master = StandInMaster()
    controller = ChaosController(master)  # type: ignore[arg-type]

    async def open_gate() -> None:
        master.gate.set()

    done = await asyncio.gather(
        controller.evict("transient-0", "storm"), controller.evict("transient-0", "lifetime"), open_gate()
    )
    assert done[:2] == [True, False]
    assert master.recorded == [("transient-0", "storm"), ("transient-0", "eviction_timing")]
    assert master.kills == ["transient-0"]


def test_a_class_the_autoscaler_manages_is_not_replaced_after_an_eviction() -> None:
    controller = ChaosController(StandInMaster())  # type: ignore[arg-type]
    classes = controller.rules.classes
    assert classes["transient"].replace is False  # the scenario's own setting
    classes["reserved"].replace = True
    controller.stop_replacing("reserved")
    assert classes["reserved"].replace is False


async def test_the_real_clock_orders_simultaneous_actions_as_the_virtual_one() -> None:
    """Scheduled in the reverse of their order: both clocks run warnings, kills, launches,
    storms, and ties of one kind in the order they were scheduled."""
    actions = [(STORM, "storm"), (LAUNCH, "launch"), (KILL, "kill a"), (KILL, "kill b"), (WARN, "warn")]
    expected = ["warn", "kill a", "kill b", "launch", "storm"]
    virtual, ran_virtually = VirtualClock(), []
    for priority, name in actions:
        virtual.at(5.0, priority, lambda name=name: ran_virtually.append(name))
    virtual.run(horizon=5.0)
    assert ran_virtually == expected
    real, ran, all_ran = RealClock(lambda: 5.0, time_scale=60.0), [], asyncio.Event()

    def record(name: str) -> None:
        ran.append(name)
        if len(ran) == len(actions):
            all_ran.set()

    for priority, name in actions:
        real.at(5.0 * 60, priority, lambda name=name: record(name))
    await all_ran.wait()
    assert ran == expected


class StormLog:
    """A world of no nodes that notes the storms that fire."""

    def __init__(self) -> None:
        self.fired: list[float] = []
        self.clock = VirtualClock()

    def candidates(self) -> list[Any]:
        return []

    def stored_bytes(self) -> dict[str, int]:
        return {}

    def storm_fired(self, event: Any, candidates: Any, victims: list[str]) -> None:
        self.fired.append(event.at)


def test_a_storm_at_time_zero_fires_though_the_rules_start_a_moment_later() -> None:
    """At time_scale 60, the 0.4 ms the controller takes to start is 24 ms of trace time: a
    storm at 0 s was taken for one a resumed run had already passed, and never fired."""
    storms = [{"at": "0s", "evict": {"count": 1}}, {"at": "1s", "evict": {"count": 1}}]
    world = StormLog()
    world.clock.time = 0.024
    rules = ChaosRules(make_scenario(chaos={"storms": storms}), world.clock, world)  # type: ignore[arg-type]
    rules.start()
    world.clock.run(10.0)
    assert world.fired == [0.0, 1.0]


def test_a_resumed_run_does_not_replay_the_storms_before_its_crash() -> None:
    storms = [{"at": "0s", "evict": {"count": 1}}, {"at": "5s", "evict": {"count": 1}}]
    world = StormLog()
    world.clock.time = 3.0
    rules = ChaosRules(make_scenario(chaos={"storms": storms}), world.clock, world)  # type: ignore[arg-type]
    rules.start(since=3.0)
    world.clock.run(10.0)
    assert world.fired == [5.0]
