"""Firmament's network kept from round to round against a fresh build of each round, on one
run of consecutive rounds: CPU milliseconds per round of each, median, and their ratio.

The cluster is benchmarks/firmament.py's (12 slots and 64 GB a node, 90% of the slots busy,
20% transient, 10 zones; ~2% of the slots' worth of ready tasks in 50 jobs). From round to
round it changes as a scheduler's rounds change it: the round's placements start on their
nodes, as many running tasks end (on nodes drawn at random, seeded), as many new ready tasks
arrive, and the clock advances a second. A node's and a task's view is a new object only where
it changed (as the master hands them, ``master/core/node_views.py``). Each round is built both
ways from the same snapshot (in alternating order), the two networks checked equal arc for arc,
and the kept one solved for the next round's placements.

    python benchmarks/firmament_maintained.py [--nodes 1250,12500] [--rounds 10] [--cost-model quincy]

CPU time (``time.process_time``), and only the ratio is meant to be read on a shared host.
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from firmament import JOBS, NOW, PENDING_FRACTION, RISK, SIZES_MB, SLOTS, snapshot

from master.schedulers.firmament import admitted, cost_model
from master.schedulers.firmament.network import FlowNetwork, MaintainedNetwork, build, extract
from master.schedulers.firmament.solver import solve
from testbed.api.policy import Assign, ClusterSnapshot, JobView, PendingTask, RunningTask

FIELDS = ("kinds", "labels", "supplies", "tails", "heads", "capacities", "costs")


class Cluster:
    """The benchmark's cluster, changed round by round; unchanged views stay the same objects."""

    def __init__(self, nodes: int, rng: random.Random, churn: int) -> None:
        snap, tasks, waited = snapshot(nodes, rng)
        self.rng = rng
        self.churn = churn
        """Running tasks that end, and ready tasks that arrive, per round."""
        self.now = snap.now
        self.nodes = {view.node_id: view for view in snap.nodes}
        self.jobs = {job.job_id: job for job in snap.jobs}
        self.seen = {task.task_id: NOW - waited[task.task_id] for task in tasks}
        self.made = len(tasks)

    def snapshot(self) -> tuple[ClusterSnapshot, list[PendingTask], dict[str, float]]:
        jobs = tuple(self.jobs.values())
        tasks = [task for job in jobs for task in job.pending]
        waited = {task.task_id: self.now - self.seen[task.task_id] for task in tasks}
        return ClusterSnapshot(self.now, tuple(self.nodes.values()), jobs), tasks, waited

    def advance(self, decisions: list) -> tuple[int, int]:  # type: ignore[type-arg]
        """Start the round's placements, end ``churn`` running tasks and add as many ready
        tasks; the nodes changed, and the tasks placed."""
        started: dict[str, list[RunningTask]] = {}
        placed: set[str] = set()
        for decision in decisions:
            if isinstance(decision, Assign):
                ran = RunningTask(decision.task_id, "j", decision.memory_mb, self.now, self.now + 60.0)
                started.setdefault(decision.node_id, []).append(ran)
                placed.add(decision.task_id)
        busy = [node_id for node_id, view in self.nodes.items() if view.running]
        ending = set(self.rng.sample(busy, min(len(busy), self.churn)))
        for node_id in ending | set(started):
            view = self.nodes[node_id]
            running = view.running[1:] if node_id in ending else view.running
            self.nodes[node_id] = replace(view, running=(*running, *started.get(node_id, ())))
        arrivals: dict[str, list[PendingTask]] = {}
        for _ in range(self.churn):
            self.made += 1
            job = f"j{self.rng.randrange(JOBS)}"
            memory = SIZES_MB[int(job[1:]) % len(SIZES_MB)]
            task = PendingTask(f"{job}/t{self.made}", job, 0, self.made, memory, self.rng.uniform(5, 120))
            arrivals.setdefault(job, []).append(task)
            self.seen[task.task_id] = self.now
        for job_id, job in self.jobs.items():
            if arrivals.get(job_id) or any(task.task_id in placed for task in job.pending):
                kept = tuple(task for task in job.pending if task.task_id not in placed)
                self.jobs[job_id] = JobView(job_id, job.submitted, (*kept, *arrivals.get(job_id, ())))
        self.now += 1.0
        return len(ending | set(started)), len(placed)


def cpu(call, *args):  # type: ignore[no-untyped-def]
    """Its CPU seconds, after a full collection (so that neither way pays for the other's garbage)."""
    gc.collect()
    start = time.process_time()
    result = call(*args)
    return result, time.process_time() - start


def compare(nodes: int, rounds: int, model_name: str, seed: int, churn: float) -> tuple[float, float]:
    """The median CPU milliseconds of a fresh build and of a kept network's update per round
    (``churn``: the share of the slots whose tasks end, and arrive, per round)."""
    rng = random.Random(seed)
    model = cost_model({"cost_model": model_name}, RISK)
    cluster, kept = Cluster(nodes, rng, round(nodes * SLOTS * churn)), MaintainedNetwork(model)
    rebuilt: list[float] = []
    maintained: list[float] = []
    solved: list[float] = []
    changed: list[tuple[int, int]] = []
    snap, tasks, waited = cluster.snapshot()
    kept.update(snap, waited, tasks)  # its first round: a fresh build
    for round_ in range(rounds):
        snap, tasks, waited = cluster.snapshot()
        if round_ % 2:
            fresh, fresh_s = cpu(build, snap, model, waited, tasks)
            net, kept_s = cpu(kept.update, snap, waited, tasks)
        else:
            net, kept_s = cpu(kept.update, snap, waited, tasks)
            fresh, fresh_s = cpu(build, snap, model, waited, tasks)
        assert same(net, fresh), "the kept network differs from a fresh build"
        solution, solve_s = cpu(solve, net)
        assert solution.optimal, solution.status
        rebuilt.append(fresh_s)
        maintained.append(kept_s)
        solved.append(solve_s)
        decisions = admitted(snap, tasks, extract(net, solution.flows), {})
        changed.append(cluster.advance(decisions))
    fresh_ms, kept_ms = statistics.median(rebuilt) * 1000, statistics.median(maintained) * 1000
    print(
        f"{nodes:>6} nodes  {model_name:<9}  network {net.num_nodes:,} nodes {net.num_arcs:,} arcs, "
        f"{len(tasks):,} ready tasks; per round {statistics.median(c[0] for c in changed):,.0f} nodes "
        f"changed, {statistics.median(c[1] for c in changed):,.0f} tasks placed (median of {rounds})"
    )
    print(
        f"    cpu median: rebuilt {fresh_ms:7.1f} ms  maintained {kept_ms:7.1f} ms  "
        f"maintained/rebuilt {kept_ms / max(fresh_ms, 1e-9):5.2f}"
        f"   (solve {statistics.median(solved) * 1000:7.1f} ms)"
    )
    return fresh_ms, kept_ms


def same(one: FlowNetwork, other: FlowNetwork) -> bool:
    return all(getattr(one, name) == getattr(other, name) for name in FIELDS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1250,12500")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--cost-model", default="quincy")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--churn", type=float, default=PENDING_FRACTION, help="share of the slots ending and arriving a round"
    )
    args = parser.parse_args()
    for nodes in (int(n) for n in args.nodes.split(",")):
        compare(nodes, args.rounds, args.cost_model, args.seed, args.churn)


if __name__ == "__main__":
    main()
