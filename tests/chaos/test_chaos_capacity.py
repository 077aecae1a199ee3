"""Capacity that can run out: alternating available/unavailable periods, launches that wait or are refused."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from master.chaos.plan import capacity_windows, format_plan, plan_evictions
from master.chaos.rules import ChaosRules, VirtualClock
from testbed.chaosmodels.capacity import CapacitySchedule, parse_capacity
from testbed.chaosmodels.lifetimes import parse_lifetime
from testbed.scenario.loading import ScenarioError
from testbed.scenario.schema import load_scenario, parse_scenario
from testbed.settings.cluster import ClusterSettings, chaos_settings
from tests.support.driver import Driver
from tests.support.lazy import lazy_module

stats = lazy_module("scipy.stats")

TWO_EXPONENTIALS = {
    "available": {"exponential": {"mean": "1h"}},
    "unavailable": {"exponential": {"mean": "10m"}},
}


def scenario(capacity: dict[str, Any], transient: int = 2, seed: int = 1, **chaos: Any) -> Any:
    return parse_scenario(
        {
            "name": "capacity",
            "seed": seed,
            "cluster": {"transient": transient, "reserved": 1},
            "jobs": [{"workload": "sleep"}],
            "chaos": {"transient": {"lifetime": {"fixed": "10m"}, "capacity": capacity, **chaos}},
        }
    )


def test_periods_alternate_from_their_models_and_are_a_pure_function_of_the_seed() -> None:
    model = parse_capacity(TWO_EXPONENTIALS)
    assert model is not None
    windows = CapacitySchedule(model, 7, "transient", 1).windows_until(2000 * 3600)
    again = CapacitySchedule(model, 7, "transient", 1).windows_until(2000 * 3600)
    assert windows == again and windows != CapacitySchedule(model, 8, "transient", 1).windows_until(3600)
    starts = np.array([w[0] for w in windows])
    ends = np.array([w[1] for w in windows])
    up = starts - np.concatenate(([0.0], ends[:-1]))  # available first: capacity was there at time 0
    down = ends - starts
    assert len(windows) > 1000 and (up >= 0).all() and (down >= 0).all()
    # each period follows its own model (KS at 1 %, over > 1,000 periods)
    assert stats.kstest(up, "expon", args=(0, 3600)).pvalue > 0.01
    assert stats.kstest(down, "expon", args=(0, 600)).pvalue > 0.01


def test_two_gammas_as_in_skypilots_simulator() -> None:
    model = parse_capacity(
        {
            "available": {"gamma": {"shape": 2, "scale": "30m"}},
            "unavailable": {"gamma": {"shape": 3, "scale": "2m"}},
        }
    )
    assert model is not None
    windows = CapacitySchedule(model, 3, "transient", 1).windows_until(3000 * 3600)
    down = np.array([e - s for s, e in windows])
    assert stats.kstest(down, "gamma", args=(3, 0, 120)).pvalue > 0.01
    gamma = parse_lifetime({"gamma": {"shape": 3, "scale": "2m"}})
    probe = np.array([60.0, 360.0, 900.0])
    assert np.allclose(gamma.cdf_at(probe), stats.gamma.cdf(probe, 3, scale=120))


def test_outage_at_and_next_change_on_a_trace(tmp_path: Path) -> None:
    trace = tmp_path / "outages.csv"
    trace.write_text("from,to\n10m,20m\n# a comment\n1h,65m\n")
    model = parse_capacity({"trace": str(trace)})
    assert model is not None and model.windows == ((600.0, 1200.0), (3600.0, 3900.0))
    schedule = CapacitySchedule(model, 1, "transient", 1)
    assert schedule.outage_at(599.9) is None
    assert schedule.outage_at(600.0) == (600.0, 1200.0)
    assert schedule.outage_at(1200.0) is None  # [from, to)
    assert [schedule.next_change(t) for t in (0.0, 700.0, 1200.0, 3900.0)] == [
        600.0,
        1200.0,
        3600.0,
        math.inf,
    ]


def trace_scenario(tmp_path: Path, windows: str, **capacity: Any) -> Any:
    trace = tmp_path / "outages.csv"
    trace.write_text(windows)
    return scenario({"trace": str(trace), **capacity}, provisioning_delay="1m")


def test_a_replacement_waits_for_capacity_in_the_plan(tmp_path: Path) -> None:
    """Kills at 10m (fixed lifetimes), replacements due at 11m; capacity is out 630 s-25m."""
    plan_scenario = trace_scenario(tmp_path, "630,25m\n")
    plan = plan_evictions(plan_scenario, 40 * 60)
    first = [e for e in plan if e.trace_s == 600.0]
    assert [e.node_id for e in first] == ["transient-0", "transient-1"]
    assert [e.replacement_at_s for e in first] == [1500.0, 1500.0]
    assert [e.replacement_wait_s for e in first] == [840.0, 840.0]
    replacements = [e for e in plan if e.launched_s == 1500.0]
    assert [e.node_id for e in replacements] == ["transient-2", "transient-3"]  # killed at 25m + 10m
    assert [e.replacement_at_s for e in replacements] == [2160.0, 2160.0]  # capacity is back
    text = format_plan(plan, plan_scenario, horizon_s=40 * 60)
    assert "transient capacity out 1 times, 14m30s in all: 0:10:30.0-0:25:00.0" in text
    assert "0:25:00.0 (waited)" in text
    assert "2 replacements waited for capacity (28m in all)" in text


def test_a_launch_waiting_longer_than_max_wait_is_refused(tmp_path: Path) -> None:
    plan = plan_evictions(trace_scenario(tmp_path, "630,25m\n", max_wait="10m"), 30 * 60)
    assert [e.replacement_refused for e in plan] == [True, True]
    assert [e.replacement_at_s for e in plan] == [None, None]
    assert "2 replacements refused (no capacity)" in format_plan(plan)
    # a wait within max_wait goes ahead
    plan = plan_evictions(trace_scenario(tmp_path, "630,25m\n", max_wait="14m"), 30 * 60)
    assert [e.replacement_at_s for e in plan if e.trace_s == 600.0] == [1500.0, 1500.0]


def test_the_plan_lists_the_drawn_windows_of_a_model() -> None:
    plan_scenario = scenario(TWO_EXPONENTIALS, seed=4)
    windows = capacity_windows(plan_scenario, 10 * 3600)["transient"]
    model = parse_capacity(TWO_EXPONENTIALS)
    assert model is not None
    assert windows == CapacitySchedule(model, 4, "transient", 1).windows_until(10 * 3600)
    assert "capacity available exponential(mean=1h), unavailable exponential(mean=10m)" in format_plan(
        [], plan_scenario
    )


class World:
    """A world that records what the rules tell it."""

    def __init__(self, clock: VirtualClock) -> None:
        self.clock = clock
        self.log: list[tuple[float, str, Any]] = []

    def candidates(self) -> list[Any]:
        return []

    def stored_bytes(self) -> dict[str, int]:
        return {}

    def alive(self, node_id: str) -> bool:
        return False

    def node_class(self, node_id: str) -> Any:
        return "transient"

    def launch(self, node_class: str) -> None:
        self.log.append((self.clock.now(), "launch", node_class))

    def capacity_changed(self, node_class: str, until: float | None) -> None:
        self.log.append((self.clock.now(), "capacity", until))

    def launch_waiting(self, node_class: str, until: float) -> None:
        self.log.append((self.clock.now(), "waiting", until))

    def launch_refused(self, node_class: str, requested: float) -> None:
        self.log.append((self.clock.now(), "refused", requested))


def test_the_rules_announce_capacity_edges_and_show_the_class_unavailable(tmp_path: Path) -> None:
    clock = VirtualClock()
    world = World(clock)
    windowed = trace_scenario(tmp_path, "1m,2m\n3m,4m\n")
    rules = ChaosRules(ClusterSettings.of(windowed), chaos_settings(windowed), clock, world)  # type: ignore[arg-type]
    rules.start()
    seen: list[frozenset[str]] = []
    for t in (30.0, 90.0, 150.0):
        clock.at(t, 0, lambda: seen.append(rules.unavailable()))
    clock.at(70.0, 0, lambda: rules.killed_now("transient"))  # replacement due at 2m10s
    clock.run(600.0)
    assert seen == [frozenset(), frozenset({"transient"}), frozenset()]
    assert world.log == [
        (60.0, "capacity", 120.0),
        (120.0, "capacity", None),
        (130.0, "launch", "transient"),
        (180.0, "capacity", 240.0),
        (240.0, "capacity", None),
    ]


def test_an_autoscalers_launch_waits_or_is_refused_and_is_journaled(tmp_path: Path) -> None:
    """Capacity is out from 1 min to 2 min (time_scale 1: run seconds are trace seconds); a
    launch may wait 30 s for it."""
    driver = Driver(trace_scenario(tmp_path, "1m,2m\n", max_wait="30s"))
    driver.boot()
    chaos, outcomes = driver.core.chaos, []

    def request(name: str) -> None:
        chaos.launch_when_available(
            "transient",
            lambda: outcomes.append(("launched", name)),
            lambda: outcomes.append(("refused", name)),
        )

    driver.act(request, "at 0 s")  # capacity there: at once
    driver.act(request, "at 70 s", at=70.0)  # 50 s to wait: refused
    assert chaos.unavailable() == frozenset({"transient"})
    driver.act(request, "at 95 s", at=95.0)  # 25 s to wait: it waits
    assert outcomes == [("launched", "at 0 s"), ("refused", "at 70 s")]
    driver.advance(120.0)
    assert outcomes[-1] == ("launched", "at 95 s") and driver.now == 120.0
    assert driver.events("launch_refused") == [{"requested_s": 70.0, "class": "transient"}]
    assert driver.events("launch_waiting") == [{"until_s": 120.0, "class": "transient"}]


@pytest.mark.parametrize(
    ("capacity", "message"),
    [
        ("lots", "chaos.transient.capacity: .*expected a mapping"),
        ({"available": {"exponential": {"mean": "1h"}}}, "give both available and unavailable"),
        ({**TWO_EXPONENTIALS, "wait": "5m"}, "unknown key 'wait'"),
        ({"available": "none", "unavailable": {"fixed": "1m"}}, "available: a period model must end"),
        (
            {"available": {"weibull": {"shape": 1}}, "unavailable": {"fixed": "1m"}},
            "available: weibull: missing",
        ),
        ({**TWO_EXPONENTIALS, "max_wait": "soon"}, "max_wait: expected a duration"),
        ({**TWO_EXPONENTIALS, "trace": "x.csv"}, "either trace or available/unavailable"),
    ],
)
def test_bad_capacity_is_one_line_naming_file_and_field(tmp_path: Path, capacity: Any, message: str) -> None:
    path = tmp_path / "scenario.yaml"
    import yaml

    body = {
        "name": "bad",
        "jobs": [{"workload": "sleep"}],
        "chaos": {"transient": {"capacity": capacity}},
    }
    path.write_text(yaml.safe_dump(body))
    with pytest.raises(ScenarioError, match=message) as error:
        load_scenario(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_a_bad_trace_row_names_the_file_and_line(tmp_path: Path) -> None:
    for text, message in [
        ("from,to\n5m,1m\n", "line 2: windows must have to > from"),
        ("1m,5m\n2m,6m\n", "line 2: windows must have to > from and come in order"),
        ("1m,5m\nsoon,6m\n", "line 2: expected from,to"),
    ]:
        trace = tmp_path / "outages.csv"
        trace.write_text(text)
        with pytest.raises(ValueError, match=message):
            parse_capacity({"trace": str(trace)})


def test_a_relative_trace_is_anchored_at_the_scenario_file(tmp_path: Path) -> None:
    (tmp_path / "outages.csv").write_text("1m,2m\n")
    path = tmp_path / "scenario.yaml"
    path.write_text(
        "name: rel\njobs: [{workload: sleep}]\nchaos: {transient: {capacity: {trace: outages.csv}}}\n"
    )
    loaded = load_scenario(path)
    assert loaded.chaos.transient.capacity == {"trace": str(tmp_path.resolve() / "outages.csv")}


def test_the_report_sums_the_time_without_capacity_and_counts_the_launches() -> None:
    from testbed.app.report.evictions_section import capacity_outcomes

    events = [
        {"t": 10.0, "event": "capacity_unavailable", "class": "transient", "until_s": 30.0},
        {"t": 12.0, "event": "launch_waiting", "class": "transient", "until_s": 30.0},
        {"t": 30.0, "event": "capacity_available", "class": "transient"},
        {"t": 50.0, "event": "capacity_unavailable", "class": "transient", "until_s": 90.0},
        {"t": 55.0, "event": "launch_refused", "class": "transient", "requested_s": 52.0},
        {"t": 56.0, "event": "eviction", "class": "transient"},
    ]
    outcome = capacity_outcomes(events, end_s=70.0)["transient"]
    assert (outcome.outages, outcome.unavailable_s, outcome.waits, outcome.refused) == (2, 40.0, 1, 1)


def test_the_masters_snapshot_shows_policies_the_classes_out_of_capacity_and_the_zones(
    tmp_path: Path,
) -> None:
    from tests.support.agents_stand_in import StandInAgents
    from tests.support.masters import offline_master, shell_act
    from tests.support.scenarios import make_scenario

    (tmp_path / "outages.csv").write_text("0,1000h\n")  # out from the start, for the whole test
    scenario = make_scenario(
        cluster={"reserved": 1, "transient": {"count": 2, "zones": {"a": 1, "b": 1}}},
        chaos={"transient": {"capacity": {"trace": str(tmp_path / "outages.csv")}}},
    )
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    master = offline_master(scenario, run_dir, attach=True)
    try:
        agents = StandInAgents(master)
        for ordinal in range(2):
            agents.announce(f"transient-{ordinal}", "transient", 2, 1024)
        snapshot, _ = shell_act(master, master.core.snapshot)
        assert snapshot.unavailable == frozenset({"transient"})
        assert sorted((n.node_id, n.zone) for n in snapshot.nodes) == [
            ("transient-0", "a"),
            ("transient-1", "b"),
        ]
    finally:
        master.journal.close()
