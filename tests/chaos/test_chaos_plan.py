"""The planned eviction schedule: storm expansion, lifetimes, replacements, formatting."""

from __future__ import annotations

import numpy as np
import pytest

from master.chaos.plan import _clock, format_plan, plan_evictions
from master.chaos.rules import storm_events
from testbed.chaosmodels.slowdown import slowdown_factor
from testbed.scenario.chaos import StormSpec
from tests.support.chaos import scenario
from tests.support.lazy import lazy_module

stats = lazy_module("scipy.stats")


def storm(**fields) -> StormSpec:
    return StormSpec.model_validate(fields)


def schedule(plan) -> list[tuple[float, str, str]]:
    return [(e.trace_s, e.node_id, e.reason) for e in plan]


# ------------------------------------------------------------------ storm expansion


def test_an_at_storm_fires_once():
    (event,) = storm_events([storm(at="5m", evict={"fraction": 0.5})], seed=1)
    assert (event.at, event.storm, event.event, event.evict.fraction) == (300.0, 0, 0, 0.5)


def test_an_every_storm_repeats_times():
    events = storm_events([storm(at="1m", every="2m", times=3)], seed=1)
    assert [e.at for e in events] == [60.0, 180.0, 300.0]
    assert [e.event for e in events] == [0, 1, 2]


def test_storms_merge_by_time():
    storms = [storm(at=100, every=100, times=2), storm(at=150), storm(at=100)]
    events = storm_events(storms, seed=1)
    assert [(e.at, e.storm) for e in events] == [(100, 0), (100, 2), (150, 1), (200, 0)]


def test_a_window_fires_inside_it_reproducibly():
    window = [storm(**{"from": "10m", "to": "20m", "rate": "1/min"})]
    times = [e.at for e in storm_events(window, seed=4)]
    assert times == sorted(times)
    assert all(600 <= t < 1200 for t in times)
    assert times == [e.at for e in storm_events(window, seed=4)]
    assert times != [e.at for e in storm_events(window, seed=5)]


def test_a_window_is_a_poisson_process():
    window = [storm(**{"from": "10m", "to": "12m", "rate": "2/min"})]  # expect 4 firings
    runs = [[e.at for e in storm_events(window, seed)] for seed in range(1000)]
    counts = np.array([len(times) for times in runs])
    assert counts.mean() == pytest.approx(4.0, abs=0.25)
    assert counts.var() == pytest.approx(4.0, abs=0.8)  # Poisson: variance = mean
    pooled = np.concatenate([np.array(t) for t in runs if t])
    assert stats.kstest(pooled, stats.uniform(loc=600, scale=120).cdf).pvalue > 0.01


def test_different_windows_of_one_seed_are_independent():
    window = {"from": 0, "to": 600, "rate": "1/min"}
    first, second = (
        [e.at for e in storm_events([storm(**window), storm(**window)], seed=1) if e.storm == s]
        for s in (0, 1)
    )
    assert first != second


def test_an_absurd_window_is_refused():
    with pytest.raises(ValueError, match=r"rate x \(to - from\) is at most 100,000"):
        storm(**{"from": 0, "to": "10h", "rate": "10/s"})


# ------------------------------------------------------------------ lifetimes and replacement


def test_fixed_lifetimes_with_replacement():
    transient = {"lifetime": {"fixed": "5m"}, "provisioning_delay": "1m"}
    plan = plan_evictions(scenario({"transient": transient}), horizon_s=1200)
    assert schedule(plan) == [
        (300.0, "transient-0", "lifetime"),
        (300.0, "transient-1", "lifetime"),
        (660.0, "transient-2", "lifetime"),
        (660.0, "transient-3", "lifetime"),
        (1020.0, "transient-4", "lifetime"),
        (1020.0, "transient-5", "lifetime"),
    ]
    assert [e.launched_s for e in plan] == [0, 0, 360, 360, 720, 720]
    assert [e.replacement_at_s for e in plan] == [360, 360, 720, 720, 1080, 1080]
    assert all(e.lifetime_s == 300 and e.warn_trace_s == e.trace_s for e in plan)


def test_without_replacement_the_pool_shrinks():
    transient = {"lifetime": {"fixed": "5m"}, "replace": False}
    plan = plan_evictions(scenario({"transient": transient}), horizon_s=3600)
    assert [e.node_id for e in plan] == ["transient-0", "transient-1"]
    assert all(e.replacement_at_s is None for e in plan)


def test_wall_time_is_trace_time_over_time_scale():
    transient = {"lifetime": {"fixed": "5m"}, "notice": "30s"}
    (first, *_) = plan_evictions(scenario({"transient": transient}, time_scale=10), 600)
    assert (first.trace_s, first.wall_s) == (300.0, 30.0)
    assert (first.warn_trace_s, first.warn_wall_s) == (270.0, 27.0)


def test_a_notice_longer_than_the_lifetime_warns_at_launch():
    transient = {"lifetime": {"fixed": "20s"}, "notice": "1m", "provisioning_delay": "10s"}
    plan = plan_evictions(scenario({"transient": transient}, transient=1), horizon_s=40)
    assert [(e.launched_s, e.warn_trace_s, e.trace_s) for e in plan] == [(0, 0, 20)]


def test_the_horizon_cuts_the_plan():
    transient = {"lifetime": {"fixed": "5m"}}
    assert plan_evictions(scenario({"transient": transient}), horizon_s=299.9) == []
    assert len(plan_evictions(scenario({"transient": transient}), horizon_s=300)) == 2


def test_same_seed_same_plan_and_another_seed_another():
    chaos = {
        "transient": {"lifetime": "high", "notice": "30s", "provisioning_delay": "2m"},
        "storms": [
            {"at": "5m", "evict": {"fraction": 0.5}},
            {"from": "10m", "to": "20m", "rate": "1/min", "evict": {"count": 1, "kind": "any"}},
        ],
    }
    plans = [plan_evictions(scenario(chaos, transient=8, seed=s), 3600) for s in (3, 3, 4)]
    assert plans[0] == plans[1]
    assert schedule(plans[0]) != schedule(plans[2])
    assert {e.reason for e in plans[0]} == {"lifetime", "storm"}
    kills = [e.trace_s for e in plans[0]]
    assert kills == sorted(kills)


def test_lifetimes_are_those_of_the_node_ordinals():
    from testbed.chaosmodels.lifetimes import PRESETS, lifetime_for

    plan = plan_evictions(scenario({"transient": {"lifetime": "high"}}, transient=5), 36000)
    for eviction in plan:
        drawn = lifetime_for(PRESETS["high"], 1, 1, eviction.ordinal)
        assert eviction.lifetime_s == drawn
        assert eviction.trace_s == pytest.approx(eviction.launched_s + drawn)


# ------------------------------------------------------------------ storms in the plan


def test_a_storm_evicts_after_the_notice_and_replacements_take_new_ordinals():
    chaos = {
        "transient": {"notice": "30s", "provisioning_delay": "1m"},
        "storms": [{"at": "5m", "evict": {"fraction": 0.5, "select": "oldest"}}],
    }
    plan = plan_evictions(scenario(chaos, transient=4), horizon_s=3600)
    assert len(plan) == 2
    assert all(e.reason == "storm" and e.storm == 0 for e in plan)
    assert all((e.warn_trace_s, e.trace_s, e.replacement_at_s) == (300, 330, 390) for e in plan)
    assert all(e.lifetime_s is None for e in plan)


def test_an_already_warned_node_is_not_a_storm_candidate():
    chaos = {
        "transient": {"lifetime": {"fixed": "5m"}, "notice": "1m", "replace": False},
        "storms": [{"at": 270, "evict": {"count": 1}}],
    }
    plan = plan_evictions(scenario(chaos, transient=1), horizon_s=3600)
    assert schedule(plan) == [(300.0, "transient-0", "lifetime")]


def test_a_storm_victim_is_not_killed_again_by_its_lifetime():
    chaos = {
        "transient": {"lifetime": {"fixed": "10m"}, "replace": False},
        "storms": [{"at": "1m", "evict": {"count": 1}}],
    }
    plan = plan_evictions(scenario(chaos, transient=2), horizon_s=3600)
    assert [(e.trace_s, e.reason) for e in plan] == [(60.0, "storm"), (600.0, "lifetime")]
    assert plan[0].node_id != plan[1].node_id


def test_storms_can_take_reserved_nodes_with_their_own_replacement_rule():
    chaos = {
        "reserved": {"replace": False},
        "storms": [{"at": 10, "every": 10, "times": 3, "evict": {"count": 1, "kind": "reserved"}}],
    }
    plan = plan_evictions(scenario(chaos, reserved=2), horizon_s=100)
    assert [(e.trace_s, e.node_class) for e in plan] == [(10, "reserved"), (20, "reserved")]
    assert all(e.replacement_at_s is None for e in plan)


def test_a_storm_with_no_candidates_evicts_nothing():
    chaos = {"storms": [{"at": 10, "evict": {"count": 3, "kind": "transient"}}]}
    assert plan_evictions(scenario(chaos, transient=0), horizon_s=100) == []


def test_runtime_dependent_storms_make_what_follows_provisional():
    chaos = {
        "transient": {"lifetime": {"uniform": {"a": "20m", "b": "40m"}}, "provisioning_delay": 60},
        "storms": [
            {"at": "1m", "evict": {"count": 1, "select": "random"}},
            {"at": "10m", "evict": {"count": 1, "select": "busiest"}},
        ],
    }
    plan = plan_evictions(scenario(chaos, transient=3), horizon_s=7200)
    before = [e for e in plan if e.warn_trace_s < 600]
    after = [e for e in plan if e.warn_trace_s >= 600]
    assert before and after
    assert not any(e.provisional for e in before)
    assert all(e.provisional for e in after)


def test_empirical_lifetimes_resolve_against_base_dir(tmp_path):
    (tmp_path / "life.csv").write_text("90\n")
    chaos = {"transient": {"lifetime": {"empirical": str(tmp_path / "life.csv")}}}
    plan = plan_evictions(scenario(chaos, transient=1), horizon_s=100, base_dir=tmp_path)
    assert schedule(plan) == [(90.0, "transient-0", "lifetime")]


# ------------------------------------------------------------------ formatting


def test_format_plan_prints_settings_rows_and_totals():
    chaos = {
        "transient": {"lifetime": {"fixed": "5m"}, "notice": "30s", "provisioning_delay": "1m"},
        "storms": [{"at": "1m", "evict": {"count": 1, "select": "busiest"}}],
    }
    sc = scenario(chaos, transient=2, time_scale=10)
    text = format_plan(plan_evictions(sc, 600), sc)
    lines = text.splitlines()
    assert lines[0] == "scenario plan-test: seed 1, time_scale 10"
    assert "transient (2): lifetime fixed(5m); notice 30s; replaced after 1m" in text
    assert "storm 0: evict 1 of the transient nodes, busiest, at 1m" in text
    assert "0:01:30.0     0:00:09.0    0:01:00.0" in text  # storm victim: kill, wall, warning
    assert "storm 0" in text and "*" in text
    assert lines[-1].startswith("3 evictions: 2 by lifetime, 1 by storms; * = provisional")


def test_the_plan_lists_each_initial_nodes_slowdown_factor_as_drawn():
    chaos = {"slowdown": {"transient": {"factor": {"choice": [[1, 1], [4, 1]]}}, "nodes": {"reserved-0": 3}}}
    sc = scenario(chaos, transient=6, seed=5)
    lines = format_plan([], sc).splitlines()
    start = lines.index("slowdown (initial nodes; a later node draws its factor at launch):")
    ids = [f"transient-{i}" for i in range(6)]
    drawn = {node: slowdown_factor(sc.chaos.slowdown, 5, node, "transient") for node in ids}
    fours = sorted(node for node, factor in drawn.items() if factor == 4)
    ones = sorted(node for node, factor in drawn.items() if factor == 1)
    assert fours and ones  # seed 5 draws both
    assert lines[start + 1 : start + 4] == [
        f"  factor 4: {len(fours)} node(s): {', '.join(fours)}",
        "  factor 3: 1 node(s): reserved-0",
        f"  factor 1: {len(ones)} node(s): {', '.join(ones)}",
    ]
    assert not any(line.startswith("slowdown") for line in format_plan([], scenario({})).splitlines())


def test_format_an_empty_plan():
    assert format_plan([]).splitlines() == [
        "kill (trace)  kill (wall)  warning  node  reason  lifetime  launched  replaced at",
        "0 evictions: 0 by lifetime, 0 by storms",
    ]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (1199.97, "0:20:00.0"),
        (3599.96, "1:00:00.0"),
        (59.94, "0:00:59.9"),
        (90.0, "0:01:30.0"),
        (0.0, "0:00:00.0"),
    ],
)
def test_plan_times_carry_a_rounded_minute(seconds: float, text: str) -> None:
    """A time that rounds up to the next minute reads ``0:20:00.0``, never ``0:19:60.0``."""
    assert _clock(seconds) == text
