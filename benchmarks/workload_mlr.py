"""The MLR ops' seconds per MB read, the unit of the simulator's built-in op models
(testbed/scenario/simulation.py), against numpy summing the same vectors.

Runs an MLR job in this process (``testbed.workloads.local``: the agent's task code minus
the network) ``--repeat`` times and prints, per op, the fastest run's median task: seconds
per MB it read (``TaskMetrics.bytes_in``: its points, the broadcast model, the vectors it
sums). The defaults are the built-in models' shape (features 1000, classes 512, 1,000
points per map) with as many aggregates as the paper's 22. An aggregate and the model step
sum whole gradients (MLlib's treeAggregate); the peer is ``numpy.add`` of as many
model-sized vectors, already in memory, per MB: the floor of that summing.

    python benchmarks/workload_mlr.py [--maps 22] [--reduces 22] [--iterations 3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from testbed.scenario.schema import MlrJob
from testbed.workloads import mlr
from testbed.workloads.local import LocalJob

MB = 2**20


def seconds_per_mb(job: MlrJob, seed: int) -> dict[str, float]:
    """Per op (the final model step apart), the median task's seconds per MB read."""
    rates: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="bench-mlr-") as tmp:
        local = LocalJob(mlr.plan(job, seed), Path(tmp)).run(1 << 30)
    for run in local.tasks.values():
        op = run.spec.op + (".final" if run.spec.final else "")
        if run.metrics.bytes_in:
            rates[op].append(run.seconds / (run.metrics.bytes_in / MB))
    return {op: statistics.median(values) for op, values in sorted(rates.items())}


def numpy_sum_seconds_per_mb(vectors: int, size: int, repeat: int) -> float:
    """``numpy.add`` of ``vectors`` float64 vectors of ``size`` values into one: fastest of ``repeat``."""
    parts = [np.random.default_rng(i).standard_normal(size) for i in range(vectors)]
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        total = np.zeros(size)
        for part in parts:
            total += part
        best = min(best, time.perf_counter() - started)
    return best / (vectors * size * 8 / MB)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, default=1000)
    parser.add_argument("--classes", type=int, default=512)
    parser.add_argument("--maps", type=int, default=22)
    parser.add_argument("--reduces", type=int, default=22)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    job = MlrJob(
        workload="mlr",
        points=1000 * args.maps,
        features=args.features,
        classes=args.classes,
        iterations=args.iterations,
        maps=args.maps,
        reduces=args.reduces,
    )
    runs = [seconds_per_mb(job, seed=1) for _ in range(args.repeat)]
    size = (args.features + 1) * args.classes
    peer = numpy_sum_seconds_per_mb(args.reduces, size, args.repeat)
    print(
        f"mlr: {args.maps} maps, {args.reduces} aggregates, features {args.features}, "
        f"classes {args.classes} ({size * 8 / MB:.1f} MB a vector); fastest of {args.repeat} runs"
    )
    for op in runs[0]:
        print(f"  {op:<18} {min(run[op] for run in runs):.4f} s per MB read")
    print(f"  numpy.add of {args.reduces} vectors: {peer:.4f} s per MB summed")


if __name__ == "__main__":
    main()
