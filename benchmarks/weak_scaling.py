"""Weak scaling and repeatability of the emulation, with and without the scale model.

Weak scaling: N single-slot reserved nodes, N identical sort jobs (24 MB, 4 maps,
2 reduces) submitted at once, for N = 1, 2, 4, 8, 16. On a real cluster each node runs
its own job and the mean JCT stays flat: JCT(N) / JCT(1) = 1.0. Ours: the scenario with
``fidelity: {mode: faithful, dilation: auto}`` (each node a cgroup at 1 / dilation of a
core, mean JCT in emulated seconds); peer, in the same run: the same scenario
unisolated (today's default: every node shares the host's cores). With
``--fixed-dilation D`` a third mode runs every N at the same dilation D: the control
plane's latencies (not dilated) then weigh the same at every N, so JCT(N) / JCT(1)
measures contention and the shuffle's network time alone (at N = 1 every fetch is local;
at N it is remote for (N - 1) / N of the bytes, as on a real cluster; a large
``--network-mbps`` removes that part).

Repeatability: the same scenario and seed ``--repeat`` times at N = ``--repeat-nodes``;
the coefficient of variation (stdev / mean) of the runs' mean JCT, for both modes, beside
the CV of the tasks' CPU seconds (the same work costing more CPU time) and of their summed
durations.

Dilation's cost: the wall-clock time of each run (nodes' start to the last job's end).

Each run's fidelity block says whether the host was saturated (on a shared machine it
is, and the figures are then distorted: they validate the mechanism, not the goal).

    python benchmarks/weak_scaling.py [--sizes 1,2,4,8,16] [--repeat 5] [--repeat-nodes 4]
        [--fixed-dilation 10.67] [--modes faithful-fixed] [--size-mb 24]
        [--network-mbps 1000] [--out weak-scaling.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.shell.run import run_scenario
from testbed.journal.tables import measured_rows
from testbed.scenario.schema import parse_scenario
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host

MODES = {
    "unisolated": {"mode": "unisolated"},
    "faithful-auto": {"mode": "faithful", "dilation": "auto"},
    "faithful-no-priority": {"mode": "faithful", "dilation": "auto", "priority": False},
}
SORT_JOB = {"workload": "sort", "size_mb": 24, "maps": 4, "reduces": 2, "memory_mb": 64}


def scenario(nodes: int, mode: str, size_mb: int, network_mbps: float, seed: int = 1) -> dict[str, Any]:
    return {
        "name": f"weak-{mode}-{nodes}",
        "seed": seed,
        "cluster": {
            "reserved": {"count": nodes, "slots": 1, "memory_mb": 256, "network_mbps": network_mbps},
            "transient": 0,
            "heartbeat_timeout": "10s",
        },
        "jobs": [{**SORT_JOB, "size_mb": size_mb, "repeat": nodes}],
        "fidelity": MODES[mode],
        "timeout": "30m",
    }


async def one_run(nodes: int, mode: str, size_mb: int, network_mbps: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="weak-") as out:
        started = time.monotonic()
        loaded = parse_scenario(scenario(nodes, mode, size_mb, network_mbps))
        result = await run_scenario(resolve(loaded, Host.this_machine()), Path(out))
        wall = time.monotonic() - started
        tasks = task_totals(Path(out) / "tasks.csv")
    summary, fidelity = result.summary, result.summary.get("fidelity", {})
    return {
        "nodes": nodes,
        "mode": mode,
        "ok": result.ok,
        "dilation": summary["dilation"],
        "mean_jct_s": summary["mean_jct_s"],
        "wall_mean_jct_s": summary["wall"]["mean_jct_wall_s"],
        "run_wall_s": round(wall, 2),
        "host_busy_mean": fidelity.get("host_busy_mean"),
        "task_time_saturated_share": fidelity.get("task_time_saturated_share"),
        "control_plane_cores": fidelity.get("control_plane_cores"),
        "distorted": fidelity.get("distorted"),
        **tasks,
    }


def task_totals(tasks_csv: Path) -> dict[str, float]:
    """The run's work: its tasks' CPU seconds and their summed durations (emulated s).

    Splits a run's variance in two: the same work costing more CPU time (the host's caches,
    memory bus and neighbours) against the same CPU time taking longer (queueing, placement).
    """
    rows = measured_rows(tasks_csv)  # wall seconds
    succeeded = [row for row in rows if row["status"] == "succeeded"]
    return {
        "task_cpu_s": round(sum(float(row["cpu_s"] or 0) for row in succeeded), 3),
        "task_time_s": round(sum(float(row["end_s"]) - float(row["start_s"]) for row in succeeded), 3),
    }


def coefficient_of_variation(values: list[float]) -> float:
    return statistics.stdev(values) / statistics.fmean(values) if len(values) > 1 else 0.0


def show(row: dict[str, Any]) -> None:
    print(
        f"N={row['nodes']:>2} {row['mode']:<14} dilation {row['dilation']:>5.2f}  "
        f"mean JCT {row['mean_jct_s']:7.2f} s emulated ({row['wall_mean_jct_s']:7.2f} s wall)  "
        f"run {row['run_wall_s']:7.1f} s wall  host busy {row['host_busy_mean']}  "
        f"saturated task time {row['task_time_saturated_share']}  "
        f"control plane {row['control_plane_cores']} cores  distorted {row['distorted']}  "
        f"task CPU {row['task_cpu_s']} s",
        flush=True,
    )


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def bench(
    sizes: list[int], repeat: int, repeat_nodes: int, modes: list[str], size_mb: int, network_mbps: float
) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    print(f"load average before: {load_average()}", flush=True)
    for nodes in sizes:
        for mode in modes:
            rows.append(await one_run(nodes, mode, size_mb, network_mbps))
            show(rows[-1])
    scaling = {}
    for mode in modes if sizes else ():
        base = next(r["mean_jct_s"] for r in rows if r["mode"] == mode and r["nodes"] == sizes[0])
        scaling[mode] = {r["nodes"]: round(r["mean_jct_s"] / base, 3) for r in rows if r["mode"] == mode}
        print(f"JCT(N)/JCT({sizes[0]}) {mode}: {scaling[mode]}", flush=True)
    repeats: dict[str, Any] = {}
    for mode in modes if repeat > 0 else ():
        runs = []
        for _ in range(repeat):
            runs.append(await one_run(repeat_nodes, mode, size_mb, network_mbps))
            show(runs[-1])
        cv = coefficient_of_variation([r["mean_jct_s"] for r in runs])
        cpu_cv = coefficient_of_variation([r["task_cpu_s"] for r in runs])
        time_cv = coefficient_of_variation([r["task_time_s"] for r in runs])
        repeats[mode] = {
            "runs": runs,
            "cv": round(cv, 4),
            "task_cpu_cv": round(cpu_cv, 4),
            "task_time_cv": round(time_cv, 4),
        }
        print(
            f"repeatability {mode} at N={repeat_nodes}: CV of mean JCT {cv:.1%} over {repeat} runs; "
            f"of the tasks' CPU seconds {cpu_cv:.1%}, of their summed durations {time_cv:.1%}",
            flush=True,
        )
    print(f"load average after: {load_average()}", flush=True)
    return {"rows": rows, "scaling": scaling, "repeatability": repeats}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1,2,4,8,16")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--repeat-nodes", type=int, default=4)
    parser.add_argument("--fixed-dilation", type=float, default=None)
    parser.add_argument("--network-mbps", type=float, default=1000, help="each node's NIC (emulated)")
    parser.add_argument("--size-mb", type=int, default=SORT_JOB["size_mb"], help="each sort job's input")
    parser.add_argument("--modes", default="", help="comma-separated subset of the modes (default: all)")
    parser.add_argument("--out", type=Path, default=Path("weak-scaling.json"))
    args = parser.parse_args()
    if args.fixed_dilation is not None:
        MODES["faithful-fixed"] = {"mode": "faithful", "dilation": args.fixed_dilation}
    modes = args.modes.split(",") if args.modes else list(MODES)
    sizes = [int(n) for n in args.sizes.split(",") if n]  # --sizes "": repeatability only
    results = asyncio.run(
        bench(sizes, args.repeat, args.repeat_nodes, modes, args.size_mb, args.network_mbps)
    )
    args.out.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
