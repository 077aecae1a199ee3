"""Run directories for real: reused, resumed twice at once, resumed from elsewhere, evicted into
before the run starts, and left clean when a run or a resumed run ends."""

from __future__ import annotations

import asyncio
import collections
import csv
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from master.shell.run import run_scenario
from testbed.app.report.metrics import nodes_alive
from testbed.app.report.rundir import load_run
from testbed.chaos_client import ChaosClient, ChaosError
from testbed.node.processes import child_env
from testbed.wire.blocks import TOKEN_HEADER
from testbed.workloads.wordcount import read_output, reference_counts
from tests.support.cli import cli, one_line
from tests.support.crash import SCENARIO, events, run_until_crash_point
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


def assert_tidy(run_dir: Path) -> None:
    """No node scratch directory and no uncommitted upload is left in the run directory."""
    assert not (run_dir / "nodes").exists(), sorted((run_dir / "nodes").iterdir())
    staged = [p.name for p in (run_dir / "outputs").rglob(".part-*")]
    assert staged == [], staged


def test_out_into_a_finished_run_is_refused_and_clean_starts_afresh(tmp_path: Path) -> None:
    scenario = tmp_path / "wc.yaml"
    job = {"workload": "wordcount", "size_mb": 2, "maps": 2, "reduces": 4}
    scenario.write_text(yaml.safe_dump({**SCENARIO, "jobs": [job], "name": "reuse"}))
    reuse = tmp_path / "reuse"
    first = cli("run", str(scenario), "--out", str(reuse))
    assert first.returncode == 0, first.stderr
    smaller = ["--set", "jobs.0.reduces=2", "--set", "jobs.0.size_mb=1"]
    line = one_line(cli("run", str(scenario), *smaller, "--out", str(reuse)))
    assert f"{reuse} already holds a run" in line and "--clean" in line
    assert len(list((reuse / "outputs" / "j000").iterdir())) == 4  # the first run, untouched

    again = cli("run", str(scenario), *smaller, "--out", str(reuse), "--clean")
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in (reuse / "outputs" / "j000").iterdir()) == ["part-00000", "part-00001"]
    assert len(list(csv.DictReader((reuse / "jobs.csv").open()))) == 1
    checked = cli("check-output", "--run", str(reuse))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert_tidy(reuse)


def test_two_resumes_at_once_one_is_refused_and_each_partition_is_committed_once(tmp_path: Path) -> None:
    scenario, run_dir = tmp_path / "crash.yaml", tmp_path / "run"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    run_until_crash_point(scenario, run_dir)
    assert (run_dir / "nodes").is_dir()  # the dead agents' scratch directories

    resumes = [
        subprocess.Popen(
            [sys.executable, "-m", "testbed.app.cli", "run", "--resume", str(run_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        for _ in range(2)
    ]
    results = [(p, *p.communicate(timeout=180)) for p in resumes]
    codes = sorted(p.returncode for p, _, _ in results)
    assert codes == [0, 2], [(p.returncode, err[-500:]) for p, _, err in results]
    winner = next(p for p, _, _ in results if p.returncode == 0)
    refused = next(err for p, _, err in results if p.returncode == 2)
    assert refused.strip() == (
        f"testbed run --resume: {run_dir}: in use by another testbed master (pid {winner.pid}); "
        "wait for it to end or stop it, or choose another directory"
    )

    committed = [(e["job"], e["index"]) for e in events(run_dir) if e["event"] == "output_committed"]
    commits = collections.Counter(committed)
    assert set(commits.values()) == {1}, commits
    jobs = [r["job_id"] for r in csv.DictReader((run_dir / "jobs.csv").open())]
    assert sorted(jobs) == ["j000", "j001", "j002"]
    assert json.loads((run_dir / "summary.json").read_text())["succeeded"] == 3
    assert_tidy(run_dir)


def test_a_resume_from_another_directory_reads_the_same_input_and_refuses_a_changed_one(
    tmp_path: Path,
) -> None:
    first, elsewhere = tmp_path / "first", tmp_path / "elsewhere"
    texts = {first: "alpha beta beta\n" * 4000, elsewhere: "gamma delta\n" * 3000}
    for where, text in texts.items():
        (where / "data").mkdir(parents=True)
        (where / "data" / "in.txt").write_text(text)
    crash = {**SCENARIO, "jobs": [*SCENARIO["jobs"][:2], {**SCENARIO["jobs"][2], "input": "data/*.txt"}]}
    del crash["jobs"][2]["size_mb"]
    scenario, run_dir = tmp_path / "crash.yaml", tmp_path / "run"
    scenario.write_text(yaml.safe_dump(crash))
    run_until_crash_point(scenario, run_dir, cwd=first)

    original = first / "data" / "in.txt"
    stat = original.stat()
    original.write_text(texts[first].replace("alpha", "omega"))  # same size, new content and mtime
    line = one_line(cli("run", "--resume", str(run_dir), cwd=elsewhere))
    assert line == (
        f"testbed run --resume: {run_dir}: input file {original.resolve()} changed since the run "
        "started (its modification time differs); restore it or start a new run"
    )

    original.write_text(texts[first])
    os.utime(original, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    resumed = cli("run", "--resume", str(run_dir), cwd=elsewhere)
    assert resumed.returncode == 0, resumed.stderr
    assert read_output(run_dir / "outputs" / "j002") == reference_counts([texts[first].encode()])
    assert_tidy(run_dir)


async def test_live_evictions_wait_for_the_run_to_start_and_the_record_stays_true(tmp_path: Path) -> None:
    """Eviction requests from the moment the master listens: refused, saying when they will be
    taken, until the run's time 0; then one is taken, on the run's clock."""
    cluster = {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 2}
    scenario = make_scenario(cluster=cluster, jobs=[{"workload": "sleep", "tasks": 12, "duration": 1.0}])
    answers: list[list[str] | str] = []
    storm = threading.Thread(target=evict_one_as_soon_as_allowed, args=(tmp_path, answers))
    storm.start()
    try:
        result = await run_scenario(settings_of(scenario), tmp_path)
    finally:
        await asyncio.to_thread(storm.join, 120)
    assert result.ok, result.summary
    refusals, accepted = answers[:-1], answers[-1]
    assert refusals and all(isinstance(r, str) and "has not started" in r for r in refusals), answers
    assert "evictions are taken from its time 0, once every node is up" in str(refusals[0])
    assert isinstance(accepted, list) and len(accepted) == 1, answers

    journal = events(tmp_path)
    started = next(i for i, e in enumerate(journal) if e["event"] == "run_started")
    evictions = [(i, e) for i, e in enumerate(journal) if e["event"] == "eviction"]
    assert len(evictions) == 1 and evictions[0][0] > started and evictions[0][1]["t"] >= 0
    assert result.summary["evictions"] == 1
    alive = nodes_alive(load_run(tmp_path))
    assert max(alive["transient"].values) <= 3 and max(alive["reserved"].values) <= 1, alive


def evict_one_as_soon_as_allowed(run_dir: Path, answers: list[list[str] | str]) -> None:
    while not (run_dir / "master.json").exists():  # readiness polling: the master is listening
        time.sleep(0.01)
    client = ChaosClient(run_dir)
    while not (answers and answers[-1]) or isinstance(answers[-1], str):
        if (run_dir / "summary.json").exists():
            return  # the run ended first: the test fails on the answers
        try:
            answers.append(client.evict(count=1))
        except ChaosError as exc:
            answers.append(str(exc))
        time.sleep(0.02)


async def test_uploads_never_committed_are_deleted_when_the_run_ends(tmp_path: Path) -> None:
    """An upload cut off mid-stream (its node died) and one whose attempt never committed
    (its result never came) leave files in outputs/ that the end of the run deletes."""
    scenario = make_scenario(jobs=[{"workload": "sleep", "tasks": 4, "duration": 1.0}])
    uploads: list[asyncio.Task[None]] = []

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if record["event"] == "job_submitted" and not uploads:
            uploads.append(asyncio.get_running_loop().create_task(stale_uploads(master, record["job"])))

    result = await run_scenario(settings_of(scenario), tmp_path, on_event=on_event)
    await uploads[0]
    assert result.ok, result.summary
    assert sorted(p.name for p in (tmp_path / "outputs" / "j000").iterdir()) == [
        f"part-{i:05d}" for i in range(4)
    ]
    assert_tidy(tmp_path)


async def stale_uploads(master: Any, job_id: str) -> None:
    outputs = master.run_dir / "outputs" / job_id
    headers = {TOKEN_HEADER: master.keys.output_cap(job_id, 0, 99)}  # as the task would get it
    async with aiohttp.ClientSession() as session:
        url = f"{master.api.url}/outputs/{job_id}/0/99"  # an attempt that will never report
        async with session.put(url, data=b"j000.s0.t0\t9.000\n", headers=headers) as response:
            assert response.status == 201
    host, port = master.api.url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    path, capability = f"/outputs/{job_id}/1/98", master.keys.output_cap(job_id, 1, 98)
    writer.write(
        f"PUT {path} HTTP/1.1\r\nHost: {host}\r\n{TOKEN_HEADER}: {capability}\r\n"
        "Content-Length: 1000\r\n\r\nthe first bytes of".encode()
    )
    await writer.drain()
    while not (outputs / ".part-00001.a98.partial").exists():  # readiness polling: the sink has begun
        await asyncio.sleep(0.01)
    writer.transport.abort()  # the uploading node dies mid-stream
    del reader
    assert (outputs / ".part-00000.a99.tmp").exists()
