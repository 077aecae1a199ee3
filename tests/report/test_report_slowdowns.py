"""Slow nodes read back from a run's journal: each node's own factor in its lane's label and its
slowdown episodes as dotted spans labelled with their factor (the report's Gantt chart), and a
task's factor over its time (the fidelity monitor's allowance)."""

from __future__ import annotations

from pathlib import Path

from testbed.app.report.gantt import gantt, lane_layout
from testbed.app.report.rundir import load_run
from testbed.chaosmodels.slowdown import SlowSpan, effective_factor, episode_spans, own_factors
from tests.support.sim import simulate
from tests.support.slowdowns import CLUSTER, EPISODE, JOBS


def test_spans_run_from_each_change_of_a_nodes_factor_to_the_next_or_its_end() -> None:
    """a: 4x from 10 (episode 0), 8x from 20 (episode 1 on top), 2x from 30 (0 over), 1 at 40;
    b: 3x from 15 and never restored: to its end, 50."""
    events = [
        {"t": 10.0, "event": "slowdown_episode", "node": "a", "episode": 0, "factor": 4.0, "began": True},
        {"t": 15.0, "event": "slowdown_episode", "node": "b", "episode": 1, "factor": 3.0, "began": True},
        {"t": 20.0, "event": "slowdown_episode", "node": "a", "episode": 1, "factor": 8.0, "began": True},
        {"t": 30.0, "event": "slowdown_episode", "node": "a", "episode": 0, "factor": 2.0, "began": False},
        {"t": 40.0, "event": "slowdown_episode", "node": "a", "episode": 1, "factor": 1.0, "began": False},
        {"t": 0.0, "event": "slowdown_drawn", "node": "a", "class": "transient", "factor": 1.0},
        {"t": 0.0, "event": "slowdown_drawn", "node": "c", "class": "transient", "factor": 1.5},
    ]
    assert episode_spans(events, {"a": 60.0, "b": 50.0}) == [
        SlowSpan("a", 10.0, 20.0, 4.0),
        SlowSpan("b", 15.0, 50.0, 3.0),
        SlowSpan("a", 20.0, 30.0, 8.0),
        SlowSpan("a", 30.0, 40.0, 2.0),
    ]
    assert own_factors(events) == {"c": 1.5}


def test_the_gantt_labels_a_slowed_node_and_draws_its_episode(tmp_path: Path) -> None:
    """reserved-0 2x slower from its launch; the episode's node 3x slower from 150 s to 250 s."""
    chaos = {"slowdown": {"episodes": [EPISODE], "nodes": {"reserved-0": 2}}}
    simulate(tmp_path, cluster=CLUSTER, jobs=JOBS, chaos=chaos)
    run = load_run(tmp_path / "run")
    (began,) = [e for e in run.events if e["event"] == "slowdown_episode" and e["began"]]
    figure = gantt(run)
    assert figure is not None
    axes = figure.axes[0]
    labels = [tick.get_text() for tick in axes.get_yticklabels()]
    assert "reserved-0 (r, 1 slots, 2x slower)" in labels
    assert "reserved-1 (r, 1 slots)" in labels
    (dotted,) = [c for c in axes.collections if c.get_hatch() == ".."]
    (path,) = dotted.get_paths()
    xs = sorted({round(float(x), 6) for x, _ in path.vertices})
    assert xs == [150.0, 250.0]
    assert [t.get_text() for t in axes.texts] == ["3x slower"]
    base = lane_layout(run).base[began["node"]]  # on the episode's node's one lane
    assert sorted({round(float(y), 6) for _, y in path.vertices}) == [base - 0.5, base + 0.5]


def test_a_tasks_factor_averages_its_episodes_one_over_f_over_its_time() -> None:
    """A task from 0 to 10 on a 2x node with a 4x episode from 5 to 15: half its time at 1/2,
    half at 1/8 of its quota: allowed 10 x (1/2 + 1/8) / 2 = 3.125 core-seconds, as a factor
    held throughout would: 10 / 3.125 = 3.2."""
    spans = [SlowSpan("a", 5.0, 15.0, 4.0)]
    assert effective_factor(2.0, spans, 0.0, 10.0) == 3.2
    assert effective_factor(2.0, spans, 20.0, 30.0) == 2.0
    assert effective_factor(1.0, spans, 6.0, 8.0) == 4.0
