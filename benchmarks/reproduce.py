"""Regenerate one paper's table from its scenario in scenarios/papers (simulated).

    python benchmarks/reproduce.py pado|pado-mr|yarn-me|cloudcoaster|rdd-recovery [--full]

pado, pado-mr, yarn-me, cloudcoaster: a `testbed sweep` over the paper's variants with
seeds; its sweep.md (bootstrap 95% intervals over seeds) is the table. Without --full,
the reduced size below (one that finishes in minutes on a small machine) is used.
rdd-recovery: the job with and without its node failure; per-iteration times.
"""
from __future__ import annotations

import argparse
import csv
import itertools
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAPERS = ROOT / "scenarios" / "papers"

STRATEGIES = "policy.strategy=spark,spark-checkpoint,pado"
RATES = "chaos.transient.lifetime=none,low,medium,high"
SWEEPS: dict[str, tuple[list[str], list[str], int]] = {
    # name: (--vary lines, reduced-size --set lines, seeds)
    "pado": ([STRATEGIES, RATES], [], 3),
    "pado-mr": ([STRATEGIES, RATES], [], 3),
    "yarn-me": (
        ["policy.scheduler=yarn,yarn-me"],
        ["cluster.transient.count=10", "jobs.0.repeat=2", "jobs.1.repeat=2", "jobs.2.repeat=1"],
        3,
    ),
    "cloudcoaster": (
        ["policy.autoscaler=static,cloudcoaster", "policy.options.cloudcoaster.r=1,3"],
        [
            "cluster.reserved.count=40",
            "policy.options.eagle.short_fraction=0.2",
            "arrivals.synthetic.horizon_s=900",
            "arrivals.synthetic.calm_rate_per_s=0.05",
            "arrivals.synthetic.burst_rate_per_s=0.5",
            "arrivals.synthetic.long_rate_per_s=0.011",
            "arrivals.synthetic.long_tasks=8",
        ],
        3,
    ),
}


def sweep(name: str, full: bool, out: Path) -> Path:
    varies, reduced, seeds = SWEEPS[name]
    command = ["testbed", "sweep", str(PAPERS / f"{name}.yaml"), "--seeds", str(seeds), "--out", str(out)]
    for vary in varies:
        command += ["--vary", vary]
    for setting in [] if full else reduced:
        command += ["--set", setting]
    subprocess.run(command, check=True)
    return out / "sweep.md"


def iteration_times(tasks_csv: Path) -> list[float]:
    """End of each pagerank.iterate stage's last successful task, differenced."""
    ends: dict[int, float] = {}
    with tasks_csv.open() as handle:
        for row in csv.DictReader(handle):
            if row["status"] == "succeeded":
                stage = int(row["stage"])
                ends[stage] = max(ends.get(stage, 0.0), float(row["end_s"]))
    stages = sorted(ends)
    return [ends[b] - ends[a] for a, b in itertools.pairwise(stages[2:])]


def rdd_recovery(out: Path) -> str:
    scenario = str(PAPERS / "rdd-recovery.yaml")
    columns = {}
    for label, extra in (("no failure", ["--set", "chaos.storms=[]"]), ("failure at 12 s", [])):
        run = out / label.replace(" ", "-")
        subprocess.run(["testbed", "run", scenario, "--out", str(run), *extra], check=True,
                       stdout=subprocess.DEVNULL)
        columns[label] = iteration_times(run / "tasks.csv")
    lines = ["| iteration | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for index in range(max(len(times) for times in columns.values())):
        cells = [f"{times[index]:.2f}" if index < len(times) else "" for times in columns.values()]
        lines.append(f"| {index + 1} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paper", choices=[*SWEEPS, "rdd-recovery"])
    parser.add_argument("--full", action="store_true", help="the scenario's own (paper) size")
    parser.add_argument("--out", type=Path, help="directory for the runs (default: a new temporary one)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix=f"reproduce-{args.paper}-"))
    if args.paper == "rdd-recovery":
        print(rdd_recovery(out))
    else:
        print(f"table: {sweep(args.paper, args.full, out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
