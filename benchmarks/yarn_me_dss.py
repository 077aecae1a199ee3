"""YARN-ME's simulation study (ATC'17, section 5.3, Fig. 6) on the schedulers' own
discrete-event driver (master/schedulers/simulate.py), as the paper ran it on DSS.

    python benchmarks/yarn_me_dss.py --nodes 100 --jobs 100 --seeds 1-5 [--penalty 3x] \
        [--distribution uniform[,exp]] [--cdf STEM] [--heartbeat S]
    python benchmarks/yarn_me_dss.py --nodes 100,300,1000,3000 --seeds 1 --heartbeat 1 \
        --scaling STEM

The same scheduler objects as `testbed run` (YarnScheduler, YarnMeScheduler), the same
DSS traces (testbed/arrivals/dss.py, seeded) and penalty profiles
(scenarios/profiles/dss-sawtooth-*.json) as scenarios/papers/yarn-me.yaml; what the
driver leaves out is the master core and its messages (tasks do not run: their end is
their start plus the model's penalized duration, exactly DSS's method). The elastic disk
budget is out of reach (DSS has no disk). Prints one line per (seed, scheduler) and the
paired statistics (benchmarks/paper_stats.py's tests) of yarn-me / yarn mean JCT.

Over many random traces (``--seeds 1-100``) it also gives what the paper's Fig. 6a and 6c
read off their traces: the median and worst ratio and the share of traces at most 0.7;
``--cdf STEM`` draws their CDF (STEM.png, STEM.svg; one paper column, with the 95% DKW band),
one curve per distribution given (``--distribution uniform,exp``).
Weak scaling (Fig. 6b) is one trace at growing sizes, ``--nodes 100,300,1000,3000 --seeds 1``
(as many jobs as nodes), drawn by ``--scaling STEM``; past a few hundred nodes give
``--heartbeat 1``: one scheduling round a simulated second (DSS's node heartbeat) instead of
one per event, each round costing the cluster's size.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from paper_stats import paired_ratio

from master.schedulers.simulate import SimJob, model_runtime, simulate
from master.schedulers.yarn import YarnScheduler
from master.schedulers.yarn_me import YarnMeScheduler
from testbed.api.policy import NodeView, PendingTask
from testbed.app.overlay import COLUMN_WIDTH_IN, HEIGHT_IN, plot_cdfs, save_figure
from testbed.arrivals.dss import Distribution, DssMix, dss_jobs
from testbed.workloads.task_model import TaskModel, load_profile

ROOT = Path(__file__).resolve().parent.parent


def seeds_of(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def run(
    seed: int,
    scheduler: str,
    nodes: int,
    jobs: int,
    penalty: str,
    distribution: Distribution = "uniform",
    heartbeat_s: float = 0.0,
) -> tuple[float, int, float]:
    """(mean JCT, elastic tasks, wall seconds) of one trace under one scheduler."""
    profile = load_profile(ROOT / "scenarios" / "profiles" / f"dss-sawtooth-{penalty}.json")

    def model(task: PendingTask) -> TaskModel:
        return replace(profile.model.resized(task.ideal_memory_mb), ideal_duration_s=task.est_duration_s)

    trace = dss_jobs(seed, DssMix(jobs=jobs, distribution=distribution), cutoff_s=10.0)
    sim_jobs = [
        SimJob(
            f"j{k:04d}",
            job.submit_s,
            (
                tuple(
                    PendingTask(
                        f"j{k:04d}.t{i}",
                        f"j{k:04d}",
                        0,
                        i,
                        job.memory_mb or 100,
                        job.est_duration_s,
                        workload="sleep",
                    )
                    for i in range(len(job.task_durations))
                ),
            ),
        )
        for k, job in enumerate(trace)
    ]
    cluster = [NodeView(f"n{i:04d}", "transient", 16, 10240) for i in range(nodes)]
    policy = (
        YarnScheduler(models=model)
        if scheduler == "yarn"
        else YarnMeScheduler(models=model, elastic_disk_mb_s=1e6)
    )
    began = time.process_time()
    result = simulate(
        policy, cluster, sim_jobs, model_runtime(model), max_rounds=10_000_000, heartbeat_s=heartbeat_s
    )
    elapsed = time.process_time() - began
    if result.unfinished:
        raise RuntimeError(f"seed {seed} {scheduler}: unfinished jobs {result.unfinished}")
    return float(np.mean(list(result.jct.values()))), sum(r.elastic for r in result.runs), elapsed


def traces(
    nodes: int,
    jobs: int,
    seeds: list[int],
    penalty: str,
    distribution: Distribution,
    heartbeat_s: float = 0.0,
) -> list[float]:
    """yarn-me / yarn mean JCT of each seed's trace, each printed as a table row."""
    header = "yarn mean JCT (s) | yarn-me mean JCT (s) | yarn-me / yarn | elastic tasks | CPU s"
    print(f"| {distribution} seed | {header} |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for seed in seeds:
        yarn, _, t1 = run(seed, "yarn", nodes, jobs, penalty, distribution, heartbeat_s)
        me, elastic, t2 = run(seed, "yarn-me", nodes, jobs, penalty, distribution, heartbeat_s)
        ratios.append(me / yarn)
        print(f"| {seed} | {yarn:.0f} | {me:.0f} | {me / yarn:.3f} | {elastic} | {t1 + t2:.0f} |", flush=True)
    return ratios


def summary(ratios: list[float]) -> str:
    """The paired statistics of yarn-me / yarn over the traces (``paper_stats.paired_ratio``),
    and Fig. 6a's reading of them."""
    ratio = paired_ratio(dict(enumerate(ratios)), dict.fromkeys(range(len(ratios)), 1.0))
    assert ratio is not None  # every ratio is positive
    line = f"n={ratio.n}, geo-mean yarn-me/yarn {ratio.geo:.3f}"
    if ratio.low is not None and ratio.p_t is not None:
        line += f", 95% CI (t on logs) [{ratio.low:.3f}, {ratio.high:.3f}], paired t-test p={ratio.p_t:.3g}"
    if ratio.p_w is not None:
        line += f", Wilcoxon p={ratio.p_w:.3g}"
    at_most = sum(r <= 0.7 for r in ratios) / len(ratios)
    line += f"; median {np.median(ratios):.3f}, worst {max(ratios):.3f}, at most 0.7: {at_most:.0%}"
    return line


def size_labels(sizes: list[int], apart: float = 0.25) -> list[str]:
    """Tick labels for sorted sizes on a log axis: the largest first, then each size at least
    ``apart`` decades below the last labelled one (the others unlabelled: they would touch)."""
    labels, last = [], math.inf
    for size in reversed(sizes):
        if math.log10(last / size) < apart:
            labels.append("")
            continue
        labels.append(f"{size // 1000}k" if size >= 1000 and size % 1000 == 0 else str(size))
        last = size
    return labels[::-1]


def plot_scaling(series: dict[str, list[tuple[int, list[float]]]], stem: Path) -> list[Path]:
    """Fig. 6b's format: yarn-me / yarn against the scale (nodes = jobs), one line per series
    through each scale's geometric mean, its traces as dots. STEM.png and STEM.svg."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with plt.rc_context({"font.size": 7, "legend.fontsize": 6}):
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, HEIGHT_IN))
        for label, points in series.items():
            scales = [n for n, _ in points]
            geo = [float(np.exp(np.mean(np.log(ratios)))) for _, ratios in points]
            (line,) = ax.plot(scales, geo, marker="o", markersize=3, linewidth=1.0, label=label)
            for n, ratios in points:
                ax.scatter([n] * len(ratios), ratios, s=4, color=line.get_color(), alpha=0.5)
        ax.set_xscale("log")
        scales = sorted({n for points in series.values() for n, _ in points})
        ax.set_xticks(scales, size_labels(scales))
        ax.minorticks_off()
        ax.set_xlabel("nodes (= jobs in the trace)")
        ax.set_ylabel("yarn-me / yarn mean JCT")
        ax.set_ylim(0, 1.05)
        ax.axhline(1.0, color="grey", linewidth=0.5)
        ax.grid(alpha=0.3, linewidth=0.5)
        ax.legend(loc="lower right", frameon=False)
        return save_figure(fig, stem)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="100", help="a size, or sizes for weak scaling: 100,300,1000")
    parser.add_argument("--jobs", type=int, help="jobs in a trace (default: as many as nodes)")
    parser.add_argument("--seeds", default="1-5")
    parser.add_argument("--penalty", choices=["3x", "1.5x"], default="3x")
    parser.add_argument("--distribution", default="uniform", help="uniform, exp or both: uniform,exp")
    parser.add_argument("--cdf", type=Path, help="draw the ratios' CDF to STEM.png and STEM.svg")
    parser.add_argument(
        "--scaling", type=Path, help="draw the ratio against the size to STEM.png and STEM.svg"
    )
    parser.add_argument(
        "--heartbeat",
        type=float,
        default=0.0,
        metavar="S",
        help="schedule once every S simulated seconds, as DSS's node heartbeats (default 0: at every event)",
    )
    args = parser.parse_args()
    if not (np.isfinite(args.heartbeat) and args.heartbeat >= 0):
        parser.error(f"--heartbeat: simulated seconds, 0 or more, not {args.heartbeat}")
    distributions = args.distribution.split(",")
    if not set(distributions) <= {"uniform", "exp"}:
        parser.error(f"--distribution: uniform, exp or uniform,exp, not {args.distribution!r}")
    try:
        sizes = [int(n) for n in args.nodes.split(",")]
    except ValueError:
        parser.error(f"--nodes: a number of nodes or a comma-separated list, not {args.nodes!r}")
    curves, series = {}, {}
    for distribution in distributions:
        series[f"{distribution}, {args.penalty} penalty"] = points = []
        for nodes in sizes:
            jobs = args.jobs or nodes
            ratios = traces(nodes, jobs, seeds_of(args.seeds), args.penalty, distribution, args.heartbeat)
            print(f"{distribution}, {nodes} nodes, {jobs} jobs: {summary(ratios)}", flush=True)
            where = f", {nodes} nodes" if len(sizes) > 1 else ""
            curves[f"{distribution}, {args.penalty} penalty{where}, {len(ratios)} traces"] = [ratios]
            points.append((nodes, ratios))
    if args.cdf:
        size = f"{args.nodes} nodes, {args.jobs} jobs" if args.jobs else f"{args.nodes} nodes and jobs"
        xlabel = f"yarn-me / yarn mean JCT ({size})"
        paths = plot_cdfs(curves, xlabel, args.cdf, ylabel="fraction of traces", count_runs=False)
        print("wrote " + ", ".join(map(str, paths)))
    if args.scaling:
        print("wrote " + ", ".join(map(str, plot_scaling(series, args.scaling))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
