"""One sort reduce task's throughput at 100% and 10% of its ideal memory vs GNU sort.

Both sort the same gensort-layout records: ours as the reduce task of a
1-map, 1-reduce job (its input is the map's block, read locally), GNU sort as
``LC_ALL=C sort -S <same budget>`` on a file of the same records (once with
``--parallel=1``, the same one core as our task, once with its default
threads). Throughput is input MB per wall second.

    python benchmarks/workload_sort.py [--size-mb 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from pathlib import Path

from testbed.scenario.schema import SortJob
from testbed.workloads import sort
from testbed.workloads.local import LocalJob
from testbed.workloads.profile import UNLIMITED, ideal_budget

MB = 2**20


def gnu_sort(records: Path, budget: int, parallel: int | None, work: Path) -> float:
    command = ["sort", "-S", f"{max(1, budget // 1024)}K", "-T", str(work), "-o", str(work / "gnu.out")]
    if parallel:
        command.append(f"--parallel={parallel}")
    started = time.perf_counter()
    subprocess.run([*command, str(records)], check=True, env={**os.environ, "LC_ALL": "C"})
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=float, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-sort-") as tmp:
        work = Path(tmp)
        job = SortJob(workload="sort", size_mb=args.size_mb, maps=1, reduces=1)
        local = LocalJob(sort.plan(job, 1), work / "job").run(UNLIMITED)
        reduce = local.tasks[(1, 0)]
        ideal = ideal_budget(reduce.spec.op, reduce.metrics)
        size = reduce.metrics.bytes_in
        records = work / "records.dat"
        with open(records, "wb") as out:
            for chunk in sort.source_chunks(sort.sources_of(job, 1)[0]):
                chunk.tofile(out)
        print(f"{size / MB:.0f} MB of records; ideal budget of the reduce task {ideal / MB:.0f} MB")
        print(
            f"{'memory':>8} {'budget MB':>9} {'ours MB/s':>10} {'spilled MB':>10} "
            f"{'GNU -p1 MB/s':>12} {'GNU MB/s':>9} {'ours/GNU-p1':>11}"
        )
        for fraction in (1.0, 0.1):
            budget = int(ideal * fraction)
            ours = [local.run_task(1, 0, budget, attempt=10 + r) for r in range(args.repeat)]
            best = min(ours, key=lambda r: r.seconds)
            gnu1 = min(gnu_sort(records, budget, 1, work) for _ in range(args.repeat))
            gnu = min(gnu_sort(records, budget, None, work) for _ in range(args.repeat))
            print(
                f"{fraction:>8.0%} {budget / MB:>9.1f} {size / MB / best.seconds:>10.1f} "
                f"{best.metrics.spill_bytes / MB:>10.1f} {size / MB / gnu1:>12.1f} {size / MB / gnu:>9.1f} "
                f"{gnu1 / best.seconds:>11.2f}"
            )


if __name__ == "__main__":
    main()
