"""PageRank per-iteration time on the testbed (1 reserved + 4 transient agents) vs
single-process scipy.sparse power iteration on the same graph (its COST).

The testbed figure comes from a real scenario run: an iteration is one
``pagerank.iterate`` stage, timed from its first task's start to its last
task's end (tasks.csv), averaged over the iterations. The peer is the
reference implementation's loop (CSR matrix-vector product per iteration),
timed without building the matrix.

    python benchmarks/workload_pagerank.py [--nodes 200000] [--edges 2000000] [--iterations 5]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import yaml

from testbed.journal.tables import read_table
from testbed.scenario.schema import PagerankJob
from testbed.workloads.pagerank import reference as pagerank_reference

SCENARIO = {
    "name": "bench-pagerank",
    "seed": 1,
    "cluster": {"reserved": 1, "transient": 4},
    "policy": {"scheduler": "fifo", "strategy": "spark"},
}


def scipy_seconds_per_iteration(job: PagerankJob, seed: int) -> float:
    src, dst = pagerank_reference.job_edges(job, seed)
    links = pagerank_reference.link_matrix(src, dst)
    ranks = np.full(len(links.ids), 1.0 / len(links.ids))
    started = time.perf_counter()
    for _ in range(job.iterations):
        ranks = links.step(ranks, job.damping)
    return (time.perf_counter() - started) / job.iterations


def testbed_seconds_per_iteration(job: PagerankJob, work: Path) -> tuple[float, float]:
    scenario = {**SCENARIO, "jobs": [job.model_dump(exclude_none=True)]}
    path = work / "scenario.yaml"
    path.write_text(yaml.safe_dump(scenario))
    subprocess.run(
        [sys.executable, "-m", "testbed.app.cli", "run", str(path), "--out", str(work / "run")],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    spans: dict[int, list[float]] = defaultdict(list)
    for row in read_table(work / "run" / "tasks.csv", "tasks"):
        if row["status"] == "succeeded":
            spans[int(row["stage"])] += [float(row["start_wall_s"]), float(row["end_wall_s"])]
    iterations = [max(spans[s]) - min(spans[s]) for s in range(3, 3 + job.iterations)]
    job_span = max(max(v) for v in spans.values()) - min(min(v) for v in spans.values())
    return sum(iterations) / len(iterations), job_span


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200_000)
    parser.add_argument("--edges", type=int, default=2_000_000)
    parser.add_argument("--iterations", type=int, default=5)
    parser.add_argument("--reduces", type=int, default=4)
    args = parser.parse_args()
    job = PagerankJob(
        workload="pagerank",
        nodes=args.nodes,
        edges=args.edges,
        iterations=args.iterations,
        reduces=args.reduces,
        memory_mb=512,
    )
    seed = SCENARIO["seed"] * 1000
    with tempfile.TemporaryDirectory(prefix="bench-pr-") as tmp:
        ours, span = testbed_seconds_per_iteration(job, Path(tmp))
    peer = scipy_seconds_per_iteration(job, seed)
    print(f"graph: {args.nodes} node ids, {args.edges} R-MAT edges, {args.reduces} partitions")
    print(
        f"testbed: {ours:.3f} s per iteration (whole job {span:.1f} s)   "
        f"scipy.sparse, one process: {peer:.4f} s per iteration   COST ratio {ours / peer:.0f}x"
    )


if __name__ == "__main__":
    main()
