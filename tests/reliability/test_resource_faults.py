"""Node resource faults for real: a full disk (a tiny tmpfs) and a task out of memory (RLIMIT_AS).

Each fails the task cleanly (``enospc`` / ``oom``), the task is retried on
another node, the run's outputs stay exact, and the report counts the faults.
"""

from __future__ import annotations

import contextlib
import csv
import errno
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import master.shell.run
from agents.agent import _forkserver
from agents.worker import execute
from agents.worker_main import run_in_worker
from master.shell.journal_file import Journal
from master.shell.run import run_scenario
from testbed.wire.protocol import TaskSpec
from testbed.workloads.wordcount import read_output
from tests.support.runs import assert_clean, expected_counts
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

CAP_MB = 4
"""A map of 1 MB of text needs 8 to 16 MB more than its worker starts with."""
MAP_SPEC = TaskSpec(
    task_id="j000.s0.t0",
    job_id="j000",
    stage=0,
    index=0,
    attempt=0,
    op="wordcount.map",
    memory_mb=256,
    params={"generate": {"seed": 1, "index": 0, "nbytes": 1 << 20, "vocabulary": 50_000}},
    partitions=2,
)


@contextlib.contextmanager
def tiny_disk(path: Path, size: str = "32k") -> Iterator[Path]:
    """A real filesystem of ``size`` bytes mounted at ``path`` (skips where mounting is not allowed)."""
    path.mkdir(parents=True, exist_ok=True)
    options = f"size={size},mode=0755"  # a run directory writable by others is refused
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {mounted.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=True)
        path.rmdir()  # the mount point, which the provider cannot remove while mounted


def events(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]


def failed_rows(run_dir: Path, failure: str) -> list[dict[str, str]]:
    rows = csv.DictReader((run_dir / "tasks.csv").open())
    return [r for r in rows if r["status"] == "failed" and r["failure"] == failure]


def assert_retried_elsewhere(run_dir: Path, failures: list[dict[str, str]]) -> None:
    rows = list(csv.DictReader((run_dir / "tasks.csv").open()))
    for failed in failures:
        later = [r for r in rows if r["task_id"] == failed["task_id"] and r["status"] == "succeeded"]
        assert later and all(r["node_id"] != failed["node_id"] for r in later), (failed, later)


# ------------------------------------------------------------------ in one worker


def test_a_full_disk_fails_the_task_as_enospc_and_frees_what_it_wrote(tmp_path: Path) -> None:
    with tiny_disk(tmp_path / "node") as node_dir:
        outcome = execute(MAP_SPEC, node_dir, "http://127.0.0.1:1")
        assert outcome["state"] == "failed" and outcome["failure"] == "enospc", outcome
        leftovers = [p for p in node_dir.rglob("*") if p.is_file()]
        assert not leftovers, f"the failed attempt left {leftovers} on the full disk"


def test_a_disk_full_from_the_start_fails_the_task_as_enospc_too(tmp_path: Path) -> None:
    """Not one byte free: the block writer's buffered bytes cannot be flushed even when it
    drops the block; the worker died of that (status 1, reported ``killed``)."""
    with tiny_disk(tmp_path / "node", "1m") as node_dir:
        filler = fill(node_dir)
        outcome = execute(MAP_SPEC, node_dir, "http://127.0.0.1:1", "token")
        assert outcome["state"] == "failed" and outcome["failure"] == "enospc", outcome
        assert [p for p in node_dir.rglob("*") if p.is_file()] == [filler]


def fill(disk: Path) -> Path:
    """Fill a filesystem to the last byte with one file."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 4096)
    return filler


def test_the_journal_on_a_full_disk_gives_its_reserve_back_and_says_so_once(tmp_path: Path) -> None:
    with tiny_disk(tmp_path / "run", "1m") as run_dir:
        journal = Journal(run_dir)
        calls: list[OSError] = []
        journal.on_disk_full = calls.append
        filler = fill(run_dir)
        journal.event("master_error", error="after the disk filled")
        journal.event("job_finished", job="j000", status="failed", jct_s=None, error="disk full")
        journal.close()
        lines = (run_dir / "events.jsonl").read_text().splitlines()
        rows = (run_dir / "jobs.csv").read_text().splitlines()
        filler.unlink()
    assert [e.errno for e in calls] == [errno.ENOSPC]
    assert [json.loads(line)["error"] for line in lines] == ["after the disk filled", "disk full"]
    assert rows[1].startswith("j000,") and journal.dropped == 0


def test_a_task_over_its_memory_cap_fails_as_oom(tmp_path: Path) -> None:
    """In a worker forked from the agents' forkserver, as every task is: the cap bounds how much
    the address space may grow (a long-lived process could reuse memory it freed long ago)."""
    receiver, sender = _forkserver.Pipe(duplex=False)
    args = (MAP_SPEC.model_dump(), str(tmp_path), "http://127.0.0.1:1", sender, CAP_MB)
    worker = _forkserver.Process(target=run_in_worker, args=args)
    worker.start()
    sender.close()
    outcome = receiver.recv()
    worker.join()
    assert outcome["state"] == "failed" and outcome["failure"] == "oom", outcome
    # The same task without the cap succeeds: it is the cap that failed it.
    assert execute(MAP_SPEC, tmp_path, "http://127.0.0.1:1")["state"] == "succeeded"


# ------------------------------------------------------------------ in a run


@pytest.mark.e2e
async def test_a_node_with_a_full_disk_is_drained_and_its_task_runs_elsewhere(tmp_path: Path) -> None:
    with tiny_disk(tmp_path / "nodes" / "transient-0"):
        result = await run_scenario(settings_of(make_scenario()), tmp_path)
    assert result.ok, result.summary
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(4, 4, seed=7000)
    failures = failed_rows(tmp_path, "enospc")
    assert failures and {r["node_id"] for r in failures} == {"transient-0"}, "no task hit the full disk"
    assert result.summary["enospc_failures"] == len(failures)
    assert_retried_elsewhere(tmp_path, failures)
    journal = events(tmp_path)
    drained = [
        i for i, e in enumerate(journal) if e["event"] == "node_draining" and e["node"] == "transient-0"
    ]
    assert drained and journal[drained[0]]["reason"] == "disk_full"
    later = journal[drained[0] :]
    back = next((i for i, e in enumerate(later) if e["event"] == "node_undrained"), len(later))
    assert not [e for e in later[:back] if e["event"] == "task_started" and e["node"] == "transient-0"]
    assert_clean(tmp_path)


NODES = ("reserved-0", "transient-0", "transient-1", "transient-2")


@pytest.mark.e2e
async def test_nodes_whose_disks_were_full_are_taken_back_once_space_returns(tmp_path: Path) -> None:
    """Every node's disk is full when the run starts; each gets its space back as soon as the
    master drains it. Drained for good, the nodes left the run idle until its timeout. A map
    writes its output to its node's disk, so each node that finished one had been drained and
    taken back first. (Not every drained node need be taken back: the job may end within a
    node's back-off, as it did on a host at load 12; ``disk_full_verdict``'s tests hold the
    back-off itself.)"""
    with contextlib.ExitStack() as stack:
        fillers = {n: fill(stack.enter_context(tiny_disk(tmp_path / "nodes" / n, "1m"))) for n in NODES}

        def on_event(_: Any, record: dict[str, Any]) -> None:
            if record["event"] == "node_draining":
                fillers[record["node"]].unlink(missing_ok=True)

        result = await run_scenario(settings_of(make_scenario(timeout=30)), tmp_path, on_event=on_event)
    assert result.ok, result.summary
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(4, 4, seed=7000)
    assert result.summary["enospc_failures"] >= 1
    journal = events(tmp_path)
    drained = {e["node"] for e in journal if e["event"] == "node_draining"}
    taken_back = {e["node"] for e in journal if e["event"] == "node_undrained"}
    finished = [e for e in journal if e["event"] == "task_finished" and e["status"] == "succeeded"]
    mapped = {e["node"] for e in finished if e["stage"] == 0}
    assert mapped and mapped <= taken_back <= drained, (mapped, taken_back, drained)
    assert_clean(tmp_path)


@pytest.mark.e2e
async def test_when_every_nodes_disk_stays_full_the_run_fails_at_once_saying_so(tmp_path: Path) -> None:
    """Bounded: each node is taken back twice after a back-off, then drained for good, or a
    task fails six times first; either way the jobs fail with the full disk as the reason,
    long before the timeout. Drained for good at once, the nodes idled until the timeout."""
    with contextlib.ExitStack() as stack:
        for node in NODES:
            fill(stack.enter_context(tiny_disk(tmp_path / "nodes" / node, "1m")))
        result = await run_scenario(settings_of(make_scenario(timeout=30)), tmp_path)
    assert not result.ok
    finished = [e for e in events(tmp_path) if e["event"] == "job_finished"]
    assert [e["status"] for e in finished] == ["failed"]
    assert "No space left" in finished[0]["error"] or "disk of every node is full" in finished[0]["error"]
    assert result.summary["enospc_failures"] >= len(NODES)
    assert_clean(tmp_path)


@pytest.mark.e2e
async def test_a_task_out_of_memory_is_reported_as_oom_and_retried_elsewhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """transient-0's tasks may allocate 4 MB, too little for a map of 1 MB of text. FIFO
    prefers transient-0 whenever the two nodes are equally free, so only the exclusion of the
    node that failed the task keeps the job from failing six times over."""
    command = master.shell.run.agent_command

    def small_node(*args: Any) -> list[str]:
        argv = command(*args)
        return [*argv, "--task-memory-limit-mb", str(CAP_MB)] if "transient-0" in argv else argv

    monkeypatch.setattr(master.shell.run, "agent_command", small_node)
    cluster = {"reserved": 1, "transient": 1, "heartbeat_interval": 0.2, "heartbeat_timeout": 2}
    jobs = [{"workload": "wordcount", "size_mb": 2, "maps": 2, "reduces": 1}]
    result = await run_scenario(settings_of(make_scenario(cluster=cluster, jobs=jobs)), tmp_path)
    assert result.ok, result.summary
    assert read_output(tmp_path / "outputs" / "j000") == expected_counts(2, 2, seed=7000)
    failures = failed_rows(tmp_path, "oom")
    assert failures and {r["node_id"] for r in failures} == {"transient-0"}, "no task ran out of memory"
    assert result.summary["oom_failures"] == len(failures)
    assert result.summary["task_failures"] == {"oom": len(failures)}
    assert_retried_elsewhere(tmp_path, failures)
    report = subprocess.run(
        ["python", "-m", "testbed.app.cli", "report", str(tmp_path)], capture_output=True, text=True
    )
    assert report.returncode == 0, report.stderr
    assert f"| failed attempts by cause | oom {len(failures)} |" in (tmp_path / "report.md").read_text()
    assert_clean(tmp_path)


@pytest.mark.e2e
async def test_a_job_that_fails_is_finished_once_and_its_running_tasks_are_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every node too small: each map fails as oom until the job fails. The other map is then
    usually still running; its late update (the sleep job keeps the run going for it to arrive)
    must not finish the job a second time."""
    command = master.shell.run.agent_command
    monkeypatch.setattr(
        master.shell.run, "agent_command", lambda *a: [*command(*a), "--task-memory-limit-mb", str(CAP_MB)]
    )
    node = {"count": 1, "slots": 2}
    cluster = {"reserved": node, "transient": node, "heartbeat_interval": 0.2, "heartbeat_timeout": 2}
    jobs = [
        {"workload": "wordcount", "size_mb": 2, "maps": 2, "reduces": 1},
        {"workload": "sleep", "tasks": 1, "duration": 6.0},
    ]
    result = await run_scenario(settings_of(make_scenario(cluster=cluster, jobs=jobs)), tmp_path)
    assert not result.ok
    finished = [(e["job"], e["status"]) for e in events(tmp_path) if e["event"] == "job_finished"]
    assert sorted(finished) == [("j000", "failed"), ("j001", "succeeded")]
    rows = list(csv.DictReader((tmp_path / "jobs.csv").open()))
    assert sorted((r["job_id"], r["status"]) for r in rows) == sorted(finished)
    assert_clean(tmp_path)


@pytest.mark.e2e
async def test_a_full_output_disk_at_the_master_fails_the_job_at_once_and_leaves_no_partial_file(
    tmp_path: Path,
) -> None:
    """The job's output directory is a 64 KiB disk, its parts are larger: the job fails on its
    first upload that does not fit, saying why. It was retried six times at once as an
    ``error`` and left ``.partial`` files behind."""
    outputs = tmp_path / "outputs" / "j000"
    with contextlib.ExitStack() as stack:

        def on_event(_: Any, record: dict[str, Any]) -> None:
            if record["event"] == "job_submitted":  # its output directory exists now
                stack.enter_context(tiny_disk(outputs, "64k"))

        result = await run_scenario(settings_of(make_scenario(timeout=30)), tmp_path, on_event=on_event)
        left = sorted(p.name for p in outputs.iterdir())
    assert not result.ok
    finished = [e for e in events(tmp_path) if e["event"] == "job_finished"]
    assert [e["status"] for e in finished] == ["failed"]
    assert "the master's output disk is full" in finished[0]["error"], finished[0]["error"]
    reduces = [r for r in csv.DictReader((tmp_path / "tasks.csv").open()) if r["stage"] == "1"]
    assert len(reduces) <= 2, "a reduce was retried after the output disk was full"
    assert not [name for name in left if name.endswith(".partial")], left
    assert_clean(tmp_path)


@pytest.mark.e2e
async def test_a_full_journal_disk_ends_the_run_at_once_and_still_records_how(tmp_path: Path) -> None:
    """The run directory is a disk of 160 KiB (each node, the logs and outputs have their own),
    too small for the journal of 400 tasks. The master stalled with an OSError in its
    handlers, then died at shutdown with a traceback and no summary.json."""
    run_dir = tmp_path / "run"
    jobs = [{"workload": "sleep", "tasks": 400, "duration": 0.0}]
    with contextlib.ExitStack() as stack:
        stack.enter_context(tiny_disk(run_dir, "160k"))
        for roomy in ("logs", "outputs", *(f"nodes/{node}" for node in NODES)):
            stack.enter_context(tiny_disk(run_dir / roomy, "64m"))
        result = await run_scenario(settings_of(make_scenario(jobs=jobs, timeout=60)), run_dir)
        summary = json.loads((run_dir / "summary.json").read_text())
        journal = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
        reserve_left = (run_dir / ".journal-reserve").exists()
    assert not result.ok
    assert summary["jobs"] == 1 and summary["failed"] == 1, summary
    finished = [e for e in journal if e["event"] == "job_finished"]
    assert len(finished) == 1 and "the journal's disk is full" in finished[0]["error"], finished
    assert journal[-1]["event"] == "run_finished"
    assert not reserve_left
