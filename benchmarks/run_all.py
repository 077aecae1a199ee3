"""Run the whole benchmark suite, each figure printed beside its peer's from the same run.

    python benchmarks/run_all.py            # full sizes (tens of minutes on 2 cores)
    python benchmarks/run_all.py --quick    # small sizes, a few minutes

Results and their interpretation live in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

SUITE: list[tuple[str, list[str], list[str]]] = [
    # (script, full arguments, quick arguments)
    ("density.py", ["--agents", "50"], ["--agents", "10"]),
    ("startup.py", ["--nodes", "50,100,200", "--peer-up-to", "200"], ["--nodes", "20", "--peer-up-to", "20"]),
    ("dispatch.py", ["--agents", "50", "--tasks", "20000"], ["--agents", "10", "--tasks", "2000"]),
    (
        "eviction_detection.py",
        ["--evictions", "100", "--freezes", "10"],
        ["--evictions", "20", "--freezes", "3"],
    ),
    ("chaos_realism.py", ["--kills", "200"], ["--kills", "40", "--nodes", "6"]),
    ("shuffle.py", ["--mb", "1024"], ["--mb", "128"]),
    ("workload_sort.py", ["--size-mb", "64"], ["--size-mb", "16"]),
    ("workload_wordcount.py", ["--size-mb", "16"], ["--size-mb", "4"]),
    (
        "workload_pagerank.py",
        ["--nodes", "100000", "--edges", "1000000", "--iterations", "5"],
        ["--nodes", "20000", "--edges", "200000", "--iterations", "3"],
    ),
    ("yarn_me_decision.py", [], ["--scales", "100:1000:20"]),
    ("policy_rounds.py", [], ["--scale", "0.1", "--repeat", "2"]),
    ("container_start.py", [], ["--starts", "5"]),
    ("fidelity_isolation.py", [], ["--cpu-s", "0.5", "--block-mb", "4"]),
    ("weak_scaling.py", [], ["--sizes", "1,2,4", "--repeat", "3", "--repeat-nodes", "2"]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    parser.add_argument("--only", nargs="*", help="script names to run (default: all)")
    args = parser.parse_args()
    failures = 0
    for script, full, quick in SUITE:
        if args.only and script not in args.only:
            continue
        print(f"\n=== {script} {' '.join(quick if args.quick else full)}", flush=True)
        started = time.perf_counter()
        code = subprocess.run(
            [sys.executable, str(HERE / script), *(quick if args.quick else full)], check=False
        ).returncode
        print(f"--- {script}: exit {code}, {time.perf_counter() - started:.0f} s", flush=True)
        failures += code != 0
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
