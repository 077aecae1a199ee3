"""The three eviction-recovery strategies end to end: exact outputs under evictions,
checkpoints and pushes really made, and Pado's exactly-once commit when a transient
node dies in the middle of a push."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from master.shell.run import run_scenario
from tests.support.runs import JOBS, assert_clean, assert_exact, evict_first_if_none
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

CLUSTER = {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 5}


def events(run_dir: Path, name: str) -> list[dict[str, Any]]:
    lines = (run_dir / "events.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["event"] == name]


FETCH_BACK = {"spark-checkpoint": {"read_from": "checkpoint"}}
"""spark-checkpoint's readers fetching the copies back from the reserved node."""


@pytest.mark.parametrize(
    ("strategy", "options"),
    [("spark", {}), ("spark-checkpoint", {}), ("spark-checkpoint", FETCH_BACK), ("pado", {})],
    ids=["spark", "spark-checkpoint", "spark-checkpoint-fetch-back", "pado"],
)
async def test_every_workload_exact_under_high_eviction_rate(
    tmp_path: Path, strategy: str, options: dict[str, Any]
) -> None:
    scenario = make_scenario(
        time_scale=60,
        cluster=CLUSTER,
        jobs=JOBS,
        policy={"strategy": strategy, "options": options},
        chaos={"transient": {"lifetime": "high", "replace": True, "provisioning_delay": "30s"}},
    )
    result = await run_scenario(settings_of(scenario), tmp_path, on_event=evict_first_if_none())
    assert result.ok, result.summary
    assert result.summary["evictions"] > 0
    assert_exact(scenario, tmp_path)
    plans = {p.name: json.loads(p.read_text()) for p in (tmp_path / "dags").iterdir()}
    assert sorted(plans) == ["j000.json", "j001.json", "j002.json"]
    assert {p["strategy"] for p in plans.values()} == {strategy}
    classes = {t["node_class"] for t in events_tasks(tmp_path)}
    if strategy == "spark-checkpoint":
        assert result.summary["bytes_checkpointed"] > 0 and classes == {"transient"}
    if strategy == "pado":
        assert result.summary["bytes_pushed"] > 0
        pagerank = plans["j002.json"]["physical_stages"]
        assert [s["executors"] for s in pagerank][:2] == [["transient"], ["reserved"]]
    assert_clean(tmp_path)


def events_tasks(run_dir: Path) -> list[dict[str, str]]:
    import csv

    return [r for r in csv.DictReader((run_dir / "tasks.csv").open()) if r["status"] == "succeeded"]


async def test_pado_commits_exactly_once_when_a_node_dies_mid_push(tmp_path: Path) -> None:
    """Wordcount sums counts, so a map output processed twice (or not at all) would
    change the result. Pushes are slowed to 1 Mbit/s; the node of the first task to
    start pushing is killed at once, in the middle of its push. Each task pushes its
    own output here (no partial aggregation: tests/e2e/test_pado_runtime.py covers it)."""
    scenario = make_scenario(
        cluster=CLUSTER,
        jobs=[{"workload": "wordcount", "size_mb": 3, "maps": 3, "reduces": 2, "memory_mb": 64}],
        policy={
            "strategy": "pado",
            "options": {"pado": {"push_bandwidth_mbps": 1, "aggregate_max_tasks": 1}},
        },
    )
    victim: dict[str, Any] = {}

    def evict_first_pusher(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_pushing" and not victim:
            victim.update(record, master=master)
            asyncio.get_running_loop().create_task(master.provider.evict(record["node"]))

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=evict_first_pusher)
    assert victim and result.ok, result.summary
    assert_exact(scenario, tmp_path)
    task, attempt = victim["task"], victim["attempt"]
    received = {(r["task"], r["attempt"]) for r in events(tmp_path, "push_received")}
    assert (task, attempt) not in received  # the node died before its push arrived whole
    commits = events(tmp_path, "push_commit")
    accepted = [(r["task"], r["attempt"]) for r in commits if r["verdict"] == "accepted"]
    assert len(accepted) == len({t for t, _ in accepted}) == 3  # one attempt per map task
    assert (task, attempt) not in accepted and any(t == task for t, _ in accepted)
    ledger = victim["master"].core.strategy.jobs["j000"].ledger
    for receiver in ("j000.s1.t0", "j000.s1.t1"):
        assert ledger.inputs_for(receiver) == dict(accepted)
    assert result.summary["relaunched_tasks"] >= 1
    assert_clean(tmp_path)
