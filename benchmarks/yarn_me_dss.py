"""YARN-ME's simulation study (ATC'17, section 5.3, Fig. 6) on the testbed's simulator (the
master core on a virtual clock, scenarios/papers/yarn-me.yaml), beside DSS's method as its peer.

    python benchmarks/yarn_me_dss.py --nodes 100 --jobs 100 --seeds 1-5 [--penalty 3x] \
        [--distribution uniform[,exp]] [--cdf STEM] [--heartbeat S] [--jobs-at-once N]
    python benchmarks/yarn_me_dss.py --nodes 100,300,1000 --seeds 1 --heartbeat 1 \
        --scaling STEM

Each trace runs twice under each scheduler (yarn, yarn-me):
- **the testbed** (`--backend sim`): the scenario with the trace's size, seed, distribution and
  penalty profile set, run by ``master.shell.run.run`` on ``SimBackend`` (as `testbed run`):
  the master core, its messages and the model agents; ``--heartbeat S`` is
  ``simulation.round_gap`` (a round at most once every S simulated seconds);
- **DSS's method** (tests/support/dss_driver.py, the oracle): the same scheduler objects on a
  virtual clock with no master; a task's end is its start plus its model's penalized duration,
  exactly DSS's method; ``--heartbeat S`` schedules at multiples of S (DSS's node heartbeat).
Both use the same DSS traces (testbed/arrivals/dss.py, seeded) and penalty profiles
(scenarios/profiles/dss-sawtooth-*.json). The elastic disk budget is out of reach (DSS has
no disk). Prints one row per trace (both figures) and the paired statistics
(benchmarks/paper_stats.py's tests) of yarn-me / yarn mean JCT for each.

Over many random traces (``--seeds 1-100``) it also gives what the paper's Fig. 6a and 6c read
off their traces: the median and worst ratio and the share of traces at most 0.7; ``--cdf
STEM`` draws their CDF (STEM.png, STEM.svg; one paper column, with the 95% DKW band) from the
testbed's ratios, one curve per distribution given (``--distribution uniform,exp``). Weak
scaling (Fig. 6b) is one trace at growing sizes, ``--nodes 100,300,1000 --seeds 1`` (as many
jobs as nodes), drawn by ``--scaling STEM``. The testbed's runs go ``--jobs-at-once`` at a time
(default: the machine's cores).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]  # this tree's testbed and its test oracle

from paper_stats import paired_ratio  # noqa: E402

from master.schedulers.yarn import YarnScheduler  # noqa: E402
from master.schedulers.yarn_me import YarnMeScheduler  # noqa: E402
from master.shell.run import run_blocking  # noqa: E402
from master.sim.run import SimBackend, sim_settings  # noqa: E402
from testbed.api.policy import NodeView, PendingTask  # noqa: E402
from testbed.app.overlay import COLUMN_WIDTH_IN, HEIGHT_IN, plot_cdfs, save_figure  # noqa: E402
from testbed.arrivals.dss import Distribution, DssMix, dss_jobs  # noqa: E402
from testbed.scenario.schema import load_scenario  # noqa: E402
from testbed.workloads.task_model import TaskModel, load_profile  # noqa: E402
from tests.support.dss_driver import SimJob, model_runtime, simulate  # noqa: E402

SCENARIO = ROOT / "scenarios" / "papers" / "yarn-me.yaml"
SCHEDULERS = ("yarn", "yarn-me")


@dataclass(frozen=True)
class Trace:
    """One DSS trace at one size, under one penalty, scheduled every event or every ``heartbeat_s``."""

    seed: int
    nodes: int
    jobs: int
    penalty: str = "3x"
    distribution: Distribution = "uniform"
    heartbeat_s: float = 0.0


@dataclass(frozen=True)
class Outcome:
    mean_jct_s: float
    elastic: int
    cpu_s: float


def seeds_of(text: str) -> list[int]:
    low, _, high = text.partition("-")
    return list(range(int(low), int(high or low) + 1))


def simulated_run(trace: Trace, scheduler: str) -> Outcome:
    """The trace under ``scheduler`` on the testbed's simulator (scenarios/papers/yarn-me.yaml)."""
    scenario = load_scenario(
        SCENARIO,
        [
            f"seed={trace.seed}",
            f"policy.scheduler={scheduler}",
            f"cluster.transient.count={trace.nodes}",
            f"arrivals.dss.jobs={trace.jobs}",
            f"arrivals.dss.distribution={trace.distribution}",
            f"profiles=[../profiles/dss-sawtooth-{trace.penalty}.json]",
            f"simulation.round_gap={trace.heartbeat_s}",
        ],
    )
    began = time.process_time()
    with tempfile.TemporaryDirectory() as tmp:
        result = run_blocking(sim_settings(scenario), Path(tmp) / "run", SimBackend())
    summary = result.summary
    if not result.ok or summary["succeeded"] != trace.jobs:
        raise RuntimeError(f"{trace} {scheduler}: {summary['jobs_succeeded']} of {trace.jobs} jobs succeeded")
    return Outcome(summary["mean_jct_s"], summary["elastic_tasks"], time.process_time() - began)


def oracle_run(trace: Trace, scheduler: str) -> Outcome:
    """The trace under ``scheduler`` by DSS's method (tests/support/dss_driver.py)."""
    profile = load_profile(ROOT / "scenarios" / "profiles" / f"dss-sawtooth-{trace.penalty}.json")

    def model(task: PendingTask) -> TaskModel:
        return replace(profile.model.resized(task.ideal_memory_mb), ideal_duration_s=task.est_duration_s)

    arriving = dss_jobs(trace.seed, DssMix(jobs=trace.jobs, distribution=trace.distribution), cutoff_s=10.0)
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
        for k, job in enumerate(arriving)
    ]
    cluster = [NodeView(f"n{i:04d}", "transient", 16, 10240) for i in range(trace.nodes)]
    policy = (
        YarnScheduler(models=model)
        if scheduler == "yarn"
        else YarnMeScheduler(models=model, elastic_disk_mb_s=1e6)
    )
    began = time.process_time()
    result = simulate(
        policy, cluster, sim_jobs, model_runtime(model), max_rounds=10_000_000, heartbeat_s=trace.heartbeat_s
    )
    elapsed = time.process_time() - began
    if result.unfinished:
        raise RuntimeError(f"{trace} {scheduler}: unfinished jobs {result.unfinished}")
    return Outcome(float(np.mean(list(result.jct.values()))), sum(r.elastic for r in result.runs), elapsed)


def _testbed_cell(cell: tuple[Trace, str]) -> Outcome:
    return simulated_run(*cell)


def traces(found: list[Trace], at_once: int) -> tuple[list[float], list[float]]:
    """yarn-me / yarn mean JCT of each trace on the testbed and by DSS's method, each trace
    printed as a table row as its runs end."""
    print(
        "| trace | yarn (s) | yarn-me (s) | yarn-me / yarn | elastic | CPU s "
        "| DSS's method: yarn (s) | yarn-me (s) | yarn-me / yarn |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    cells = [(trace, scheduler) for trace in found for scheduler in SCHEDULERS]
    ours, peers = [], []
    with ProcessPoolExecutor(max_workers=at_once) as pool:
        outcomes = pool.map(_testbed_cell, cells)
        for trace in found:
            yarn, me = next(outcomes), next(outcomes)
            dss_yarn, dss_me = (oracle_run(trace, scheduler) for scheduler in SCHEDULERS)
            ours.append(me.mean_jct_s / yarn.mean_jct_s)
            peers.append(dss_me.mean_jct_s / dss_yarn.mean_jct_s)
            cells = [
                trace.distribution,
                trace.seed,
                *jcts(yarn, me),
                me.elastic,
                f"{yarn.cpu_s + me.cpu_s:.0f}",
            ]
            print("| " + " | ".join(map(str, [*cells, *jcts(dss_yarn, dss_me)])) + " |", flush=True)
    return ours, peers


def jcts(yarn: Outcome, me: Outcome) -> list[str]:
    """A row's mean JCTs under yarn and yarn-me, and their ratio."""
    return [f"{yarn.mean_jct_s:.0f}", f"{me.mean_jct_s:.0f}", f"{me.mean_jct_s / yarn.mean_jct_s:.3f}"]


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
        help="schedule at most once every S simulated seconds, as DSS's node heartbeats "
        "(default 0: at every event)",
    )
    parser.add_argument(
        "--jobs-at-once", type=int, default=os.cpu_count() or 1, metavar="N", help="testbed runs at once"
    )
    args = parser.parse_args()
    if not (np.isfinite(args.heartbeat) and args.heartbeat >= 0):
        parser.error(f"--heartbeat: simulated seconds, 0 or more, not {args.heartbeat}")
    if args.jobs_at_once < 1:
        parser.error(f"--jobs-at-once: 1 or more, not {args.jobs_at_once}")
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
            found = [
                Trace(seed, nodes, jobs, args.penalty, distribution, args.heartbeat)
                for seed in seeds_of(args.seeds)
            ]
            ratios, peers = traces(found, args.jobs_at_once)
            print(f"{distribution}, {nodes} nodes, {jobs} jobs, testbed: {summary(ratios)}", flush=True)
            print(f"{distribution}, {nodes} nodes, {jobs} jobs, DSS's method: {summary(peers)}", flush=True)
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
