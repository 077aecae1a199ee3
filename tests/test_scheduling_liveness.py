"""Liveness of the master's scheduling: every job the cluster can run completes, for every
scheduler and strategy on every small cluster shape (the master's real scheduling,
strategies and commits, its agents stood in for on a virtual clock)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from master.schedulers.firmament.costs import COST_MODELS
from tests.support.agents_stand_in import StandInAgents
from tests.support.masters import offline_master, shell_act
from tests.support.scenarios import make_scenario

SCHEDULERS = ("fifo", "yarn", "yarn-me", "eagle", "firmament")
STRATEGIES = ("spark", "spark-checkpoint", "spark-checkpoint fetching back", "pado")
FETCH_BACK = {"spark-checkpoint": {"read_from": "checkpoint"}}

shape = st.fixed_dictionaries(
    {
        "maps": st.integers(1, 6),
        "reduces": st.integers(1, 4),
        "submit_at": st.sampled_from([0, 0, 1, 3]),
        "memory_mb": st.sampled_from([None, 100, 300]),
    }
)
data = st.sampled_from(
    [
        {"workload": "wordcount", "size_mb": 1},
        {"workload": "sort", "size_mb": 1},
        {"workload": "pagerank", "nodes": 50, "edges": 200, "iterations": 1},
        {"workload": "pagerank", "nodes": 50, "edges": 200, "iterations": 3},
    ]
)
jobs = st.lists(st.builds(lambda d, s: {**d, **s}, data, shape), min_size=1, max_size=3)


def run_offline(
    scheduler: str,
    strategy: str,
    reserved: int,
    transient: int,
    slots: int,
    specs: list[dict[str, Any]],
    options: dict[str, Any] | None = None,
) -> dict[str, str]:
    """Each job's final status after the cluster ran out of things to do."""
    for spec in specs:
        if spec["memory_mb"] is None:
            del spec["memory_mb"]
    cluster = {
        "reserved": {"count": reserved, "slots": slots, "memory_mb": 1024},
        "transient": {"count": transient, "slots": slots, "memory_mb": 1024},
    }
    name, _, fetch_back = strategy.partition(" ")
    options = {**(FETCH_BACK if fetch_back else {}), **(options or {})}
    policy = {"scheduler": scheduler, "strategy": name, "options": options}
    scenario = make_scenario(cluster=cluster, policy=policy, jobs=specs, timeout=600)
    with tempfile.TemporaryDirectory() as run_dir:
        master = offline_master(scenario, Path(run_dir), attach=True)
        try:
            agents = StandInAgents(master)
            for node_class, count in (("reserved", reserved), ("transient", transient)):
                for ordinal in range(count):
                    agents.announce(f"{node_class}-{ordinal}", node_class, slots, 1024)
            for ordinal, job in enumerate(scenario.jobs):
                shell_act(master, master.core.submit_job, job, ordinal)
            agents.run()
            return {job_id: job.status for job_id, job in master.jobs.items()}
        finally:
            master.journal.close()


@settings(max_examples=60, deadline=None)
@given(
    scheduler=st.sampled_from(SCHEDULERS),
    strategy=st.sampled_from(STRATEGIES),
    reserved=st.integers(1, 3),
    transient=st.integers(1, 3),
    slots=st.integers(1, 3),
    specs=jobs,
)
def test_every_job_the_cluster_can_run_completes(
    scheduler: str, strategy: str, reserved: int, transient: int, slots: int, specs: list[dict[str, Any]]
) -> None:
    statuses = run_offline(scheduler, strategy, reserved, transient, slots, specs)
    assert set(statuses.values()) == {"succeeded"}, statuses


@settings(max_examples=24, deadline=None)
@given(
    model=st.sampled_from(COST_MODELS),
    strategy=st.sampled_from(STRATEGIES),
    transient=st.integers(1, 3),
    slots=st.integers(1, 3),
    specs=jobs,
)
def test_every_job_completes_under_each_firmament_cost_model(
    model: str, strategy: str, transient: int, slots: int, specs: list[dict[str, Any]]
) -> None:
    options = {"firmament": {"cost_model": model}}
    statuses = run_offline("firmament", strategy, 1, transient, slots, specs, options)
    assert set(statuses.values()) == {"succeeded"}, statuses


def test_fifo_pado_with_one_transient_node_runs_both_quickstart_jobs() -> None:
    """Issue 23's case: the quickstart's two wordcount jobs, one reserved and one transient
    node of two slots. Pado's reserved receivers, ready first, filled FIFO's window of
    ready tasks (cut at the cluster's free slots): the maps they wait for were never seen."""
    specs = [
        {"workload": "wordcount", "size_mb": 1, "maps": 8, "reduces": 4, "submit_at": 0, "memory_mb": None},
        {"workload": "wordcount", "size_mb": 1, "maps": 2, "reduces": 2, "submit_at": 2, "memory_mb": None},
    ]
    statuses = run_offline("fifo", "pado", 1, 1, 2, specs)
    assert statuses == {"j000": "succeeded", "j001": "succeeded"}
