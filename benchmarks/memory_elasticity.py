"""Memory elasticity: a task's runtime at fractions of its ideal memory, beside the YARN-ME paper's.

Runs a job once unconstrained (so the profiled task has its inputs), finds the
profiled task's ideal budget (the least that does not spill, as
``testbed profile`` does), then runs that task at every fraction, the fractions
interleaved within each repeat so that a change of the host's load hits all of
them alike. Each repeat's runtimes are normalised by the same repeat's ideal run;
the table gives the median and the range over repeats.

    python benchmarks/memory_elasticity.py sort --size-mb 256 --maps 4 --reduces 2 --repeat 5 \\
        --json sort-256.json
    python benchmarks/memory_elasticity.py --plot docs/memory-elasticity A.json B.json ...

``--plot`` draws the normalised runtimes of saved results (PNG and SVG: the fastest run
over the fastest ideal run as a line, the range of the repeats' ratios as a band) beside what
the paper reports for Hadoop (YARN-ME, ATC'17, section 2 and Fig. 1): reducers at
10% of ideal memory 1.1x to 1.85x slower (7 of 10; the WordCount reducer 1.84x,
1.83x, 1.82x at 83%, 41% and 10%), mappers at most 1.5x.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from testbed.scenario.schema import PagerankJob, SortJob, WordcountJob
from testbed.workloads.catalog import plan_job
from testbed.workloads.local import LocalJob
from testbed.workloads.profile import (
    PROFILED_STAGES,
    UNLIMITED,
    ideal_budget,
    least_spill_free_budget,
)

MB = 2**20
PAPER_REDUCER_BAND = (1.1, 1.85)
"""7 of the paper's 10 Hadoop reducers at 10% of ideal memory."""
PAPER_WORDCOUNT_REDUCER = ((0.10, 1.82), (0.41, 1.83), (0.83, 1.84))
PAPER_MAPPER_MAX = 1.5


def make_job(args: argparse.Namespace) -> Any:
    common = {"maps": args.maps, "reduces": args.reduces}
    if args.workload == "sort":
        return SortJob(workload="sort", size_mb=args.size_mb, **common)
    if args.workload == "wordcount":
        extra = {"vocabulary": args.vocabulary} if args.vocabulary else {}
        return WordcountJob(workload="wordcount", size_mb=args.size_mb, **common, **extra)
    return PagerankJob(workload="pagerank", nodes=args.nodes, edges=args.edges, iterations=2, **common)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    fractions = [float(f) for f in args.fractions.split(",")]
    job = make_job(args)
    with tempfile.TemporaryDirectory(prefix="bench-elasticity-") as tmp:
        local = LocalJob(plan_job(job, args.seed, None), Path(tmp)).run(UNLIMITED)
        roles = {}
        for role, stage in PROFILED_STAGES[args.workload].items():
            base = local.tasks[(stage, 0)]
            ideal = least_spill_free_budget(local, stage, 0, ideal_budget(base.spec.op, base.metrics))
            runs: dict[float, list[dict[str, float]]] = {f: [] for f in fractions}
            for _ in range(args.repeat):
                for fraction in fractions:
                    cpu = time.process_time()
                    run = local.run_task(stage, 0, max(1, int(ideal * fraction)), len(local.tasks) + 1)
                    runs[fraction].append(
                        {
                            "seconds": run.seconds,
                            "cpu_seconds": time.process_time() - cpu,
                            "spill_mb": run.metrics.spill_bytes / MB,
                            "passes": run.metrics.merge_passes,
                        }
                    )
            roles[role] = {
                "stage": stage,
                "input_mb": base.metrics.bytes_in / MB,
                "ideal_mb": ideal / MB,
                "runs": {f"{f:g}": r for f, r in runs.items()},
            }
    return {
        "workload": args.workload,
        "job": job.model_dump(),
        "seed": args.seed,
        "roles": roles,
        "at": time.time(),
    }


def ratios(role: dict[str, Any], field: str = "seconds") -> dict[float, list[float]]:
    """Per fraction, each repeat's runtime (or CPU time) over the same repeat's ideal run."""
    ideal = [r[field] for r in role["runs"]["1"]]
    return {
        float(f): [r[field] / i for r, i in zip(runs, ideal, strict=True)] for f, runs in role["runs"].items()
    }


def fastest_ratio(role: dict[str, Any], fraction: float) -> float:
    """The fastest run at ``fraction`` over the fastest ideal run (``testbed profile --repeat``)."""
    return min(r["seconds"] for r in role["runs"][f"{fraction:g}"]) / min(
        r["seconds"] for r in role["runs"]["1"]
    )


def table(result: dict[str, Any]) -> str:
    lines = []
    for name, role in result["roles"].items():
        lines.append(
            f"{result['workload']} {name}: input {role['input_mb']:.1f} MB, ideal {role['ideal_mb']:.1f} MB, "
            f"ideal runtime {statistics.median(r['seconds'] for r in role['runs']['1']):.2f} s (median)"
        )
        lines.append(
            f"{'fraction':>8} {'median x':>9} {'range x':>13} {'fastest x':>9} {'CPU x':>6} "
            f"{'spilled MB':>10} {'passes':>6}"
        )
        cpu = ratios(role, "cpu_seconds")
        for fraction, values in sorted(ratios(role).items(), reverse=True):
            run = role["runs"][f"{fraction:g}"][0]
            lines.append(
                f"{fraction:>8.2f} {statistics.median(values):>9.2f} {min(values):>6.2f}-{max(values):<6.2f} "
                f"{fastest_ratio(role, fraction):>9.2f} {statistics.median(cpu[fraction]):>6.2f} "
                f"{run['spill_mb']:>10.1f} {run['passes']:>6}"
            )
    return "\n".join(lines)


def plot(out: Path, paths: list[Path]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(7.0, 2.8), sharey=True)
    colors: dict[str, str] = {}
    for ax, role in zip(axes, ("map", "reduce"), strict=True):
        for path in paths:
            result = json.loads(path.read_text())
            data = result["roles"].get(role)
            if data is None:
                continue
            points = sorted(ratios(data).items())
            xs = [f for f, _ in points]
            style = "--" if path.stem.endswith("before") else "-"
            color = colors.setdefault(
                path.stem.removesuffix("-before").removesuffix("-after"), f"C{len(colors)}"
            )
            fastest = [fastest_ratio(data, f) for f in xs]
            ax.plot(xs, fastest, style, color=color, marker="o", ms=3, label=path.stem)
            low, high = [min(v) for _, v in points], [max(v) for _, v in points]
            ax.fill_between(xs, low, high, color=color, alpha=0.12)
        if role == "reduce":
            low, high = PAPER_REDUCER_BAND
            ax.vlines(0.1, low, high, colors="black", lw=3, label="paper: 7 of 10 reducers at 10%")
            xs, ys = zip(*PAPER_WORDCOUNT_REDUCER, strict=True)
            ax.plot(xs, ys, "k--", marker="s", ms=3, label="paper: WordCount reducer")
        else:
            ax.axhline(PAPER_MAPPER_MAX, color="black", ls="--", label="paper: largest mapper penalty")
        ax.set_title(f"{role}pers" if role == "map" else "reducers")
        ax.set_xlabel("memory / ideal memory")
        ax.set_xlim(0, 1.05)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    axes[0].set_ylabel("runtime / ideal runtime")
    fig.tight_layout()
    for suffix in (".png", ".svg"):
        fig.savefig(out.with_suffix(suffix), dpi=150)
    print(f"wrote {out.with_suffix('.png')} and {out.with_suffix('.svg')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workload", nargs="?", choices=sorted(PROFILED_STAGES))
    parser.add_argument("--size-mb", type=float, default=256)
    parser.add_argument("--maps", type=int, default=4)
    parser.add_argument("--reduces", type=int, default=2)
    parser.add_argument("--vocabulary", type=int, default=0, help="wordcount: distinct words")
    parser.add_argument("--nodes", type=int, default=1_000_000, help="pagerank")
    parser.add_argument("--edges", type=int, default=8_000_000, help="pagerank")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fractions", default="1.0,0.8,0.5,0.3,0.1")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, help="save the measurement here")
    parser.add_argument(
        "--plot",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="STEM JSON...: draw saved results to STEM.png/.svg",
    )
    args = parser.parse_args()
    if args.plot:
        if len(args.plot) < 2:
            parser.error("--plot needs an output stem and at least one saved result")
        plot(args.plot[0], args.plot[1:])
        return
    if args.workload is None:
        parser.error("a workload, or --plot with saved results")
    result = measure(args)
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
