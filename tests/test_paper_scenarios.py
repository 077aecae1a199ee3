"""Every scenario in scenarios/papers validates, and a tiny version of each runs in sim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testbed.app.cli import main

PAPERS = Path(__file__).resolve().parent.parent / "scenarios" / "papers"

# the LATE jobs on 12 of the paper's VMs, 10 maps
SMALL_LATE = ["cluster.reserved.count=12", "jobs.0.size_mb=640", "jobs.0.maps=10", "jobs.0.reduces=4"]

TINY: dict[str, list[str]] = {
    "pado": [
        "cluster.transient.count=4",
        "cluster.reserved.count=1",
        "jobs.0.nodes=20000",
        "jobs.0.edges=200000",
        "jobs.0.iterations=3",
        "jobs.0.maps=4",
        "jobs.0.reduces=4",
    ],
    "pado-mr": [
        "cluster.transient.count=4",
        "cluster.reserved.count=1",
        "jobs.0.size_mb=64",
        "jobs.0.maps=8",
        "jobs.0.reduces=4",
    ],
    "pado-mlr": [
        "cluster.transient.count=4",
        "cluster.reserved.count=1",
        "jobs.0.points=2000",
        "jobs.0.features=20",
        "jobs.0.classes=4",
        "jobs.0.iterations=2",
        "jobs.0.maps=8",
        "jobs.0.reduces=2",
    ],
    "yarn-me": [
        "cluster.transient.count=2",
        "arrivals.dss.jobs=4",
        "arrivals.dss.tasks_max=8",
        "arrivals.dss.submit_max_s=50",
    ],
    "cloudcoaster": [
        "cluster.reserved.count=12",
        "policy.options.eagle.short_fraction=0.34",
        "arrivals.synthetic.horizon_s=300",
        "arrivals.synthetic.calm_rate_per_s=0.015",
        "arrivals.synthetic.burst_rate_per_s=0.15",
        "arrivals.synthetic.long_rate_per_s=0.0033",
        "arrivals.synthetic.long_tasks=4",
    ],
    "late-sleep": ["jobs.0.duration=5s"],
    "late-evictions": ["jobs.0.duration=5s"],  # 40 nodes and 80 tasks are cheap in sim: shorter sleeps
    "late-stragglers": ["jobs.0.size_mb=640", "jobs.0.maps=10", "jobs.0.reduces=4"],
    "late-hetero": SMALL_LATE,
    "late-grep": SMALL_LATE,
    "late-wordcount": SMALL_LATE,
    "late-real": ["backend=sim", "jobs.0.size_mb=96", "jobs.0.maps=12", "jobs.0.reduces=4"],
    "late-evictions-real": ["backend=sim", "jobs.0.tasks=8"],
    "firmament": [  # 30 machines of 12 slots, a few jobs of each kind
        "cluster.reserved={count: 24, slots: 12, memory_mb: 65536, zones: {z0: 12, z1: 12}}",
        "cluster.transient={count: 6, slots: 12, memory_mb: 65536, zones: {z0: 3, z1: 3}}",
        "jobs.0.repeat=2",
        "jobs.0.tasks=100",
        "jobs.1.repeat=5",
        "jobs.2.repeat=5",
        "jobs.3.repeat=5",
    ],
    "firmament-schedulers": [
        "cluster.reserved={count: 4, slots: 2, memory_mb: 4096, network_mbps: 100, zones: {z0: 2, z1: 2}}",
        "cluster.transient={count: 8, slots: 2, memory_mb: 4096, network_mbps: 100, zones: {z0: 4, z1: 4}}",
        "jobs.0.size_mb=128",
        "jobs.0.maps=8",
        "jobs.0.reduces=2",
        "jobs.0.repeat=3",
    ],
    "rdd-recovery": [
        "cluster.transient.count=4",
        "jobs.0.nodes=20000",
        "jobs.0.edges=200000",
        "jobs.0.maps=4",
        "jobs.0.reduces=4",
        "chaos.storms.0.at=1s",
    ],
}


def test_every_paper_scenario_has_a_tiny_version() -> None:
    assert sorted(path.stem for path in PAPERS.glob("*.yaml")) == sorted(TINY)


@pytest.mark.parametrize("name", sorted(TINY))
def test_paper_scenario_validates(name: str) -> None:
    assert main(["validate", str(PAPERS / f"{name}.yaml")]) == 0


@pytest.mark.parametrize("name", sorted(TINY))
def test_tiny_paper_scenario_runs_in_sim(name: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    settings = [item for setting in TINY[name] for item in ("--set", setting)]
    assert main(["run", str(PAPERS / f"{name}.yaml"), "--out", str(out), *settings]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == "sim"
    assert (out / "jobs.csv").read_text().count("\n") > 1
