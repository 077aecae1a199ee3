"""The results table of the pado-vs-spark sweep, per workload, strategy and eviction rate.

``testbed sweep`` averages over all the jobs of a run; this reads its
``sweep.csv`` (one row per run, with each workload's mean JCT and relaunched
ratio from summary.json) and prints, per workload, the mean over seeds with
the sample standard deviation, and the recovery bytes.

    python benchmarks/pado_vs_spark_table.py sweeps/pado-vs-spark/sweep.csv
"""

from __future__ import annotations

import argparse
import csv
import statistics
from pathlib import Path

STRATEGY = "policy.strategy"
RATE = "chaos.transient.lifetime"
RATES = ("none", "low", "medium", "high")
AS_SHIPPED = "as shipped"
"""The rate of a sweep that does not vary it: the scenario's own."""


def spread(rows: list[dict[str, str]], column: str, digits: int = 3) -> str:
    values = [float(r[column]) for r in rows if r.get(column) not in (None, "")]
    if not values:
        return "-"
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{statistics.fmean(values):.{digits}g} ± {sd:.2g}"


def mean_mb(rows: list[dict[str, str]], column: str) -> str:
    values = [float(r[column]) / 1e6 for r in rows if r.get(column) not in (None, "")]
    return f"{statistics.fmean(values):.1f}" if values else "-"


def table(rows: list[dict[str, str]], workload: str) -> str:
    lines = [
        f"**{workload}**",
        "",
        "| strategy | eviction rate | runs | evictions | mean JCT (s) | relaunched / original tasks |"
        " recomputed MB | checkpointed MB | pushed MB |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    strategies = list(dict.fromkeys(r[STRATEGY] for r in rows))
    for strategy in strategies:
        for rate in (*RATES, AS_SHIPPED):
            mine = [r for r in rows if r[STRATEGY] == strategy and r.get(RATE, AS_SHIPPED) == rate]
            if not mine:
                continue
            jct, ratio = f"mean_jct_s_{workload}", f"relaunched_ratio_{workload}"
            lines.append(
                f"| {strategy} | {rate} | {len(mine)} | {spread(mine, 'evictions', 2)} "
                f"| {spread(mine, jct)} | {spread(mine, ratio, 2)} "
                f"| {mean_mb(mine, 'bytes_recomputed')} | {mean_mb(mine, 'bytes_checkpointed')} "
                f"| {mean_mb(mine, 'bytes_pushed')} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_csv", type=Path)
    args = parser.parse_args()
    with open(args.sweep_csv, newline="") as handle:
        rows = list(csv.DictReader(handle))
    workloads = sorted({c.removeprefix("mean_jct_s_") for c in rows[0] if c.startswith("mean_jct_s_")})
    print("\n\n".join(table(rows, w) for w in workloads))


if __name__ == "__main__":
    main()
