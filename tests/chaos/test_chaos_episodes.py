"""Slowdown episodes in the plan (``chaos.slowdown.episodes``): the nodes each one picks, drawn
from the seed as a storm draws its victims, listed by ``testbed chaos plan``; bad input refused."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml

from master.chaos.plan import format_plan, plan_evictions, plan_slowdowns
from testbed.app.cli import main
from tests.support.chaos import scenario


def episodes(*specs: dict, **chaos: object) -> dict:
    return {**chaos, "slowdown": {"episodes": list(specs)}}


def picked(plan) -> list[tuple[float, float, str, int, float]]:
    return [(s.trace_s, s.until_s, s.node_id, s.episode, s.factor) for s in plan]


def test_an_episode_slows_count_nodes_of_its_kind_from_at_for_its_length():
    sc = scenario(
        episodes({"at": "2m", "for": "3m", "nodes": {"count": 2}, "factor": 4}), transient=5, seed=7
    )
    plan = plan_slowdowns(sc, 3600)
    assert [(s.trace_s, s.until_s, s.episode, s.factor) for s in plan] == [(120.0, 300.0, 0, 4.0)] * 2
    assert len({s.node_id for s in plan}) == 2
    assert all(s.node_id.startswith("transient-") for s in plan)


def test_the_same_seed_picks_the_same_nodes_and_seeds_pick_every_node():
    spec = {"at": "1m", "for": "1m", "nodes": {"count": 1, "kind": "any"}, "factor": 2}
    assert picked(plan_slowdowns(scenario(episodes(spec), transient=4, seed=3), 600)) == picked(
        plan_slowdowns(scenario(episodes(spec), transient=4, seed=3), 600)
    )
    counts = Counter(
        plan_slowdowns(scenario(episodes(spec), transient=4, seed=seed), 600)[0].node_id
        for seed in range(200)
    )
    assert set(counts) == {"reserved-0", *(f"transient-{i}" for i in range(4))}
    assert all(20 <= n <= 60 for n in counts.values())  # 40 each expected of a uniform pick


def test_an_episode_picks_among_the_nodes_alive_then():
    """transient-0 dies at 60 s (a storm) and its replacement transient-2 launches at once: the
    youngest node at 120 s is the replacement; an episode after the horizon is not listed."""
    chaos = episodes(
        {"at": "2m", "for": "1m", "nodes": {"count": 1, "select": "youngest"}, "factor": 3},
        {"at": "9m", "for": "1m", "nodes": {"count": 1}, "factor": 3},
        storms=[{"at": "1m", "evict": {"count": 1, "select": "oldest"}}],
    )
    assert picked(plan_slowdowns(scenario(chaos), 500)) == [(120.0, 180.0, "transient-2", 0, 3.0)]


def test_a_node_under_notice_is_not_picked():
    """A storm at 60 s gives one transient node a 5 min notice: an episode at 120 s slowing
    every transient node slows the other one only."""
    chaos = episodes(
        {"at": "2m", "for": "1m", "nodes": {"fraction": 1}, "factor": 2},
        transient={"notice": "5m"},
        storms=[{"at": "1m", "evict": {"count": 1, "select": "oldest"}}],
    )
    (warned,) = plan_evictions(scenario(chaos), 600)
    assert warned.warn_trace_s == 60.0
    others = sorted({"transient-0", "transient-1"} - {warned.node_id})
    assert [s.node_id for s in plan_slowdowns(scenario(chaos), 600)] == others


def test_the_plan_lists_each_episode_with_its_nodes():
    sc = scenario(
        episodes(
            {"at": "2m", "for": "3m", "nodes": {"count": 2}, "factor": 4},
            {"at": "9m", "for": "30s", "nodes": {"count": 1, "kind": "reserved"}, "factor": 1.5},
        ),
        transient=3,
        seed=2,
    )
    first = [s.node_id for s in plan_slowdowns(sc, 3600) if s.episode == 0]
    lines = format_plan([], sc, horizon_s=3600).splitlines()
    assert [line for line in lines if line.startswith("slowdown episode")] == [
        f"slowdown episode 0: 0:02:00.0-0:05:00.0, factor 4 on 2 node(s): {', '.join(first)}",
        "slowdown episode 1: 0:09:00.0-0:09:30.0, factor 1.5 on 1 node(s): reserved-0",
    ]
    assert not any(
        line.startswith("slowdown episode")
        for line in format_plan([], scenario({}), horizon_s=60).splitlines()
    )


@pytest.mark.parametrize(
    ("episode", "field"),
    [
        ({"at": "1m", "for": "1m", "factor": 0.5}, "chaos.slowdown.episodes.0.factor"),
        ({"at": "1m", "for": 0, "factor": 2}, "chaos.slowdown.episodes.0.for"),
        ({"at": "2h", "for": "1m", "factor": 2}, "chaos.slowdown.episodes.0.at"),
        (
            {"at": "1m", "for": "1m", "factor": 2, "nodes": {"count": 0}},
            "chaos.slowdown.episodes.0.nodes.count",
        ),
    ],
)
def test_a_bad_episode_is_refused_in_one_line_naming_its_field(
    tmp_path: Path, episode: dict, field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.yaml"
    data = {"name": "bad", "backend": "sim", "timeout": "1h", "jobs": [{"workload": "sleep"}]}
    path.write_text(yaml.safe_dump({**data, "chaos": episodes(episode)}))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0], err
