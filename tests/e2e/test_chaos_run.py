"""The chaos controller for real: lifetimes and storms SIGKILL agents, outputs stay exact."""

from __future__ import annotations

import asyncio
import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from master.chaos.plan import plan_evictions
from master.shell.run import run_scenario
from testbed.app.chaos_check import check_run, format_check
from testbed.chaos_client import ChaosClient, ChaosError
from testbed.workloads.wordcount import read_output
from tests.support.processes import process_alive
from tests.support.runs import assert_clean, expected_counts
from tests.support.scenarios import hold_job, make_scenario, scenario_in
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

WORDCOUNTS = [
    {"workload": "wordcount", "size_mb": 6, "maps": 6, "reduces": 3},
    {"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 2, "submit_at": "2m"},
]


def events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


async def test_high_eviction_rate_with_replacement_keeps_outputs_exact(
    tmp_path: Path, short_tmpdir: Path
) -> None:
    scenario = make_scenario(
        time_scale=60,
        jobs=WORDCOUNTS,
        chaos={
            "transient": {"lifetime": "high", "notice": "30s", "replace": True, "provisioning_delay": "60s"}
        },
    )
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    assert read_output(tmp_path / "outputs/j000") == expected_counts(6, 6, seed=7000)
    assert read_output(tmp_path / "outputs/j001") == expected_counts(4, 4, seed=7001)
    evicted = list(csv.DictReader((tmp_path / "evictions.csv").open()))
    assert evicted and result.summary["evictions"] == len(evicted)
    # The same seed gives the same lifetimes by node ordinal: the run evicts what the plan says.
    planned = {p.node_id: p.lifetime_s for p in plan_evictions(scenario, horizon_s=3600)}
    for row in evicted:
        assert float(row["lifetime_trace_s"]) == pytest.approx(planned[row["node_id"]], abs=1e-3)
    lost = {e["node"]: e for e in events(tmp_path) if e["event"] == "node_lost"}
    assert {row["node_id"] for row in evicted} <= set(lost)
    assert all(lost[row["node_id"]]["reason"] == "evicted" for row in evicted)
    assert_notices_reached_master_and_agents(tmp_path)
    assert_realism_recorded(tmp_path, evicted)
    assert_clean(tmp_path)
    assert list(short_tmpdir.iterdir()) == [], "a SIGKILLed agent's temp files are the provider's to delete"


async def test_aws_spot_sends_a_rebalance_recommendation_before_its_notice(tmp_path: Path) -> None:
    """Seed 34 at time_scale 7200: the plan gives transient-1 a rebalance recommendation at
    0.74 s (wall), its two-minute notice at 0.79 s and its kill at 0.81 s; the second job,
    submitted at 3 h (1.5 s), keeps the run going past them."""
    jobs = [WORDCOUNTS[0], {**WORDCOUNTS[1], "submit_at": "3h"}]
    chaos = {"transient": {"lifetime": "aws-spot"}}
    scenario = make_scenario(seed=34, time_scale=7200, jobs=jobs, chaos=chaos)
    first = plan_evictions(scenario, horizon_s=3 * 3600)[0]
    assert first.node_id == "transient-1" and first.rebalance_trace_s is not None
    result = await run_scenario(settings_of(scenario), tmp_path)
    assert result.ok, result.summary
    assert read_output(tmp_path / "outputs/j000") == expected_counts(6, 6, seed=34000)
    assert read_output(tmp_path / "outputs/j001") == expected_counts(4, 4, seed=34001)
    journal = [e for e in events(tmp_path) if e.get("node") == "transient-1"]
    kinds = [e["event"] for e in journal]
    assert kinds.index("rebalance_recommendation") < kinds.index("eviction_notice") < kinds.index("eviction")
    timing = next(e for e in journal if e["event"] == "eviction_timing")
    assert timing["intended_s"] == pytest.approx(120 / 7200)
    assert 0 < timing["promised_s"] <= timing["intended_s"]  # a late notice announces what is left
    assert_clean(tmp_path)


def assert_realism_recorded(run_dir: Path, evicted: list[dict[str, str]]) -> None:
    """Every drawn lifetime and every eviction's timing is journaled; ``testbed chaos check``
    reads them back (the numbers it prints are measurements, not asserted: a loaded host only
    makes them larger)."""
    check = check_run(run_dir)
    (fit,) = check.classes
    by_lifetime = [row for row in evicted if row["reason"] == "lifetime"]
    drawn = [e for e in events(run_dir) if e["event"] == "lifetime_drawn"]
    assert fit.drawn == len(drawn) >= len(evicted)
    assert fit.lived == len(by_lifetime)
    timings = {e["node"]: e for e in events(run_dir) if e["event"] == "eviction_timing"}
    assert set(timings) == {row["node_id"] for row in evicted}
    for row in by_lifetime:
        timing = timings[row["node_id"]]
        assert timing["actual_s"] >= timing["drawn_s"] - 1.0  # one trace second: 17 ms of wall time
    assert check.notices.notices > 0 and check.notices.error_p99_ms >= 0
    print(format_check(check))


def assert_notices_reached_master_and_agents(run_dir: Path) -> None:
    """A warned node drains at the master, and its agent logs the notice, if it was up to hear it."""
    record = events(run_dir)
    notices = [e for e in record if e["event"] == "eviction_notice"]
    assert notices
    draining = {
        e["node"] for e in record if e["event"] == "node_draining" and e["reason"] == "eviction_notice"
    }
    # by position: the initial nodes' node_up events come before run_started resets the clock
    up_at = {e["node"]: i for i, e in enumerate(record) if e["event"] == "node_up"}
    heard = [e["node"] for i, e in enumerate(record) if e in notices and up_at.get(e["node"], i) < i]
    assert heard and set(heard) <= draining
    for node in heard:
        assert "eviction notice" in (run_dir / "logs" / f"{node}.log").read_text(), node


async def test_live_eviction_storm_from_the_cli_and_python(tmp_path: Path, isolated_path: None) -> None:
    """`testbed chaos evict --fraction 1 --zone b` into a running run (zone b holds two of the three
    transient nodes), then one named eviction from Python."""
    hold, storm_done = hold_job(tmp_path / "in")  # the run lives until the storm lands (was a 30 s sleep)
    jobs = [{"workload": "wordcount", "size_mb": 8, "maps": 8, "reduces": 4}, hold]
    cluster = {"reserved": 1, "transient": {"count": 3, "zones": {"a": 1, "b": 2}}}
    scenario = scenario_in(
        tmp_path / "in", jobs=jobs, cluster={**cluster, "heartbeat_interval": 0.2, "heartbeat_timeout": 2}
    )
    storms: list[asyncio.Task[Any]] = []

    async def storm() -> tuple[int, str, list[str], dict[str, Any]]:
        try:
            return await evict_live()
        finally:
            storm_done.touch()  # the hold's map ends, and the run with it

    async def evict_live() -> tuple[int, str, list[str], dict[str, Any]]:
        cli = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "testbed.app.cli",
            "chaos",
            "evict",
            "--run",
            str(tmp_path),
            "--fraction",
            "1",
            "--zone",
            "b",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        out, _ = await cli.communicate()
        client = ChaosClient(tmp_path)
        status = await asyncio.to_thread(client.status)
        alive = [n["node"] for n in status["nodes"] if n["class"] == "transient" and n["status"] == "up"]
        named = await asyncio.to_thread(client.evict, nodes=alive[:1])
        return cli.returncode or 0, out.decode(), named, status

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_started" and not storms:
            storms.append(asyncio.get_running_loop().create_task(storm()))

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=on_event)
    code, out, named, status = await storms[0]
    assert code == 0 and "evicted 2 node(s)" in out, out
    assert len(named) == 1
    assert_status_lists_tasks_and_evictions(status)
    assert result.ok, result.summary
    assert read_output(tmp_path / "outputs/j000") == expected_counts(8, 8, seed=7000)
    manual = [e for e in events(tmp_path) if e["event"] == "eviction" and e["reason"] == "manual"]
    assert len(manual) == 3
    assert sorted(e["node"] for e in manual[:2]) == ["transient-1", "transient-2"]  # zone b
    assert_clean(tmp_path)


def assert_status_lists_tasks_and_evictions(status: dict[str, Any]) -> None:
    """GET /status after the CLI's storm: each running attempt, and each eviction so far."""
    running = {(t, n["node"]) for n in status["nodes"] for t in n["running"]}
    assert running and {(t["task"], t["node"]) for t in status["tasks"]} == running
    assert all(t["task"].startswith(t["job"] + ".") and t["attempt"] >= 0 for t in status["tasks"])
    assert status["evictions"] == len(status["evicted"]) == 2
    assert all(e["reason"] == "manual" and e["class"] == "transient" for e in status["evicted"])


async def test_chaos_refuses_nodes_of_other_runs(tmp_path: Path) -> None:
    """Naming a node that is not this run's is refused; a decoy process outside the run survives."""
    decoy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    scenario = make_scenario()
    refusals: list[str] = []

    async def attack() -> None:
        client = ChaosClient(tmp_path)
        for target in ("transient-99", str(decoy.pid), "../../etc"):
            try:
                await asyncio.to_thread(client.evict, nodes=[target])
            except ChaosError as exc:
                refusals.append(str(exc))

    tasks: list[asyncio.Task[None]] = []

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "task_started" and not tasks:
            tasks.append(asyncio.get_running_loop().create_task(attack()))

    try:
        result = await run_scenario(settings_of(scenario), tmp_path, on_event=on_event)
        await tasks[0]
        assert result.ok
        assert len(refusals) == 3 and all("refusing to evict" in r for r in refusals), refusals
        assert result.summary["evictions"] == 0
        assert process_alive(decoy.pid)
    finally:
        decoy.kill()
        decoy.wait()


async def test_aws_spot_with_zones_capacity_and_a_moving_price(tmp_path: Path) -> None:
    """Issue 22's scenario: aws-spot in two zones, a zone-wide revocation of us-east-1b at 1 h
    while spot capacity is out from 1 h to 3 h (a trace), and a price trace that triples at
    2 h. At time_scale 3600 a trace hour is a wall second. The two replacements wait for the
    capacity and launch at 3 h; the outputs stay exact; the report shows the notices, the
    time without capacity, the evictions per zone and the cost under the moving price."""
    from testbed.app.report.build import write_report
    from testbed.app.report.metrics import compute_metrics
    from testbed.app.report.rundir import load_run

    (tmp_path / "outages.csv").write_text("from,to\n1h,3h\n")
    (tmp_path / "prices.csv").write_text("time,price\n0,0.3\n2h,0.9\n")
    run_dir = tmp_path / "run"
    zones = {"us-east-1a": 2, "us-east-1b": 2}
    scenario = make_scenario(
        seed=3,
        time_scale=3600,
        cluster={
            "reserved": 1,
            "transient": {"count": 4, "zones": zones, "price": {"trace": str(tmp_path / "prices.csv")}},
            "heartbeat_interval": 0.2,
            "heartbeat_timeout": 2,
        },
        jobs=[WORDCOUNTS[0], {**WORDCOUNTS[1], "submit_at": "4h"}],
        chaos={
            "transient": {"lifetime": "aws-spot", "capacity": {"trace": str(tmp_path / "outages.csv")}},
            "storms": [{"at": "1h", "evict": {"fraction": 1.0, "zone": "us-east-1b"}}],
        },
    )
    planned = [e for e in plan_evictions(scenario, horizon_s=4 * 3600) if e.reason == "storm"]
    assert [(e.node_id, e.replacement_at_s) for e in planned] == [
        ("transient-2", 3 * 3600.0),
        ("transient-3", 3 * 3600.0),
    ]
    result = await run_scenario(settings_of(scenario), run_dir)
    assert result.ok, result.summary
    assert read_output(run_dir / "outputs/j000") == expected_counts(6, 6, seed=3000)
    assert read_output(run_dir / "outputs/j001") == expected_counts(4, 4, seed=3001)
    record = events(run_dir)
    kinds = [e["event"] for e in record]
    assert (
        kinds.count("launch_waiting") == 2
        and "capacity_unavailable" in kinds
        and "capacity_available" in kinds
    )
    storm = [e["node"] for e in record if e["event"] == "eviction" and e.get("reason") == "storm"]
    assert sorted(storm) == ["transient-2", "transient-3"]
    back = next(e["t"] for e in record if e["event"] == "capacity_available")
    launched = [
        e
        for e in record
        if e["event"] == "node_launching" and e.get("node") in ("transient-4", "transient-5")
    ]
    assert len(launched) == 2 and all(e["t"] >= back for e in launched)  # not before capacity came back
    report = write_report(run_dir)[0].read_text()
    # us-east-1b loses its two to the storm; how many lifetimes end besides depends on how long
    # the run takes (an hour of trace time is a second of wall time, more on a loaded host)
    per_zone = next(line for line in report.splitlines() if line.startswith("Evictions per zone: "))
    counts = {z: int(n) for z, n in (p.rsplit(" ", 1) for p in per_zone.split(": ", 1)[1].split(", "))}
    assert set(counts) <= set(zones) and counts["us-east-1b"] >= 2
    assert sum(counts.values()) == kinds.count("eviction")
    assert "time without capacity" in report and "The price of transient moves" in report
    assert "eviction" in report and "notices:" in report
    transient = next(c for c in compute_metrics(load_run(run_dir)).costs if c.node_class == "transient")
    assert transient.moving_cost is not None and 0.3 < transient.mean_price < 0.9
    assert_clean(run_dir)
