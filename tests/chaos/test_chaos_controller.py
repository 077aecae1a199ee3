"""The chaos rules in the master core: each node is evicted once, and the core's clock orders
simultaneous actions as the plan's virtual clock does.

No agent process and no broker: the core is driven by events at chosen times
(``tests.support.driver``) and the tests assert on the commands it returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from master.chaos.rules import KILL, LAUNCH, REBALANCE, STORM, WARN, ChaosRules, VirtualClock
from master.core import commands as cmd
from master.core.events import EvictRequest, Stop
from master.core.timers import TimerHeap, TraceClock
from testbed.scenario.chaos import EvictSpec
from testbed.settings.cluster import ClusterSettings, chaos_settings
from tests.support.driver import Driver
from tests.support.scenarios import make_scenario


def test_a_node_killed_by_a_storm_is_not_evicted_again_by_its_lifetime_or_by_hand() -> None:
    storm = {"at": "1s", "evict": {"count": 1, "kind": "transient"}}
    driver = Driver(make_scenario(chaos={"transient": {"replace": False}, "storms": [storm]}))
    driver.boot()
    driver.advance(1.0)
    ((victim, reason),) = [(e["node"], e["reason"]) for e in driver.events("eviction")]
    assert reason == "storm"
    driver.act(driver.core.chaos.kill, victim, "lifetime", None)  # its lifetime ends a moment later
    again = driver.do(EvictRequest(EvictSpec(count=1), (victim,)))  # and an operator asks too
    assert [c for c in again if isinstance(c, cmd.Evicted)] == [cmd.Evicted(())]
    assert [c.node_id for c in driver.log if isinstance(c, cmd.KillNode)] == [victim]
    assert [e["node"] for e in driver.events("eviction_timing")] == [victim]


def test_a_live_eviction_is_refused_before_time_zero_after_the_stop_and_for_foreign_nodes() -> None:
    driver = Driver(make_scenario(chaos={"transient": {"replace": False}}))
    driver.execute(driver.core.start(0.0))  # the cluster is coming up: no time 0 yet
    early = driver.do(EvictRequest(EvictSpec(count=1)))
    ((refused, why),) = [(c.refused, c.error) for c in early if isinstance(c, cmd.Evicted)]
    assert refused == "not_running" and "has not started: its cluster is coming up (0 of 4 nodes up)" in why
    driver = Driver(make_scenario(chaos={"transient": {"replace": False}}))
    driver.boot()
    foreign = driver.do(EvictRequest(EvictSpec(count=2), ("transient-0", "t9"), frozenset({"transient-0"})))
    assert [c for c in foreign if isinstance(c, cmd.Evicted)] == [
        cmd.Evicted((), "foreign", "refusing to evict transient-0, t9: not live nodes of run core-test")
    ]
    out = driver.do(EvictRequest(EvictSpec(count=1, kind="transient")))
    (taken,) = [c for c in out if isinstance(c, cmd.Evicted)]
    killed = [c.node_id for c in driver.log if isinstance(c, cmd.KillNode)]
    assert len(taken.nodes) == 1 and killed == list(taken.nodes)
    driver.do(Stop())
    late = driver.do(EvictRequest(EvictSpec(count=1)))
    assert [c for c in late if isinstance(c, cmd.Evicted)] == [
        cmd.Evicted((), "not_running", "run core-test is ending: no more evictions")
    ]
    assert not any(isinstance(c, cmd.KillNode) for c in late)


def test_the_chaos_rules_run_on_the_dilated_clock_as_arrivals_and_notices_do() -> None:
    """time_scale 60 and a dilation of 2: a storm at 4 trace minutes comes at 8 run seconds
    (the old controller's clock forgot the dilation: 4 s), its notice of 30 trace seconds is 1 s."""
    storm = {"at": "4m", "evict": {"count": 1, "kind": "transient"}}
    scenario = make_scenario(
        time_scale=60,
        fidelity={"mode": "faithful", "dilation": 2.0},
        chaos={"transient": {"notice": "30s", "replace": False}, "storms": [storm]},
    )
    driver = Driver(scenario)
    driver.boot()
    driver.advance(7.99)
    assert not driver.events("storm")
    driver.advance(8.0)
    assert [c.t for c in driver.log if isinstance(c, cmd.Journal) and c.kind == "storm"] == [8.0]
    driver.advance(9.0)
    (timing,) = driver.events("eviction_timing")
    assert (timing["promised_s"], timing["lead_s"], timing["actual_s"]) == (1.0, 1.0, 270.0)


def test_the_cores_clock_orders_simultaneous_actions_as_the_virtual_one() -> None:
    """Scheduled in the reverse of their order: both clocks run warnings, kills, launches,
    storms, and ties of one kind in the order they were scheduled."""
    actions = [(STORM, "storm"), (LAUNCH, "launch"), (KILL, "kill a"), (KILL, "kill b"), (WARN, "warn")]
    expected = ["warn", "kill a", "kill b", "launch", "storm"]
    virtual, ran_virtually = VirtualClock(), []
    for priority, name in actions:
        virtual.at(5.0, priority, lambda name=name: ran_virtually.append(name))
    virtual.run(horizon=5.0)
    assert ran_virtually == expected
    now = [0.0]
    timers, ran = TimerHeap(lambda: now[0]), []
    trace = TraceClock(timers, time_scale=60.0)
    for priority, name in actions:
        trace.at(5.0 * 60, priority, lambda name=name: ran.append(name))
    assert timers.wake_needed() == 5.0  # run seconds: trace seconds / time_scale
    now[0] = 5.0
    timers.run_due()
    assert ran == expected


def test_an_action_due_in_the_past_runs_now_in_its_priority_as_on_the_virtual_clock() -> None:
    """A warning due before its node launched (a lifetime shorter than the notice) runs at the
    launch, after a rebalance recommendation due then, on both clocks."""
    virtual, ran_virtually = VirtualClock(time=300.0), []
    now = [5.0]
    timers, ran = TimerHeap(lambda: now[0]), []
    trace = TraceClock(timers, time_scale=60.0)
    for clock, log in ((virtual, ran_virtually), (trace, ran)):
        clock.at(300.0, REBALANCE, lambda log=log: log.append("rebalance"))
        clock.at(240.0, WARN, lambda log=log: log.append("warn"))
    virtual.run(horizon=300.0)
    timers.run_due()
    assert ran == ran_virtually == ["rebalance", "warn"]


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
    world.clock.heap.now = 0.024
    stormy = make_scenario(chaos={"storms": storms})
    rules = ChaosRules(ClusterSettings.of(stormy), chaos_settings(stormy), world.clock, world)  # type: ignore[arg-type]
    rules.start()
    world.clock.run(10.0)
    assert world.fired == [0.0, 1.0]


def test_a_resumed_run_does_not_replay_the_storms_before_its_crash() -> None:
    storms = [{"at": "0s", "evict": {"count": 1}}, {"at": "5s", "evict": {"count": 1}}]
    world = StormLog()
    world.clock.heap.now = 3.0
    stormy = make_scenario(chaos={"storms": storms})
    rules = ChaosRules(ClusterSettings.of(stormy), chaos_settings(stormy), world.clock, world)  # type: ignore[arg-type]
    rules.start(since=3.0)
    world.clock.run(10.0)
    assert world.fired == [5.0]


@dataclass(frozen=True)
class LiveNode:
    node_id: str
    node_class: str = "transient"
    launched: float = 0.0
    running: tuple = ()
    zone: str | None = None


class SlowLog(StormLog):
    """Two live transient nodes; notes each episode's change of a node's factor."""

    def __init__(self) -> None:
        super().__init__()
        self.changes: list[tuple[float, str, float, bool]] = []

    def candidates(self) -> list[Any]:
        return [LiveNode("transient-4"), LiveNode("transient-5")]

    def alive(self, node_id: str) -> bool:
        return True

    def slowed(self, node_id: str, factor: float, episode: int, began: bool) -> None:
        self.changes.append((self.clock.now(), node_id, factor, began))


def test_a_resumed_run_continues_an_episode_under_way_for_what_is_left_of_it() -> None:
    """An episode from 2 s to 8 s, a run resumed at 5 s: one of the live nodes 3x slower from 5 s
    to 8 s; an episode over before 5 s is not replayed, one after it runs as planned."""
    episodes = [
        {"at": "2s", "for": "6s", "nodes": {"count": 1}, "factor": 3},
        {"at": "1s", "for": "2s", "nodes": {"count": 1}, "factor": 2},
        {"at": "9s", "for": "1s", "nodes": {"count": 2}, "factor": 4},
    ]
    world = SlowLog()
    world.clock.heap.now = 5.0
    slowed = make_scenario(chaos={"slowdown": {"episodes": episodes}})
    rules = ChaosRules(ClusterSettings.of(slowed), chaos_settings(slowed), world.clock, world)  # type: ignore[arg-type]
    rules.start(since=5.0)
    world.clock.run(20.0)
    ((began, node, factor, _), (ended, again, restored, _), *later) = world.changes
    assert (began, factor, ended, again, restored) == (5.0, 3.0, 8.0, node, 1.0)
    assert [(t, f, b) for t, _, f, b in later] == [(9.0, 4.0, True)] * 2 + [(10.0, 1.0, False)] * 2
