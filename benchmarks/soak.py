"""Soak test (opt-in, not part of the test suite): runs back to back under eviction storms.

Each run is a mixed workload (wordcount, sort and PageRank jobs, short and
long sleep tasks) on 1 reserved + 5 transient nodes, with scripted eviction storms
(a different victim choice each run), exponential transient lifetimes and
replacements, and, every other run, a restart of the embedded broker. The
scheduler and strategy rotate too: fifo and yarn-me with Spark's lineage
recovery, yarn with checkpointing, fifo and yarn-me with Pado. After
each run it checks every output against an independent reference and looks
for leaks: child processes, listening sockets and open files of this process,
node directories. It stops at the first problem.

    python benchmarks/soak.py --minutes 30 [--out soak-runs] [--seed 1]

It prints one line per run and a summary, and writes ``soak.json`` in --out.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import sys
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.shell.run import run_scenario
from testbed.scenario.schema import Scenario, parse_scenario
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host
from testbed.wire.broker import EmbeddedBroker
from testbed.workloads.check import check_output

SELECTS = ("random", "busiest", "most-data", "oldest", "youngest")
POLICIES = (
    {"scheduler": "fifo", "strategy": "spark"},
    {"scheduler": "yarn", "strategy": "spark-checkpoint"},
    {"scheduler": "fifo", "strategy": "pado"},
    {"scheduler": "yarn-me", "strategy": "spark"},
    {"scheduler": "yarn-me", "strategy": "pado"},
)
JOBS: list[dict[str, Any]] = [
    {"workload": "wordcount", "size_mb": 6, "maps": 6, "reduces": 3, "submit_at": "0s"},
    {"workload": "sort", "size_mb": 4, "maps": 4, "reduces": 2, "submit_at": "2s"},
    {"workload": "sleep", "tasks": 8, "duration": 3.0, "submit_at": "3s"},
    {"workload": "pagerank", "nodes": 2000, "edges": 10000, "iterations": 4, "submit_at": "5s"},
    {"workload": "wordcount", "size_mb": 4, "maps": 4, "reduces": 2, "submit_at": "8s"},
    {"workload": "sleep", "tasks": 4, "duration": 8.0, "submit_at": "11s"},
    {"workload": "sort", "size_mb": 2, "maps": 2, "reduces": 2, "submit_at": "14s"},
]


def scenario_for(run: int, seed: int) -> Scenario:
    return parse_scenario(
        {
            "name": f"soak-{run:03d}",
            "seed": seed + run,
            "cluster": {"reserved": 1, "transient": 5, "heartbeat_interval": 0.25, "heartbeat_timeout": 2},
            "chaos": {
                "transient": {
                    "lifetime": {"exponential": {"mean": "40s"}},
                    "replace": True,
                    "provisioning_delay": "2s",
                },
                "storms": [
                    {
                        "at": "4s",
                        "every": "7s",
                        "times": 4,
                        "evict": {"fraction": 0.4, "select": SELECTS[run % len(SELECTS)]},
                    }
                ],
            },
            "policy": POLICIES[run // 2 % len(POLICIES)],  # each with and without a broker restart
            "jobs": JOBS,
            "timeout": 300,
        }
    )


def check_outputs(run_dir: Path, scenario: Scenario) -> list[str]:
    """Every job's output against a reference computed here, independently of the run."""
    problems = []
    for ordinal, job in enumerate(scenario.jobs):
        outputs = run_dir / "outputs" / f"j{ordinal:03d}"
        if job.workload != "sleep":
            seed = scenario.seed * 1000 + ordinal
            problems += [f"j{ordinal:03d}: {p}" for p in check_output(job, seed, outputs)]
        else:
            for index in range(job.tasks):
                part = outputs / f"part-{index:05d}"
                line = f"j{ordinal:03d}.s0.t{index}\t{job.duration:.3f}\n"
                if not part.is_file() or part.read_text() != line:
                    problems.append(f"j{ordinal:03d}: part {index} is missing or wrong")
    return problems


def leaks(run_dir: Path, fds_before: int) -> list[str]:
    me = psutil.Process()
    problems = [f"process left running: {p.pid} {' '.join(p.cmdline())}" for p in me.children(recursive=True)]
    listening = [c for c in me.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    problems += [f"socket left listening on {c.laddr.ip}:{c.laddr.port}" for c in listening]
    if me.num_fds() > fds_before + 5:
        problems.append(f"open files grew from {fds_before} to {me.num_fds()}")
    nodes = run_dir / "nodes"
    if nodes.exists() and any(nodes.iterdir()):
        problems.append(f"node directories left: {sorted(p.name for p in nodes.iterdir())}")
    return problems


async def one_run(run: int, seed: int, out: Path) -> dict[str, Any]:
    scenario = scenario_for(run, seed)
    run_dir = out / scenario.name
    run_dir.mkdir(parents=True, exist_ok=True)
    broker = EmbeddedBroker()
    restarts: list[asyncio.Task[None]] = []

    def on_event(master: Any, record: dict[str, Any]) -> None:
        if run % 2 == 1 and record["event"] == "storm" and record["firing"] == 1 and not restarts:
            restarts.append(asyncio.get_running_loop().create_task(broker.restart()))

    fds_before = psutil.Process().num_fds()
    started = time.monotonic()
    settings = resolve(scenario, Host.this_machine())
    result = await run_scenario(settings, run_dir, on_event=on_event, broker=broker)
    await asyncio.gather(*restarts)
    rows = list(csv.DictReader((run_dir / "tasks.csv").open()))
    problems = [] if result.ok else [f"run failed: {result.summary}"]
    problems += check_outputs(run_dir, scenario) + leaks(run_dir, fds_before)
    return {
        "run": scenario.name,
        "policy": f"{scenario.policy.scheduler}/{scenario.policy.strategy}",
        "wall_s": round(time.monotonic() - started, 1),
        "jobs": result.summary["jobs"],
        "succeeded": result.summary["succeeded"],
        "evictions": result.summary["evictions"],
        "relaunched_tasks": result.summary["relaunched_tasks"],
        "attempts": len(rows),
        "broker_restarted": bool(restarts),
        "problems": problems,
    }


async def soak(minutes: float, seed: int, out: Path) -> list[dict[str, Any]]:
    deadline = time.monotonic() + 60 * minutes
    results: list[dict[str, Any]] = []
    run = 0
    while time.monotonic() < deadline:
        outcome = await one_run(run, seed, out)
        results.append(outcome)
        print(
            f"{outcome['run']}  {outcome['policy']:22s} {outcome['wall_s']:6.1f}s  "
            f"jobs {outcome['succeeded']}/{outcome['jobs']}  "
            f"evictions {outcome['evictions']:3d}  relaunched {outcome['relaunched_tasks']:3d}  "
            f"broker restart {'yes' if outcome['broker_restarted'] else 'no '}  "
            f"{'OK' if not outcome['problems'] else 'PROBLEMS: ' + '; '.join(outcome['problems'])}",
            flush=True,
        )
        if outcome["problems"]:
            break
        run += 1
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30.0, help="keep starting runs this long")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("soak-runs"))
    args = parser.parse_args()
    started = time.monotonic()
    results = asyncio.run(soak(args.minutes, args.seed, args.out))
    summary = {
        "minutes": round((time.monotonic() - started) / 60, 1),
        "runs": len(results),
        "jobs": sum(r["jobs"] for r in results),
        "jobs_succeeded": sum(r["succeeded"] for r in results),
        "evictions": sum(r["evictions"] for r in results),
        "relaunched_tasks": sum(r["relaunched_tasks"] for r in results),
        "task_attempts": sum(r["attempts"] for r in results),
        "broker_restarts": sum(r["broker_restarted"] for r in results),
        "problems": [p for r in results for p in r["problems"]],
    }
    (args.out / "soak.json").write_text(json.dumps({"summary": summary, "runs": results}, indent=2) + "\n")
    print(json.dumps(summary, indent=2))
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
