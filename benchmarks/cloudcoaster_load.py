"""How loaded a CloudCoaster scenario is: offered by its arrivals, and measured in its runs.

    python benchmarks/cloudcoaster_load.py SCENARIO [--set KEY=VALUE ...] [--seeds 1-3]
    python benchmarks/cloudcoaster_load.py --runs RUN_DIR [RUN_DIR ...] [--threshold 0.95]

Offered (the generated arrivals, nothing simulated), per seed: the jobs, the long jobs'
share of the jobs and of the task-seconds, the long work per second over the general
partition's servers and the short work per second over the short-only partition's servers
(1.0: the partition's whole capacity, on average over the horizon).

Measured (a run's tasks.csv and nodes.csv), per run: the long-load ratio over time, l_r =
servers running a long task / servers up, as a time-weighted mean, its maximum and the share
of the run's time it spent at or above the threshold. A server whose long task is only queued
counts in CloudCoaster's N_long but not here: this l_r is a lower bound of the manager's.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.schedulers.eagle import short_partition_size
from master.summary.coaster import long_job_ids
from testbed.journal.tables import measured_rows
from testbed.scenario.schema import Scenario, load_scenario


def seeds(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def offered(scenario: Scenario, seed: int) -> str:
    arrivals = scenario.arrivals
    if arrivals is None or arrivals.synthetic is None:
        raise SystemExit("the scenario has no synthetic arrivals")
    mix = arrivals.mix()
    jobs = arrivals.jobs(seed)
    reserved = scenario.cluster.reserved.count * scenario.cluster.reserved.slots
    eagle = scenario.policy.options.get("eagle", {})
    short = short_partition_size(reserved, float(eagle.get("short_fraction", 0.0)) if eagle else 0.0)
    long_work = sum(sum(j.task_durations) for j in jobs if j.long)
    short_work = sum(sum(j.task_durations) for j in jobs if not j.long)
    long_jobs = sum(j.long for j in jobs)
    short_load = f"{short_work / mix.horizon_s / short:.2f}" if short else "-"
    long_share = long_work / (long_work + short_work)
    return (
        f"| {seed} | {len(jobs):,} | {long_jobs / len(jobs):.1%} | {long_share:.1%} "
        f"| {long_work / mix.horizon_s / (reserved - short):.2f} | {short_load} |"
    )


def measured(run: Path, threshold: float) -> str:
    long_jobs = long_job_ids(run / "events.jsonl")
    changes: list[tuple[float, int, int]] = []  # (time, d long servers, d servers up)
    for task in measured_rows(run / "tasks.csv"):
        if task["job_id"] in long_jobs and task["start_s"] and task["end_s"]:
            changes += [(float(task["start_s"]), 1, 0), (float(task["end_s"]), -1, 0)]
    nodes = measured_rows(run / "nodes.csv")
    end = max(float(t) for t, *_ in changes) if changes else 0.0
    for node in nodes:
        changes.append((float(node["launched_s"] or 0.0), 0, 1))
        changes.append((float(node["ended_s"]) if node["ended_s"] else end, 0, -1))
    changes.sort()
    long_up, up, last, area, above, peak = 0, 0, 0.0, 0.0, 0.0, 0.0
    for t, d_long, d_up in changes:
        if up and t > last:
            ratio = long_up / up
            area += ratio * (t - last)
            above += (t - last) if ratio >= threshold else 0.0
            peak = max(peak, ratio)
        long_up, up, last = long_up + d_long, up + d_up, max(last, t)
    summary = json.loads((run / "summary.json").read_text()) if (run / "summary.json").exists() else {}
    span = last or 1.0
    return (
        f"| {run.name} | {area / span:.3f} | {peak:.3f} | {above / span:.1%} | "
        f"{summary.get('transient_launched', '-')} | {summary.get('avg_transient_servers', '-')} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", nargs="?", type=Path)
    parser.add_argument("--set", action="append", default=[], dest="settings", metavar="KEY=VALUE")
    parser.add_argument("--seeds", default="1-3", help="a seed or a range (default 1-3)")
    parser.add_argument("--runs", nargs="+", type=Path, default=[], help="run directories to measure")
    parser.add_argument("--threshold", type=float, default=0.95, help="l_r threshold (default 0.95)")
    args = parser.parse_args()
    if args.scenario is not None:
        scenario = load_scenario(args.scenario, args.settings)
        print("| seed | jobs | long jobs | long task-seconds | long load / general | short load / short |")
        print("|---|---|---|---|---|---|")
        for seed in seeds(args.seeds):
            print(offered(scenario, seed))
    if args.runs:
        print(f"| run | mean l_r | max l_r | time at l_r >= {args.threshold:g} | transients launched | avg |")
        print("|---|---|---|---|---|---|")
        for run in args.runs:
            print(measured(run, args.threshold))
    return 0


if __name__ == "__main__":
    sys.exit(main())
