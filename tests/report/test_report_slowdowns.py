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


def test_the_aggregated_gantt_counts_a_groups_slowed_nodes_and_draws_its_episodes(tmp_path: Path) -> None:
    """130 one-slot nodes (over ``MAX_LANES``: groups of 4) running 390 100 s sleeps: reserved-0
    2x and reserved-1 3x slower from launch, in the first group's label; the episode's 3x from
    150 s to 250 s on its node's row."""
    cluster = {**CLUSTER, "reserved": {"count": 130, "slots": 1}}
    chaos = {"slowdown": {"episodes": [EPISODE], "nodes": {"reserved-0": 2, "reserved-1": 3}}}
    jobs = [{**JOBS[0], "tasks": 390}]  # three waves: the run outlasts the episode
    simulate(tmp_path, cluster=cluster, jobs=jobs, chaos=chaos)
    run = load_run(tmp_path / "run")
    (began,) = [e for e in run.events if e["event"] == "slowdown_episode" and e["began"]]
    figure = gantt(run)
    assert figure is not None
    axes = figure.axes[0]
    assert "130 nodes in" in axes.get_title()
    labels = [tick.get_text() for tick in axes.get_yticklabels()]
    assert labels[0] == "reserved-0 .. reserved-3 (4 r), 2 slowed 2x-3x"
    assert sum("slowed" in label for label in labels) == 1
    (dotted,) = [c for c in axes.collections if c.get_hatch() == ".."]
    (path,) = dotted.get_paths()
    assert sorted({round(float(x), 6) for x, _ in path.vertices}) == [150.0, 250.0]
    (row,) = [g for g, label in enumerate(labels) if began["node"] in _members(label)]
    ys = [float(y) for _, y in path.vertices]
    assert row - 0.5 < min(ys) < max(ys) < row  # in its row's top half
    assert [t.get_text() for t in axes.texts] == ["3x slower"]
    assert "a node's slowdown episode" in [h.get_text() for h in axes.get_legend().get_texts()]


def _members(label: str) -> list[str]:
    """The nodes a group row's label names: ``reserved-4 .. reserved-7 (4 r)``, consecutive."""
    first, _, rest = label.partition(" .. ")
    last = rest.split(" ")[0] if rest else first
    prefix, low = first.rsplit("-", 1)
    return [f"{prefix}-{i}" for i in range(int(low), int(last.rsplit("-", 1)[1]) + 1)]
