"""Slow nodes (``chaos.slowdown``) and speculation on the simulator: factors drawn from the
seed and journaled, slowed tasks, copies that win, and the bad inputs refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.app.cli import main
from testbed.chaosmodels.slowdown import slowdown_factor
from testbed.scenario.chaos import SlowdownSpec
from tests.support.sim import events, rows, simulate

CLUSTER = {"reserved": {"count": 4, "slots": 1}, "transient": 0}
JOB = [{"workload": "sleep", "tasks": 4, "duration": "100s"}]
SLOW = {"slowdown": {"nodes": {"reserved-0": 3}}}


def test_a_slow_nodes_task_takes_factor_times_as_long(tmp_path: Path) -> None:
    simulate(tmp_path, cluster=CLUSTER, jobs=JOB, chaos=SLOW)
    drawn = {e["node"]: e["factor"] for e in events(tmp_path / "run", "slowdown_drawn")}
    assert drawn == {"reserved-0": 3.0, "reserved-1": 1.0, "reserved-2": 1.0, "reserved-3": 1.0}
    spans = {r["node_id"]: float(r["end_s"]) - float(r["start_s"]) for r in rows(tmp_path / "run", "tasks")}
    assert spans["reserved-0"] == pytest.approx(3 * spans["reserved-1"], rel=0.01)
    assert "role" not in rows(tmp_path / "run", "tasks")[0] or not rows(tmp_path / "run", "tasks")[0]["role"]


def test_factors_are_drawn_from_the_seed_per_node() -> None:
    spec = SlowdownSpec.model_validate({"transient": {"factor": {"choice": [[1, 0.5], [4, 0.5]]}}})
    draws = [slowdown_factor(spec, 1, f"transient-{i}", "transient") for i in range(200)]
    assert draws == [slowdown_factor(spec, 1, f"transient-{i}", "transient") for i in range(200)]
    assert set(draws) == {1.0, 4.0} and 60 < draws.count(4.0) < 140
    assert draws != [slowdown_factor(spec, 2, f"transient-{i}", "transient") for i in range(200)]
    assert slowdown_factor(spec, 1, "reserved-0", "reserved") == 1.0


@pytest.mark.parametrize("rule", ["hadoop", "late", "spark"])
def test_a_copy_of_the_slow_nodes_task_wins_and_the_job_ends_sooner(tmp_path: Path, rule: str) -> None:
    cluster = {"reserved": {"count": 5, "slots": 1}, "transient": 0}
    jobs = [{"workload": "sleep", "tasks": 5, "duration": "100s"}]  # one per node
    faulty = {"slowdown": {"nodes": {"reserved-0": 10}}}
    simulate(tmp_path, "none", cluster=cluster, jobs=jobs, chaos=faulty)
    policy = (
        {"speculation": rule, "options": {"speculation": {"spark": {"quantile": 0.75}}}}
        if rule == "spark"
        else {"speculation": rule}
    )
    simulate(tmp_path, rule, cluster=cluster, jobs=jobs, chaos=faulty, policy=policy)
    (slow,) = rows(tmp_path / "none", "jobs")
    (fast,) = rows(tmp_path / rule, "jobs")
    assert float(slow["jct_s"]) == pytest.approx(1000.0, abs=2.0)  # the 10x node's task
    # a copy once a slot frees (100 s), run at full speed: 200 s; spark's once 3 x the median (300 s)
    expected = 400.0 if rule == "spark" else 200.0
    assert float(fast["jct_s"]) == pytest.approx(expected, abs=2.0)
    assert (int(fast["speculative_attempts"]), int(fast["speculative_wins"])) == (1, 1)
    tasks = rows(tmp_path / rule, "tasks")
    winners = [t for t in tasks if t["status"] == "succeeded"]
    assert len(winners) == 5  # each task succeeded once
    assert [(t["node_id"], t["role"]) for t in tasks if t["status"] == "killed"] == [
        ("reserved-0", "original")
    ]
    assert float(fast["wasted_slot_s"]) > 0


@pytest.mark.parametrize(
    ("chaos", "field"),
    [
        ({"slowdown": {"transient": {"factor": 0.5}}}, "chaos.slowdown.transient.factor"),
        ({"slowdown": {"nodes": {"transient-0": 0}}}, "chaos.slowdown.nodes"),
        ({"slowdown": {"reserved": {"factor": {"choice": [[2, 0]]}}}}, "chaos.slowdown.reserved.factor"),
        ({"slowdown": {"colocation": "ec2-2009"}}, "chaos.slowdown.colocation: Input should be 'ec2-2008'"),
    ],
)
def test_a_factor_below_one_is_refused_in_one_line(
    tmp_path: Path, chaos: dict, field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import yaml

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "bad", "backend": "sim", "chaos": chaos, "jobs": JOB}))
    assert main(["validate", str(path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert field in line


@pytest.mark.parametrize(
    ("backend", "says"),
    [
        ("local", "chaos.slowdown: a real run enforces slow nodes by their CPU quota"),
        ("attach", "chaos.slowdown: --backend attach does not enforce slow nodes"),
    ],
)
def test_a_real_backend_refuses_slow_nodes_it_cannot_enforce(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str, says: str
) -> None:
    """An unisolated local run has no CPU quota to divide; an attached deployment's nodes are
    started by someone else: each refused in one line naming the field."""
    import yaml

    data = {"name": "slow", "chaos": SLOW, "cluster": CLUSTER, "jobs": JOB}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["validate", str(path), "--backend", backend]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert any(line.startswith(says) for line in lines), lines
