"""Ours beside Apache Spark (``local-cluster``, executors as real processes) on the same jobs, the
same inputs and partitions, without and with evictions on the chaos controller's plan.

Per job: both engines run it without evictions; the scenario's storm (``--at`` of the job's
no-eviction JCT, ``select: random``) is drawn by ``master.chaos.plan`` (the very rules a run's
controller follows), and each engine loses that node at that fraction of its own JCT (ours: the
storm in the scenario; Spark: SIGKILL of the executor JVM in the victim's position). Printed per
job: JCT, its inflation, the task attempts each engine ran, what Spark recomputed (event log) and
whether the outputs are equal (to each other and to our independent reference).

    python benchmarks/spark_anchor.py [--jobs wordcount,sort,pagerank] [--at 0.5] [--seed 1]
        [--transient 3] [--out DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from master.chaos.plan import plan_evictions
from master.shell.run import run_scenario
from testbed.app.anchor.compare import (
    RESERVED,
    output_differences,
    pyspark_missing,
    run_spark,
    scenario_data,
    spark_spec,
    write_input,
)
from testbed.scenario.schema import parse_scenario
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host
from testbed.workloads.check import check_output

JOBS: dict[str, dict[str, Any]] = {
    "wordcount": {"size_mb": 24, "maps": 6, "reduces": 6},
    "sort": {"size_mb": 24, "maps": 6, "reduces": 6},
    "pagerank": {"nodes": 5000, "edges": 60000, "maps": 6, "reduces": 6, "iterations": 4},
}


def run_ours(data: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    result = asyncio.run(run_scenario(resolve(parse_scenario(data), Host.this_machine()), run_dir))
    if not result.ok:
        raise RuntimeError(f"our run failed: {run_dir}")
    return result.summary


def victim_position(data: dict[str, Any], at_s: float) -> int:
    """The planned victim's position among the live transient nodes (ordinals from 0)."""
    planned = [e for e in plan_evictions(parse_scenario(data), at_s + 1) if e.storm is not None]
    return planned[0].ordinal if planned else 0


def one_job(kind: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    entry = write_input(kind, JOBS[kind], args.seed, root / "input")
    base = scenario_data(entry, args.transient, [], args.seed)
    ours0 = run_ours(base, root / "ours-0")
    nodes = RESERVED + args.transient
    spark0 = run_spark(spark_spec(entry, nodes, root / "spark-0-out", []), root / "spark-0")
    ours_at = round(args.at * ours0["mean_jct_s"], 3)
    storm = {"at": ours_at, "evict": {"count": 1, "kind": "transient", "select": "random"}}
    evicted = scenario_data(entry, args.transient, [storm], args.seed)
    victim = victim_position(evicted, ours_at)
    ours1 = run_ours(evicted, root / "ours-1")
    kills = [{"at_s": round(args.at * spark0["log"]["jct_s"], 3), "victim": victim}]
    spark1 = run_spark(spark_spec(entry, nodes, root / "spark-1-out", kills), root / "spark-1")
    job = parse_scenario(base).jobs[0]
    outputs = {
        "no eviction": output_differences(kind, root / "ours-0" / "outputs" / "j000", root / "spark-0-out"),
        "evicted": output_differences(kind, root / "ours-1" / "outputs" / "j000", root / "spark-1-out"),
        "Spark against our reference": [
            *check_output(job, args.seed, root / "spark-0-out"),
            *check_output(job, args.seed, root / "spark-1-out"),
        ],
    }
    return {"job": kind, "params": JOBS[kind], "victim": victim, "ours": [ours0, ours1],
            "spark": [spark0, spark1], "outputs": outputs}


def row(r: dict[str, Any]) -> str:
    (o0, o1), (s0, s1) = r["ours"], r["spark"]
    sl0, sl1 = s0["log"], s1["log"]
    same = "equal" if not any(r["outputs"].values()) else "DIFFER: " + json.dumps(r["outputs"])
    return (
        f"| {r['job']} | {o0['mean_jct_s']:.2f} → {o1['mean_jct_s']:.2f} s "
        f"| {o1['mean_jct_s'] / o0['mean_jct_s']:.2f}x "
        f"| {sl0['jct_s']:.2f} → {sl1['jct_s']:.2f} s | {sl1['jct_s'] / sl0['jct_s']:.2f}x "
        f"| {o0['task_attempts']} → {o1['task_attempts']} ({o1['relaunched_tasks']} relaunched) "
        f"| {sl0['task_ends']} → {sl1['task_ends']} ({sl1['recomputed_tasks']} recomputed, "
        f"{sl1['retried_attempts']} retried, {sl1['resubmitted_stages']} stages resubmitted) "
        f"| {o1['evictions']} / {len(s1['kills'])} | {same} |"
    )


HEADER = (
    "| job | ours JCT | ours inflation | Spark JCT | Spark inflation | ours task attempts "
    "| Spark task attempts | evictions ours / Spark | outputs |\n|---|---|---|---|---|---|---|---|---|"
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default="wordcount,sort,pagerank")
    parser.add_argument("--at", type=float, default=0.5, help="eviction time, a fraction of the job's JCT")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--transient", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="keep the runs here")
    parser.add_argument("--json", type=Path, default=None, help="write every figure here")
    args = parser.parse_args()
    if missing := pyspark_missing():
        print(missing, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="spark-anchor-") as tmp:
        root = args.out or Path(tmp)
        results = []
        nodes = f"{RESERVED} reserved + {args.transient} transient single-slot nodes"
        print(f"load {os.getloadavg()[0]:.1f}; {nodes}; seed {args.seed}; evicted at {args.at:g} of each JCT")
        print(HEADER)
        for kind in args.jobs.split(","):
            results.append(one_job(kind, args, root / kind))
            print(row(results[-1]), flush=True)
        if args.json:
            args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
