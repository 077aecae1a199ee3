"""CloudCoaster's cost on the paper's base, and where its transient servers' time goes.

    python benchmarks/cloudcoaster_cost.py RUN_DIR [RUN_DIR ...]

Each run directory is one simulated or real run of a CloudCoaster scenario
(``scenarios/papers/cloudcoaster.yaml``). The paper's base (HotCloud'19, Table 1): the
``p N`` on-demand servers of the short-only partition that transient servers replace; the
saving is ``1 - (average transient servers / r) / (p N)`` (r = 3: 1 - 28.2 / 40 = 29.5%, its
transients alive on average 84.5 of K = 120, 70%). Per run, from its nodes.csv and tasks.csv:
that saving, the transients alive on average as a share of K, and that share in three
phases: before the first transient is launched (the general partition filling), from then to
the arrivals' horizon, and after it (the drain); beside each, the manager's target
``n* = min(K, max(0, ceil(N_long / L_r^T - N_static)))`` from the servers running a long task
(N_long; a server whose long task is only queued counts in the manager's but not here, so
this target is a lower bound) and the on-demand servers up (N_static), as a share of K.
Times are the run's seconds (its trace seconds over its time_scale).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.schedulers.eagle import short_partition_size
from master.summary.coaster import long_job_ids
from testbed.journal.tables import measured_rows

Steps = list[tuple[float, int, int, int]]
"""(time, d transients alive, d long servers, d on-demand servers up), sorted."""


def steps(run: Path, end: float) -> Steps:
    long_jobs = long_job_ids(run / "events.jsonl")
    changes = []
    for task in measured_rows(run / "tasks.csv"):
        if task["job_id"] in long_jobs and task["start_s"] and task["end_s"]:
            changes += [(float(task["start_s"]), 0, 1, 0), (float(task["end_s"]), 0, -1, 0)]
    for node in measured_rows(run / "nodes.csv"):
        transient = node["node_class"] == "transient"
        ended = float(node["ended_s"]) if node["ended_s"] else end
        for t, sign in ((float(node["launched_s"] or 0.0), 1), (ended, -1)):
            changes.append((t, sign * transient, 0, sign * (not transient)))
    return sorted(changes)


def phases(
    changes: Steps, bounds: list[float], budget: int, threshold: float
) -> list[tuple[float, float, float]]:
    """Per phase [bounds[i], bounds[i+1]): its length, the mean transients alive and the mean
    target, both over K."""
    sums = [[0.0, 0.0, 0.0] for _ in bounds[:-1]]
    alive = long_up = static = 0
    last = 0.0
    cuts = sorted([(t, 0, 0, 0) for t in bounds] + changes)
    for t, d_alive, d_long, d_static in cuts:
        if t > last:
            target = min(budget, max(0, math.ceil(long_up / threshold - static - 1e-9)))
            i = max(i for i, b in enumerate(bounds[:-1]) if b <= last)
            sums[i][0] += t - last
            sums[i][1] += alive * (t - last)
            sums[i][2] += target * (t - last)
            last = t
        alive, long_up, static = alive + d_alive, long_up + d_long, static + d_static
    return [
        (span, a / span / budget if span else 0.0, g / span / budget if span else 0.0) for span, a, g in sums
    ]


def row(run: Path) -> str:
    scenario = yaml.safe_load((run / "scenario.yaml").read_text())
    summary = json.loads((run / "summary.json").read_text())
    options = scenario["policy"]["options"]["cloudcoaster"]
    r, p, threshold = float(options["r"]), float(options["p"]), float(options.get("threshold", 0.95))
    eagle = scenario["policy"]["options"].get("eagle", {})
    n = short_partition_size(
        scenario["cluster"]["reserved"]["count"], float(eagle.get("short_fraction", 0.02))
    )
    budget, replaced = math.floor(r * n * p + 1e-9), math.ceil(p * n - 1e-9)
    nodes = measured_rows(run / "nodes.csv")
    end = max((float(x["ended_s"]) for x in nodes if x["ended_s"]), default=0.0)
    launches = sorted(float(x["launched_s"]) for x in nodes if x["node_class"] == "transient")
    horizon = float(scenario["arrivals"]["synthetic"]["horizon_s"]) / float(scenario.get("time_scale") or 1)
    first = launches[0] if launches else horizon
    parts = phases(steps(run, end), [0.0, first, horizon, end], budget, threshold)
    whole = summary["avg_transient_servers"] / budget
    integrated = sum(span * alive for span, alive, _ in parts) / end
    if abs(integrated - whole) > 0.005:  # summary.json's figure, computed apart (master/summary/coaster.py)
        raise SystemExit(f"{run}: transients alive {integrated:.4f} of K here, {whole:.4f} in summary.json")
    saving = 1 - summary["transient_on_demand_equiv"] / replaced
    cells = " | ".join(f"{span:.0f} s: {a:.0%} ({g:.0%})" for span, a, g in parts)
    return (
        f"| {run.name} | {summary['transient_launched']} | {summary['mean_transient_active_s']:.0f} "
        f"| {summary['avg_transient_servers']:.1f} | {whole:.1%} | {cells} | {saving:.1%} "
        f"| {1 - summary['short_partition_cost_servers'] / n:.1%} |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args()
    print(
        "| run | transients launched | mean active (s) | alive on average | of K, whole run "
        "| of K (target): filling | of K (target): first launch to horizon | of K (target): drain "
        "| saving on the replaced p N (the paper's base) | saving on the whole short partition N |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for run in args.runs:
        print(row(run))
    return 0


if __name__ == "__main__":
    sys.exit(main())
