"""``simulation.charge_policy_time``: a round's time passes on the virtual clock before its
decisions take effect, no round starts meanwhile, and summary.json gives every run's
placement latency and round time (``master.core.turns``, ``master.sim.round_times``)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from tests.support.sim import events, simulate
from tests.support.timed_scheduler import ROUND_S

TIMED = "tests.support.timed_scheduler:TwoSecondFifo"
JOBS = [
    {"workload": "sleep", "tasks": 12, "duration": "3s"},
    {"workload": "sleep", "tasks": 6, "duration": "1s", "submit_at": "4.5s"},
]
CLUSTER = {"reserved": {"count": 2, "slots": 2}, "transient": 0}


def run(tmp: Path, name: str, scheduler: str, charge: bool | None) -> tuple[Path, dict[str, Any]]:
    simulation = {} if charge is None else {"charge_policy_time": charge}
    policy = {"scheduler": scheduler}
    result = simulate(tmp, name, cluster=CLUSTER, jobs=JOBS, policy=policy, simulation=simulation)
    assert result.ok, result.summary
    return result.run_dir, result.summary


def test_a_charged_round_lands_its_placements_after_its_modelled_time(tmp_path: Path) -> None:
    run_dir, summary = run(tmp_path, "charged", TIMED, True)
    starts = sorted({e["t"] for e in events(run_dir, "task_started")})
    assert starts[0] >= ROUND_S  # the first round, asked for at time 0, lands at 2 s
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= ROUND_S - 1e-9, starts  # no round starts while one is in flight
    assert summary["policy_time_charged"] is True and summary["solver_time_source"] == "model"
    assert summary["solver_time_p50_s"] == summary["solver_time_p99_s"] == ROUND_S
    assert summary["placement_latency_p50_s"] >= ROUND_S


def test_uncharged_the_same_policy_places_at_once(tmp_path: Path) -> None:
    run_dir, summary = run(tmp_path, "free", TIMED, False)
    assert min(e["t"] for e in events(run_dir, "task_started")) < ROUND_S
    assert summary["policy_time_charged"] is False
    assert summary["placement_latency_p50_s"] == 0.0  # placed in the round that first offered them
    charged = run(tmp_path, "charged", TIMED, True)[1]
    assert summary["solver_time_p50_s"] == charged["solver_time_p50_s"]  # recorded, not charged


def test_news_during_a_charged_round_waits_for_the_next_one(tmp_path: Path) -> None:
    """The second job comes at 1 s, while the round asked for at 0 s is in flight (0 to 2 s):
    its tasks are offered at 2 s and placed at 4 s, 3 s after their turn (the free slots wait)."""
    jobs = [{"workload": "sleep", "tasks": 2, "duration": "3s", "submit_at": at} for at in ("0s", "1s")]
    charged = {"charge_policy_time": True}
    result = simulate(tmp_path, cluster=CLUSTER, jobs=jobs, policy={"scheduler": TIMED}, simulation=charged)
    starts = sorted((e["job"], e["t"]) for e in events(result.run_dir, "task_started"))
    assert [t for _, t in starts] == [ROUND_S, ROUND_S, 2 * ROUND_S, 2 * ROUND_S]
    assert result.summary["placement_latency_p99_s"] == 2 * ROUND_S - 1.0
    assert result.summary["placement_latency_p50_s"] == (ROUND_S + 2 * ROUND_S - 1.0) / 2


def test_a_measured_round_is_charged_its_cpu_time(tmp_path: Path) -> None:
    run_dir, summary = run(tmp_path, "fifo", "fifo", True)
    assert summary["solver_time_source"] == "measured_cpu" and summary["policy_time_charged"]
    assert 0 < summary["solver_time_p50_cpu_s"] < ROUND_S  # CPU seconds, named so
    assert summary["solver_time_p50_s"] is None  # no round had a model's time
    assert min(e["t"] for e in events(run_dir, "task_started")) > 0.0


@pytest.mark.parametrize("scheduler", ["fifo", "yarn", "eagle", "firmament"])
def test_every_scheduler_reports_placement_latency_and_round_time(tmp_path: Path, scheduler: str) -> None:
    summary = run(tmp_path, scheduler, scheduler, None)[1]
    assert summary["policy_time_charged"] is (scheduler == "firmament")
    rounds = "solver_time_p{}_s" if scheduler == "firmament" else "solver_time_p{}_cpu_s"  # model or CPU
    for field in ("placement_latency_p{}_s", rounds):
        median = summary[field.format(50)]
        assert median is not None and median <= summary[field.format(99)]
    if scheduler == "firmament":
        assert summary["solver_time_source"] == "model" and summary["placement_latency_p50_s"] > 0


def test_a_charged_firmament_run_is_the_same_twice(tmp_path: Path) -> None:
    first, second = (run(tmp_path, name, "firmament", None)[0] for name in ("one", "two"))
    assert (first / "events.jsonl").read_bytes() == (second / "events.jsonl").read_bytes()


def test_a_decision_whose_node_went_while_in_flight_is_dropped(tmp_path: Path) -> None:
    """The round asked for at 0 s places both tasks on the only node; a storm evicts it at 1 s,
    before the round lands at 2 s: nothing starts there, and the replacement runs them."""
    result = simulate(
        tmp_path,
        cluster={"reserved": 0, "transient": {"count": 1, "slots": 2}},
        chaos={"storms": [{"at": "1s", "evict": {"fraction": 1.0, "kind": "transient"}}]},
        jobs=[{"workload": "sleep", "tasks": 2, "duration": "3s"}],
        policy={"scheduler": TIMED},
        simulation={"charge_policy_time": True},
    )
    assert result.ok, result.summary
    evicted = {e["node"] for e in events(result.run_dir, "eviction")}
    started = events(result.run_dir, "task_started")
    assert len(evicted) == 1 and len(started) == 2
    assert not [e for e in started if e["node"] in evicted]
    assert min(e["t"] for e in started) > ROUND_S
