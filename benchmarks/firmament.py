"""What one Firmament scheduling round costs at 1,000 and 12,500 nodes: network build, solve
(OR-Tools' cost scaling), placement extraction and admission, per round, median and p99,
beside the simulator's model of a round (what ``simulation.charge_policy_time`` charges).

The cluster is shaped after the dissertation's Google-trace simulation (Gog 2017, section
6.1: 12,500 machines, slot utilisation driven to 90% by fewer slots per machine): 12 slots
and 64 GB per node, 90% of the slots busy, 20% of the nodes transient, 10 zones per class.
Each round, a fresh seeded state: ~2% of the slots' worth of ready tasks in 50 jobs of three
memory sizes (1, 2 and 4 GB), whose first sight is spread over the last 30 s.

    python benchmarks/firmament.py [--nodes 1000,12500] [--rounds 20] [--cost-model quincy] [--seed 7]
    python benchmarks/firmament.py --show transient   # a small real instance's arcs and flow

Times are wall seconds (the placement latency a task sees) on this machine, as measured;
CPU seconds beside them (robust to a busy host).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.schedulers.firmament import admitted, cost_model
from master.schedulers.firmament.costs import EvictionRisk
from master.schedulers.firmament.network import build, extract
from master.schedulers.firmament.solver import modelled_round_s, solve
from testbed.api.policy import ClusterSnapshot, JobView, NodeView, PendingTask, RunningTask
from testbed.chaosmodels.lifetimes import parse_lifetime

NOW = 10_000.0
SLOTS = 12
MEMORY_MB = 65_536
UTILISATION = 0.9
PENDING_FRACTION = 0.02
JOBS = 50
ZONES = 10
TRANSIENT_FRACTION = 0.2
SIZES_MB = (1024, 2048, 4096)
RISK = EvictionRisk({("transient", None): parse_lifetime({"weibull": {"shape": 0.7, "scale": "2h"}})})


def snapshot(nodes: int, rng: random.Random) -> tuple[ClusterSnapshot, list[PendingTask], dict[str, float]]:
    views = []
    for ordinal in range(nodes):
        node_class = "transient" if ordinal < nodes * TRANSIENT_FRACTION else "reserved"
        busy = min(SLOTS, round(rng.gauss(SLOTS * UTILISATION, 1.0)))
        running = tuple(
            RunningTask(f"n{ordinal}/r{i}", "old", rng.choice(SIZES_MB), 0.0, NOW + 60.0) for i in range(busy)
        )
        zone = f"z{ordinal % ZONES}"
        launched = rng.uniform(0.0, NOW)
        views.append(
            NodeView(f"n{ordinal}", node_class, SLOTS, MEMORY_MB, running, launched=launched, zone=zone)
        )
    count = round(nodes * SLOTS * PENDING_FRACTION)
    per_job: list[list[PendingTask]] = [[] for _ in range(JOBS)]
    for index in range(count):
        job = index % JOBS
        memory = SIZES_MB[job % len(SIZES_MB)]
        per_job[job].append(PendingTask(f"j{job}/t{index}", f"j{job}", 0, index, memory, rng.uniform(5, 120)))
    jobs = tuple(JobView(f"j{j}", float(j), tuple(tasks)) for j, tasks in enumerate(per_job))
    tasks = [task for job in jobs for task in job.pending]
    waited = {task.task_id: rng.uniform(0.0, 30.0) for task in tasks}
    return ClusterSnapshot(NOW, tuple(views), jobs), tasks, waited


def timed(call, *args):  # type: ignore[no-untyped-def]
    wall, cpu = time.perf_counter(), time.process_time()
    result = call(*args)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def measure(nodes: int, rounds: int, model_name: str, seed: int) -> None:
    rng = random.Random(seed)
    model = cost_model({"cost_model": model_name}, RISK)
    phases: dict[str, list[tuple[float, float]]] = {
        "build": [],
        "solve": [],
        "extract": [],
        "admit": [],
        "round": [],
    }
    size = (0, 0, 0)
    modelled: list[float] = []
    for _ in range(rounds):
        snap, tasks, waited = snapshot(nodes, rng)
        net, build_wall, build_cpu = timed(build, snap, model, waited, tasks)
        solution, solve_wall, solve_cpu = timed(solve, net)
        assert solution.optimal, solution.status
        placed, extract_wall, extract_cpu = timed(extract, net, solution.flows)
        _, admit_wall, admit_cpu = timed(admitted, snap, tasks, placed, {})  # no preemption: no moves
        phases["build"].append((build_wall, build_cpu))
        phases["solve"].append((solve_wall, solve_cpu))
        phases["extract"].append((extract_wall, extract_cpu))
        phases["admit"].append((admit_wall, admit_cpu))
        wall = build_wall + solve_wall + extract_wall + admit_wall
        phases["round"].append((wall, build_cpu + solve_cpu + extract_cpu + admit_cpu))
        modelled.append(modelled_round_s(net))
        size = (net.num_nodes, net.num_arcs, len(placed))
    print(
        f"{nodes:>6} nodes  {model_name:<9}  network {size[0]:,} nodes {size[1]:,} arcs, "
        f"{len(tasks):,} ready tasks, {size[2]:,} placed per round"
    )
    print(
        f"    model    (master/schedulers/firmament/solver.py)        cpu median "
        f"{statistics.median(modelled) * 1000:8.1f} ms  p99 {p99(sorted(modelled)) * 1000:8.1f} ms"
    )
    for phase, samples in phases.items():
        walls = sorted(w for w, _ in samples)
        cpus = sorted(c for _, c in samples)
        print(
            f"    {phase:<8} wall median {statistics.median(walls) * 1000:8.1f} ms"
            f"  p99 {p99(walls) * 1000:8.1f} ms"
            f"   cpu median {statistics.median(cpus) * 1000:8.1f} ms  p99 {p99(cpus) * 1000:8.1f} ms"
        )


def p99(values: list[float]) -> float:
    return values[min(len(values) - 1, round(0.99 * (len(values) - 1)))]


def show(model_name: str) -> None:
    """docs/firmament.md's instance: 3 nodes (a transient pair in two zones), 2 jobs, 4 tasks."""
    nodes = (
        NodeView("r0", "reserved", 2, 4096, (RunningTask("old/0", "old", 1024, 0.0, 60.0),)),
        NodeView("t0", "transient", 2, 4096, launched=9_000.0, zone="a"),
        NodeView("t1", "transient", 1, 4096, launched=100.0, zone="b"),
    )
    jobs = (
        JobView("j0", 0.0, tuple(PendingTask(f"j0/t{i}", "j0", 0, i, 1024, 600.0) for i in range(3))),
        JobView("j1", 1.0, (PendingTask("j1/t0", "j1", 0, 0, 3072, 60.0),)),
    )
    snap = ClusterSnapshot(NOW, nodes, jobs)
    tasks = [task for job in jobs for task in job.pending]
    waited = {"j0/t0": 60.0, "j0/t1": 60.0, "j0/t2": 0.0, "j1/t0": 30.0}
    net = build(snap, cost_model({"cost_model": model_name}, RISK), waited, tasks)
    solution = solve(net)
    print(
        f"cost model {model_name}: {net.num_nodes} nodes, {net.num_arcs} arcs, optimal cost {solution.cost}"
    )
    for arc in range(net.num_arcs):
        tail, head = net.labels[net.tails[arc]], net.labels[net.heads[arc]]
        flow = int(solution.flows[arc])
        print(
            f"    {tail:>14} -> {head:<14} capacity {net.capacities[arc]:>2}"
            f"  cost {net.costs[arc]:>6}  flow {flow}"
        )
    print("placed:", extract(net, solution.flows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1000,12500")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--cost-model", default="quincy")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--show", metavar="COST_MODEL", help="print a small instance's network and flow")
    args = parser.parse_args()
    if args.show:
        show(args.show)
        return
    for nodes in (int(n) for n in args.nodes.split(",")):
        measure(nodes, args.rounds, args.cost_model, args.seed)


if __name__ == "__main__":
    main()
