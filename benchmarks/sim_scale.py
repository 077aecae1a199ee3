"""The simulator at scale: events per second and peak memory of ``--backend sim``.

Ours: a scenario of N nodes (a tenth reserved) and T sleep tasks (jobs of ``--tasks-per-job``,
arriving every ``--every`` seconds, each task ``--duration`` seconds) under a scheduler and
an eviction preset, simulated to its end; or a scenario file (``--scenario``). Printed: the
simulated span, wall seconds, events popped off the clock and events handed to the master,
events per wall second, tasks started (and per wall second), the process's CPU seconds (on
a shared host the wall figures follow the load, the CPU ones much less) and peak RSS;
``--profile`` (slower) adds the share of the wall time the master's scheduling rounds took
and the hot functions. ``--wall-limit S`` ends the run
after S wall seconds (its unfinished jobs fail) and reports how far it got: the simulated
seconds against the last job's arrival, and the jobs finished.

Peer, the published figure (not re-run here): the Eagle/Hawk simulator (Delgado et al.,
Eagle, SoCC 2016) simulates 15,000 workers in 15 to 30 minutes under PyPy, using 2 to 3 GB.

    python benchmarks/sim_scale.py --nodes 10000 --tasks 100000 [--scheduler fifo]
        [--lifetime high] [--round-gap 0.1] [--profile]
    python benchmarks/sim_scale.py --scenario scenarios/sim-10k.yaml [--wall-limit 600]
    python benchmarks/sim_scale.py --scenario scenarios/sim-10k.yaml --set KEY=VALUE \
        --against REV [--rounds 3]

``--against REV``: the same run with this tree's simulator and with REV's (``git archive`` of
REV into a temporary directory), each in a fresh process, alternated ``--rounds`` times on
the same host; printed: each side's CPU seconds (median and all), peak RSS, whether the
events are byte-identical (SHA-256 of events.jsonl), and ours / REV's CPU ratio. The
measuring code is this file's for both sides; only the simulator imported differs.
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import hashlib
import json
import os
import pstats
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TREE_ENV = "SIM_SCALE_TREE"
"""The tree whose simulator a child of ``--against`` imports (this one's by default)."""
sys.path.insert(0, os.environ.get(TREE_ENV) or str(ROOT))

from master.sim.run import sim_settings, simulate  # noqa: E402
from testbed.scenario.schema import Scenario, load_scenario, parse_scenario  # noqa: E402

PEER = "Eagle/Hawk simulator (published): 15,000 workers in 15-30 min under PyPy, 2-3 GB"


def built(args: argparse.Namespace) -> Scenario:
    reserved = max(1, args.nodes // 10)
    jobs = max(1, args.tasks // args.tasks_per_job)
    data: dict[str, Any] = {
        "name": f"sim-scale-{args.nodes}",
        "seed": 1,
        "backend": "sim",
        "timeout": 604_800,
        "cluster": {
            "reserved": {"count": reserved, "slots": args.slots},
            "transient": {"count": args.nodes - reserved, "slots": args.slots},
        },
        "policy": {"scheduler": args.scheduler, "strategy": "spark"},
        "simulation": {"round_gap": args.round_gap},
        "jobs": [
            {
                "workload": "sleep",
                "tasks": args.tasks_per_job,
                "duration": args.duration,
                "repeat": jobs,
                "every": args.every,
            }
        ],
    }
    if args.lifetime != "none":
        data["chaos"] = {"transient": {"lifetime": args.lifetime, "replace": True}}
    return parse_scenario(data)


def last_arrival_s(scenario: Scenario) -> float:
    """When the scenario's last job arrives (run seconds): the span its arrivals cover."""
    specs = [*scenario.jobs, *scenario.arriving_jobs()]
    return max(scenario.trace(spec.submit_at + (spec.repeat - 1) * spec.every) for spec in specs)


class WallLimit:
    """Ends the simulation once ``seconds`` of wall time have passed (``simulate``'s ``stop``)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self.started = time.perf_counter()
        self.hit = False

    def __call__(self) -> str | None:
        if self.seconds is None or time.perf_counter() - self.started < self.seconds:
            return None
        self.hit = True
        return f"the benchmark's wall limit of {self.seconds:g} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", type=Path)
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--tasks-per-job", type=int, default=1000)
    parser.add_argument("--slots", type=int, default=4)
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--every", type=float, default=1.0)
    parser.add_argument("--scheduler", default="fifo")
    parser.add_argument("--lifetime", default="high")
    parser.add_argument("--round-gap", type=float, default=0.1)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--wall-limit", type=float, help="end the run after this many wall seconds")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE")
    parser.add_argument("--against", metavar="REV", help="also run REV's simulator, alternated; the ratio")
    parser.add_argument("--rounds", type=int, default=3, help="--against: runs of each side (default 3)")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # a child of --against
    args = parser.parse_args()
    if args.against:
        against(args)
        return
    settings = sim_settings(load_scenario(args.scenario, args.overrides) if args.scenario else built(args))
    scenario = settings.scenario
    profile = cProfile.Profile() if args.profile else None
    with tempfile.TemporaryDirectory() as tmp:
        before = resource.getrusage(resource.RUSAGE_SELF)
        limit = WallLimit(args.wall_limit)
        if profile is not None:
            profile.enable()
        shell, ok = simulate(settings, Path(tmp), stop=limit)
        if profile is not None:
            profile.disable()
        wall = time.perf_counter() - limit.started
        table = Path(tmp) / "jobs.csv"  # none if the run ended before its first job
        jobs = list(csv.DictReader(table.open(newline=""))) if table.exists() else []
        with (Path(tmp) / "events.jsonl").open(encoding="utf-8") as events:
            started = sum('"event":"task_started"' in line for line in events)
        digest = hashlib.sha256((Path(tmp) / "events.jsonl").read_bytes()).hexdigest()[:16]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - before.ru_utime - before.ru_stime
    cluster = scenario.cluster
    tasks = sum(int(job["tasks"] or 0) for job in jobs)
    finished = sum(job["status"] == "succeeded" for job in jobs)
    if args.json:
        figures = {"cpu_s": cpu, "wall_s": wall, "rss_mb": usage.ru_maxrss / 1024}
        print(json.dumps({**figures, "events": shell.heap.popped, "ok": ok, "sha": digest}))
        return
    if limit.hit:
        span = last_arrival_s(scenario)
        print(
            f"wall limit of {args.wall_limit:g} s reached: {shell.heap.now:.0f} of {span:.0f} simulated s "
            f"up to the last arrival ({min(1.0, shell.heap.now / span):.1%}), "
            f"{finished} of {len(jobs)} jobs finished"
        )
    print(
        f"ours: {cluster.reserved.count + cluster.transient.count} nodes, {tasks} tasks in {len(jobs)} jobs "
        f"({scenario.policy.scheduler}, round_gap {scenario.simulation.round_gap:g} s): "
        f"{'ok' if ok else 'FAILED'}, {shell.heap.now:.0f} s simulated in {wall:.1f} s wall; "
        f"{shell.heap.popped} events ({shell.heap.popped / wall:.0f}/s), "
        f"{shell.handled} handled by the master ({shell.handled / wall:.0f}/s); "
        f"{started} tasks started ({started / wall:.0f}/s); "
        f"{cpu:.0f} s of CPU ({cpu / max(started, 1) * 1e3:.2f} ms a task started); "
        f"peak RSS {usage.ru_maxrss / 1024:.0f} MB"
    )
    print(f"peer: {PEER}")
    if profile is not None:
        stats = pstats.Stats(profile)
        rounds = sum(
            v[3]  # cumulative seconds
            for k, v in stats.stats.items()  # type: ignore[attr-defined]
            if k[2] == "_round" and k[0].endswith("shell.py")
        )
        print(f"the master's scheduling rounds: {rounds / wall:.0%} of the wall time (profiled)")
        stats.sort_stats("tottime").print_stats(20)


def against(args: argparse.Namespace) -> None:
    """This tree's and REV's simulator on the same arguments, alternated, in fresh processes."""
    child = [*_without(sys.argv[1:], ("--against", "--rounds")), "--json"]
    with tempfile.TemporaryDirectory(prefix="sim-scale-rev-") as rev_tree:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", args.against], capture_output=True, check=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", rev_tree], input=archive, check=True)
        sides = {"ours": str(ROOT), args.against: rev_tree}
        runs: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        for round_ in range(args.rounds):
            for side, tree in sides.items():
                runs[side].append(_child(child, tree))
                print(f"round {round_ + 1} {side}: {json.dumps(runs[side][-1])}", flush=True)
    cpu = {side: statistics.median(r["cpu_s"] for r in runs[side]) for side in sides}
    for side in sides:
        each = ", ".join(f"{r['cpu_s']:.1f}" for r in runs[side])
        rss = max(r["rss_mb"] for r in runs[side])
        sha = runs[side][0]["sha"]
        print(f"{side}: CPU {cpu[side]:.1f} s median ({each}); peak RSS {rss:.0f} MB; events {sha}")
    shas = {r["sha"] for side in sides for r in runs[side]}
    print(f"events byte-identical: {'yes' if len(shas) == 1 else 'NO: ' + ', '.join(sorted(shas))}")
    print(f"CPU ours / {args.against}: {cpu['ours'] / cpu[args.against]:.3f}; load {os.getloadavg()}")


def _without(argv: list[str], options: tuple[str, ...]) -> list[str]:
    """``argv`` without the named options and their values (``--opt V`` and ``--opt=V``)."""
    kept: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in options:
            skip = True
        elif not arg.startswith(tuple(f"{o}=" for o in options)):
            kept.append(arg)
    return kept


def _child(arguments: list[str], tree: str) -> dict[str, Any]:
    env = {**os.environ, TREE_ENV: tree, "PYTHONPATH": tree}
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *arguments],
        capture_output=True, text=True, env=env, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"sim_scale: a run on {tree} failed: {done.stderr.strip().splitlines()[-1:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


if __name__ == "__main__":
    main()
