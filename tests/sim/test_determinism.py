"""The same scenario and seed give the same journal, byte for byte; another seed another."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.sim import SCENARIO, events, simulate


@pytest.mark.parametrize("strategy", ["spark", "spark-checkpoint", "pado"])
def test_same_seed_same_journal(tmp_path: Path, strategy: str) -> None:
    runs = [
        simulate(tmp_path, name, policy={"strategy": strategy}, **SCENARIO).run_dir for name in ("a", "b")
    ]
    assert events(runs[0], "eviction")  # the chaos plan's evictions happened
    for name in ("events.jsonl", "tasks.csv", "jobs.csv", "nodes.csv"):
        assert (runs[0] / name).read_bytes() == (runs[1] / name).read_bytes(), name


def test_another_seed_another_run(tmp_path: Path) -> None:
    one = simulate(tmp_path, "a", **SCENARIO).run_dir
    other = simulate(tmp_path, "b", **{**SCENARIO, "seed": 4}).run_dir
    assert (one / "events.jsonl").read_bytes() != (other / "events.jsonl").read_bytes()


def test_same_journal_across_processes_whatever_their_hash_seed(tmp_path: Path) -> None:
    """String hashing is randomised per process: no decision may follow a set's order."""
    scenario = tmp_path / "s.yaml"
    scenario.write_text(
        yaml.safe_dump({"name": "hashes", "seed": 3, **SCENARIO, "policy": {"strategy": "pado"}})
    )
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        argv = ["run", str(scenario), "--backend", "sim", "--out", str(tmp_path / hash_seed)]
        cli = [sys.executable, "-m", "testbed.app.cli", *argv]
        subprocess.run(cli, env=env, check=True, capture_output=True)
    assert (tmp_path / "1" / "events.jsonl").read_bytes() == (tmp_path / "2" / "events.jsonl").read_bytes()


@pytest.mark.parametrize("cpus", [1, 64])
def test_every_node_starts_at_once_whatever_the_hosts_cores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpus: int
) -> None:
    """The sim models a start as ``node_startup``, not the host's CPU: no start window drawn
    from this host's cores (32 a core), so a run is the same on any machine."""
    monkeypatch.setattr(os, "cpu_count", lambda: cpus)
    cluster = {"reserved": {"count": 10, "slots": 1}, "transient": {"count": 70, "slots": 1}}
    jobs = [{"workload": "sleep", "tasks": 4, "duration": "1s"}]
    run_dir = simulate(tmp_path, cluster=cluster, jobs=jobs).run_dir
    assert {record["t"] for record in events(run_dir, "node_up")} == {1.45}
    paced = simulate(tmp_path, "paced", cluster={**cluster, "start_window": 40}, jobs=jobs).run_dir
    assert sorted({record["t"] for record in events(paced, "node_up")}) == [1.45, 2.9]
