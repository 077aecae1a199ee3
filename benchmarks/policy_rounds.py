"""What one scheduling round of each policy costs at the papers' scale, ours against the previous one.

A simulator calls the round at every event, so its cost bounds the simulated events per
second. Each case builds seeded snapshots by hand and times, in the same run, our round
and the peer's: the policies' previous implementation (``tests/support/policy_reference``),
whose decisions ours must equal (checked here on every case, and on random states by the
tests). A round is what the policy itself costs: ``schedule(snapshot)``, plus, under
FIFO, the window of ready tasks (``master/schedulers/window.py``) the snapshot is cut to.

- fifo: 10,000 nodes of 8 slots, 100 jobs of 10,000 ready tasks each (1,000,000);
- eagle + cloudcoaster: 4,000 servers, long tasks on part of the general partition,
  short tasks queued on nodes, and one second of a burst of short jobs from
  ``testbed.arrivals.generate.bursty_jobs`` (rates scaled to 4,000 servers) still unplaced; the
  autoscaler's round is ``decide`` plus the journaled ``facts``;
- yarn and yarn-me: 1,000 nodes, 10,000 and 100,000 pending tasks in 100 jobs
  (``benchmarks/yarn_me_decision.py``'s snapshots).

Each in two states: steady (5% of the nodes just freed one to three slots) and burst
(90% of them did).

    python benchmarks/policy_rounds.py [--cases fifo,eagle,yarn] [--repeat 5] [--seed 7] [--scale 1]

``--scale`` multiplies every size (nodes, servers, tasks): 0.1 for a quick run.

CPU time per round (robust to a busy machine), median of the runs.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.yarn_me_decision import build as yarn_snapshot
from master.autoscalers.cloudcoaster import CloudCoasterAutoscaler
from master.schedulers.eagle import EagleScheduler, split_partitions
from master.schedulers.fifo import FifoScheduler
from master.schedulers.window import FreeNode, PendingWindow
from master.schedulers.yarn import YarnScheduler
from master.schedulers.yarn_me import YarnMeScheduler
from testbed.api.policy import (
    Assign,
    ClusterSnapshot,
    JobView,
    NodeView,
    PendingTask,
    RunningTask,
)
from testbed.arrivals.generate import BurstyMix, bursty_jobs
from tests.support.policy_reference import cloudcoaster_v1, eagle_v1, fifo_v1, window_v1

NOW = 1_000.0
STATES = (("steady", 0.05), ("burst", 0.9))


def timed(call: Callable[[], object], repeat: int) -> tuple[float, object]:
    """Median CPU milliseconds of ``repeat`` calls, and the last call's result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.process_time()
        result = call()
        times.append((time.process_time() - start) * 1000)
    return statistics.median(times), result


def row(label: str, ours: Callable[[], object], peer: Callable[[], object], repeat: int) -> None:
    """Time both rounds; their decisions must be equal."""
    peer_ms, expected = timed(peer, max(1, repeat // 2))
    ours_ms, got = timed(ours, repeat)
    if got != expected:
        raise SystemExit(f"{label}: decisions differ from the previous implementation's")
    count = len(got) if isinstance(got, list) else "-"
    print(f"  {label:44}{ours_ms:10.1f} ms{peer_ms:11.1f} ms{peer_ms / max(ours_ms, 1e-3):8.1f}x  {count}")


# ------------------------------------------------------------------ fifo


def fifo_case(nodes: int, jobs: int, tasks_per_job: int, seed: int, room: float) -> tuple:
    rng = random.Random(seed)
    views = []
    for i in range(nodes):
        busy = 8 - (rng.randint(1, 3) if rng.random() < room else 0)
        running = tuple(
            RunningTask(f"n{i}/r{k}", "old", 1_000, NOW - 5, NOW + rng.uniform(1, 60)) for k in range(busy)
        )
        views.append(NodeView(f"node-{i}", rng.choice(["reserved", "transient"]), 8, 16_000, running))
    job_sizes = [(f"job{j:03d}", rng.choice([500, 1_000, 2_000, 4_000])) for j in range(jobs)]
    return views, job_sizes, tasks_per_job


def fifo_round(case: tuple, window_type: type, scheduler: object) -> list:
    """The window of ready tasks as the master cuts it, then the round."""
    views, job_sizes, tasks_per_job = case
    window = window_type(
        FreeNode(n.node_id, n.node_class, n.free_slots, n.free_memory_mb) for n in views if n.free_slots
    )
    everywhere = frozenset({"reserved", "transient"})
    jobs = []
    for submitted, (job_id, memory) in enumerate(job_sizes):
        tasks = []
        for index in range(tasks_per_job):
            if window.full:
                break
            if window.admits(everywhere, frozenset(), memory):
                tasks.append(PendingTask(f"{job_id}/{index}", job_id, 0, index, memory))
        jobs.append(JobView(job_id, float(submitted), tuple(tasks)))
    return scheduler.schedule(ClusterSnapshot(NOW, tuple(views), tuple(jobs)))  # type: ignore[attr-defined]


def run_fifo(args: argparse.Namespace) -> None:
    nodes, tasks = round(10_000 * args.scale), round(10_000 * args.scale)
    print(f"fifo: {nodes} nodes, 100 jobs x {tasks} ready tasks, window + schedule()")
    for name, room in STATES:
        case = fifo_case(nodes, 100, tasks, args.seed, room)
        row(
            f"{name}",
            lambda case=case: fifo_round(case, PendingWindow, FifoScheduler()),
            lambda case=case: fifo_round(case, window_v1.PendingWindow, fifo_v1.FifoScheduler()),
            args.repeat,
        )


# ------------------------------------------------------------------ eagle + cloudcoaster


def burst_jobs(seed: int, servers: int) -> list:
    """The short jobs of the busiest second of a day of bursty arrivals, rates scaled to the
    cluster (the default mix is sized for about 100 servers)."""
    scale = servers / 100
    mix = BurstyMix(
        horizon_s=86_400.0,
        calm_rate_per_s=0.1 * scale,
        burst_rate_per_s=2.0 * scale,
        long_rate_per_s=scale / 60,
    )
    start = time.process_time()
    jobs = bursty_jobs(seed, mix)
    elapsed = time.process_time() - start
    tasks = sum(len(job.task_durations) for job in jobs)
    print(
        f"  bursty_jobs: a day at {servers} servers, {len(jobs)} jobs, {tasks} tasks in {elapsed:.2f} s cpu"
    )
    per_second: dict[int, list] = {}
    for job in jobs:
        if not job.long:
            per_second.setdefault(int(job.submit_s), []).append(job)
    return max(per_second.values(), key=lambda group: sum(len(j.task_durations) for j in group))


def eagle_snapshot(servers: int, seed: int, room: float, arriving: list) -> ClusterSnapshot:
    rng = random.Random(seed)
    on_demand = [f"reserved-{i}" for i in range(servers - servers // 20)]
    partitions = split_partitions(on_demand, 0.02)
    ids = on_demand + [f"transient-{i}" for i in range(servers // 20)]
    pending, views = [], []
    for node_id in ids:
        partition = partitions.get(node_id, "short")
        long = partition == "general" and rng.random() < 0.6
        busy = 4 - (rng.randint(1, 3) if rng.random() < room else 0)
        running = tuple(
            RunningTask(
                f"{node_id}/r{k}", "old", 1_000, NOW - 5, NOW + rng.uniform(1, 600), long=long and k == 0
            )
            for k in range(busy)
        )
        queued = []
        if busy == 4 and rng.random() < 0.3:
            for q in range(rng.randint(1, 3)):
                task = PendingTask(f"{node_id}/q{q}", f"queued-{node_id}", 0, q, 1_000, rng.uniform(0.5, 5))
                pending.append(task)
                queued.append(task.task_id)
        node_class = "transient" if node_id.startswith("transient") else "reserved"
        views.append(
            NodeView(node_id, node_class, 4, 16_000, running, partition=partition, queued=tuple(queued))
        )
    jobs = [JobView(f"queued-{t.task_id}", NOW - 10, (t,)) for t in pending]
    for j, job in enumerate(arriving):
        tasks = tuple(
            PendingTask(f"new{j}/{i}", f"new{j}", 0, i, 1_000, job.est_duration_s, long=job.long)
            for i in range(len(job.task_durations))
        )
        jobs.append(JobView(f"new{j}", NOW - 1 + j * 1e-3, tasks))
    return ClusterSnapshot(NOW, tuple(views), tuple(jobs))


def coaster_round(autoscaler: object, snapshot: ClusterSnapshot) -> list:
    return [*autoscaler.decide(snapshot, 0), autoscaler.facts(snapshot)]  # type: ignore[attr-defined]


def run_eagle(args: argparse.Namespace) -> None:
    servers = round(4_000 * args.scale)
    print(f"eagle + cloudcoaster: {servers} servers (5% transient), a burst second's short jobs unplaced")
    arriving = burst_jobs(args.seed, servers)
    short = round(0.02 * (servers - servers // 20))
    knobs = {"threshold": 0.95, "r": 3.0, "p": 0.5, "provisioning_delay_s": 120.0, "short_on_demand": short}
    for name, room in STATES:
        snapshot = eagle_snapshot(servers, args.seed, room, arriving)
        unplaced = sum(len(j.pending) for j in snapshot.jobs if j.job_id.startswith("new"))
        row(
            f"{name}: eagle schedule(), {unplaced} new tasks",
            lambda s=snapshot: EagleScheduler(seed=args.seed).schedule(s),
            lambda s=snapshot: eagle_v1.EagleScheduler(seed=args.seed).schedule(s),
            args.repeat,
        )
        row(
            f"{name}: cloudcoaster decide() + facts()",
            lambda s=snapshot: coaster_round(CloudCoasterAutoscaler(**knobs), s),
            lambda s=snapshot: coaster_round(cloudcoaster_v1.CloudCoasterAutoscaler(**knobs), s),
            args.repeat,
        )


# ------------------------------------------------------------------ yarn, yarn-me


def run_yarn(args: argparse.Namespace) -> None:
    nodes = round(1_000 * args.scale)
    for tasks in (round(10_000 * args.scale), round(100_000 * args.scale)):
        print(f"yarn / yarn-me: {nodes} nodes, {tasks} pending tasks in 100 jobs")
        for name, room in STATES:
            snapshot, models = yarn_snapshot(nodes, tasks, 100, args.seed, room)
            for label, scheduler in (("yarn", YarnScheduler), ("yarn-me", YarnMeScheduler)):
                ms, decisions = timed(
                    lambda s=snapshot, c=scheduler, m=models: c(models=m).schedule(s), args.repeat
                )
                placed = sum(isinstance(d, Assign) for d in decisions)  # type: ignore[union-attr]
                text = f"{name}: {label} schedule() (unchanged)"
                print(f"  {text:44}{ms:10.1f} ms{'':23}  {placed} placed")


CASES = {"fifo": run_fifo, "eagle": run_eagle, "yarn": run_yarn}


def cases(names: str) -> Iterator[Callable[[argparse.Namespace], None]]:
    for name in names.split(","):
        if name not in CASES:
            raise SystemExit(f"--cases: unknown case {name!r}; known: {', '.join(CASES)}")
        yield CASES[name]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--scale", type=float, default=1.0, help="multiplies every size (0.1: quick)")
    args = parser.parse_args()
    print(f"{'':46}{'ours':>10}{'previous':>14}{'speed-up':>9}  decisions")
    for run in cases(args.cases):
        run(args)


if __name__ == "__main__":
    main()
