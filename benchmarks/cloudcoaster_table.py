"""The CloudCoaster experiment's tables (docs/cloudcoaster.md) from its run directories.

    python benchmarks/cloudcoaster_table.py RUN_DIR... [--cdf PNG]

Each run directory is one ``testbed run scenarios/cloudcoaster.yaml`` (any
seed, ``policy.autoscaler`` static or cloudcoaster, any ``r``). Runs are
grouped by configuration (``baseline`` for the static autoscaler, ``r=R`` for
CloudCoaster); every CloudCoaster run is compared with the baseline run of the
same seed (same arrivals). Times are given in trace seconds (emulated seconds of
summary.json times the run's time_scale). ``--cdf`` draws the short-task
queueing delay CDF per configuration, all seeds pooled (the paper's Fig. 3), as PNG and SVG.
A faithful run's tables and journal are in wall seconds and its summary.json in
emulated seconds (wall / dilation): both are brought to trace seconds.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from master.summary.coaster import long_job_ids, short_queue_delays
from testbed.journal.tables import measured_rows


def load(run_dir: Path) -> dict[str, Any]:
    summary = json.loads((run_dir / "summary.json").read_text())
    scenario = _yaml(run_dir / "scenario.yaml")
    options = scenario.get("policy", {}).get("options", {}).get("cloudcoaster", {})
    static = summary["policy"]["autoscaler"] == "static"
    return {
        "dir": run_dir,
        "config": "baseline" if static else f"r={options.get('r', 3):g}",
        "seed": summary["seed"],
        "scale": summary["time_scale"],
        "wall_scale": summary["time_scale"] / summary.get("dilation", 1.0),
        "summary": summary,
    }


def _yaml(path: Path) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(path.read_text()) or {}


def delays(run: dict[str, Any]) -> list[float]:
    """Short-task queueing delays of one run, in trace seconds."""
    jobs = measured_rows(run["dir"] / "jobs.csv")
    tasks = measured_rows(run["dir"] / "tasks.csv")
    long_jobs = long_job_ids(run["dir"] / "events.jsonl")
    return [d * run["wall_scale"] for d in short_queue_delays(jobs, tasks, long_jobs)]


def join_delays(run: dict[str, Any]) -> list[float]:
    """Launch decision to node up, in trace seconds: the provisioning delay plus the agent's start-up.

    Launch decisions and transient nodes pair up in order (nodes are numbered as they launch).
    """
    launches, ups = [], []
    with open(run["dir"] / "events.jsonl", encoding="utf-8") as handle:
        for line in handle:
            event = json.loads(line)
            if event["event"] == "autoscale" and event["action"] == "launch":
                launches.append(event["t"])
            elif event["event"] == "node_up" and event.get("class") == "transient":
                ups.append((int(event["node"].rpartition("-")[2]), event["t"]))
    return [(up - launch) * run["wall_scale"] for launch, (_, up) in zip(launches, sorted(ups), strict=False)]


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def tables(runs: list[dict[str, Any]]) -> str:
    """Queueing (pooled over seeds, and per seed against the same seed's baseline) and cost."""
    base = {r["seed"]: r["summary"] for r in runs if r["config"] == "baseline"}
    pooled_base = [d for r in runs if r["config"] == "baseline" for d in delays(r)]
    configs = sorted({r["config"] for r in runs}, key=lambda c: (c != "baseline", c))
    lines = [
        "| config | seeds | mean short queue (s) | max short queue (s) | baseline / config, mean "
        "| baseline / config, max | per seed, mean | per seed, max | long-job mean JCT (s) | failed jobs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    cost = [
        "| config | active time mean (s) | active time max (s) | avg transient servers "
        "| r-normalised on-demand | avg short-only on-demand | short partition (on-demand equiv.) "
        "| saving on the replaced servers | saving on the short partition | launch to up (s) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for config in configs:
        group = sorted((r for r in runs if r["config"] == config), key=lambda r: r["seed"])
        s = [r["summary"] for r in group]
        scale = group[0]["scale"]
        pooled = [d for r in group for d in delays(r)]
        paired = [(r["summary"], base[r["seed"]]) for r in group if r["seed"] in base]
        per_mean = " / ".join(f"{b['mean_short_queue_s'] / x['mean_short_queue_s']:.2f}" for x, b in paired)
        per_max = " / ".join(f"{b['max_short_queue_s'] / x['max_short_queue_s']:.2f}" for x, b in paired)
        lines.append(
            f"| {config} | {','.join(str(r['seed']) for r in group)} "
            f"| {_mean(pooled):.1f} | {max(pooled):.0f} "
            f"| {_mean(pooled_base) / _mean(pooled):.2f}x | {max(pooled_base) / max(pooled):.2f}x "
            f"| {per_mean} | {per_max} "
            f"| {_mean([x['mean_long_jct_s'] for x in s]) * scale:.0f} | {sum(x['failed'] for x in s)} |"
        )
        replaced = [b["avg_short_on_demand_servers"] - x["avg_short_on_demand_servers"] for x, b in paired]
        equiv = [x["transient_on_demand_equiv"] for x, _ in paired]
        part = [1 - x["short_partition_cost_servers"] / b["short_partition_cost_servers"] for x, b in paired]
        on_replaced = [1 - e / d for e, d in zip(equiv, replaced, strict=True) if d > 0]
        active = [x["mean_transient_active_s"] for x in s if x["mean_transient_active_s"] is not None]
        longest = [x["max_transient_active_s"] for x in s if x["max_transient_active_s"] is not None]
        cost.append(
            f"| {config} | {_number(_mean(active) * scale)} | {_number(max(longest, default=None), scale)} "
            f"| {_mean([x['avg_transient_servers'] for x in s]):.2f} "
            f"| {_mean([x['transient_on_demand_equiv'] for x in s]):.2f} "
            f"| {_mean([x['avg_short_on_demand_servers'] for x in s]):.2f} "
            f"| {_mean([x['short_partition_cost_servers'] for x in s]):.2f} "
            f"| {_percent(on_replaced)} | {_percent(part)} "
            f"| {_number(_mean([d for r in group for d in join_delays(r)]))} |"
        )
    return "\n".join(lines) + "\n\n" + "\n".join(cost) + "\n"


def _number(value: float | None, scale: float = 1.0) -> str:
    return "-" if value is None or math.isnan(value) else f"{value * scale:.0f}"


def _percent(values: list[float]) -> str:
    return f"{_mean(values) * 100:.1f}%" if values else "-"


def per_seed(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| seed | config | mean short queue (s) | max short queue (s) | short tasks |",
        "|---|---|---|---|---|",
    ]
    for run in sorted(runs, key=lambda r: (r["seed"], r["config"] != "baseline", r["config"])):
        s, scale = run["summary"], run["scale"]
        lines.append(
            f"| {run['seed']} | {run['config']} | {s['mean_short_queue_s'] * scale:.1f} "
            f"| {s['max_short_queue_s'] * scale:.1f} | {s['short_tasks']} |"
        )
    return "\n".join(lines) + "\n"


def cdf_figure(runs: list[dict[str, Any]], path: Path) -> None:
    from matplotlib.figure import Figure

    pooled: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        pooled[run["config"]] += delays(run)
    figure = Figure(figsize=(7, 4))
    axes = figure.add_subplot()
    for config in sorted(pooled, key=lambda c: (c != "baseline", c)):
        values = sorted(pooled[config])
        fractions = [(i + 1) / len(values) for i in range(len(values))]
        axes.step([0.0, *values], [0.0, *fractions], where="post", label=f"{config} (n={len(values)})")
    axes.set(
        xlabel="short-task queueing delay (trace seconds)",
        ylabel="fraction of short tasks",
        title="Short-task queueing delay, all seeds",
        ylim=(0, 1.02),
    )
    axes.set_xscale("symlog", linthresh=1.0)
    axes.set_xlim(left=0)
    axes.grid(alpha=0.3)
    axes.legend(loc="upper left", fontsize="small")
    figure.savefig(path, dpi=110, bbox_inches="tight")
    figure.savefig(path.with_suffix(".svg"), bbox_inches="tight")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--cdf", type=Path, help="write the short-queue CDF here (PNG; an SVG beside it)")
    args = parser.parse_args(argv)
    runs = [load(path) for path in args.runs]
    print(tables(runs))
    print(per_seed(runs))
    if args.cdf:
        cdf_figure(runs, args.cdf)
    return 0


if __name__ == "__main__":
    sys.exit(main())
