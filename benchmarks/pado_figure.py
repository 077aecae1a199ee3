"""Pado's headline speed-ups at the paper's size beside the paper's (EuroSys'17, Figs. 5 to 7, high
eviction rate): for each experiment, how many times faster Pado is than Spark and than
Spark-checkpoint, the geometric mean over seeds with its 95% interval (paired by seed:
``paper_stats.paired_ratio``), the paper's value marked beside each bar.

    python benchmarks/reproduce.py pado --vary chaos.transient.lifetime=high --seeds 5 --out IT
    python benchmarks/reproduce.py pado-mr --vary chaos.transient.lifetime=high --seeds 5 --out MR
    python benchmarks/reproduce.py pado-mlr --vary chaos.transient.lifetime=high --seeds 3 --out MLR
    python benchmarks/reproduce.py pado-mr-keyed --vary chaos.transient.lifetime=high --seeds 5 --out KEYED
    python benchmarks/pado_figure.py --iterative IT --mr MR --mr-keyed KEYED --mlr MLR \
        --out docs/pado-speedups

``--mr-keyed``: the MR job priced as the paper's, a keyed sum: pado-mr's scenario with the sort's
map and reduce at our wordcount's measured (built-in) rates, the sort's bytes (docs/papers.md,
"Pado MR priced as the paper's reduce"); each experiment is optional.

Writes ``<out>.png`` and ``<out>.svg``, one paper column wide, and prints the numbers drawn.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

from paper_stats import Ratio, cells, paired_ratio

from testbed.overlay import COLUMN_WIDTH_IN, HEIGHT_IN

EXPERIMENTS = (
    ("iterative", "iterative\n(PageRank; ALS)"),
    ("mr", "MR\n(sort)"),
    ("mr_keyed", "MR\n(keyed sum)"),
    ("mlr", "MLR"),
)
BASELINES = (("spark", "vs Spark"), ("spark-checkpoint", "vs Spark-checkpoint"))
PAPER = {  # section 5.2, high eviction rate: Pado's speed-up
    ("iterative", "spark"): 4.1,
    ("iterative", "spark-checkpoint"): 2.1,
    ("mr", "spark"): 5.1,
    ("mr", "spark-checkpoint"): 1.3,
    ("mlr", "spark"): 3.5,
    ("mlr", "spark-checkpoint"): 2.7,
}
PAPER |= {("mr_keyed", baseline): PAPER[("mr", baseline)] for baseline, _ in BASELINES}
"""The keyed-sum MR is the paper's same MR job, priced otherwise."""


def speedups(sweep: Path) -> dict[str, Ratio]:
    """Pado's paired ratio against each baseline in the sweep's runs."""
    by_strategy: dict[str, dict[int, float]] = defaultdict(dict)
    for values, seed, summary in cells([sweep]):
        if summary.get("mean_jct_s") is not None and not summary.get("failed"):
            by_strategy[values.get("strategy", "")][seed] = float(summary["mean_jct_s"])
    found = {}
    for baseline, _ in BASELINES:
        ratio = paired_ratio(by_strategy.get("pado", {}), by_strategy.get(baseline, {}))
        if ratio is not None:
            found[baseline] = ratio
    return found


def draw(results: dict[str, dict[str, Ratio]], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, HEIGHT_IN))
    width = 0.38
    top = 0.0
    for b, (baseline, label) in enumerate(BASELINES):
        xs, heights, low, high, paper = [], [], [], [], []
        for e, (name, _) in enumerate(EXPERIMENTS):
            ratio = results.get(name, {}).get(baseline)
            if ratio is None:
                continue
            speedup = 1 / ratio.geo
            xs.append(e + (b - 0.5) * width)
            heights.append(speedup)
            low.append(speedup - 1 / ratio.high if ratio.high else 0.0)
            high.append(1 / ratio.low - speedup if ratio.low else 0.0)
            paper.append(PAPER[(name, baseline)])
        top = max([top, *paper, *(h + e for h, e in zip(heights, high, strict=True))])
        ax.bar(xs, heights, width, yerr=[low, high], capsize=2, label=f"ours, {label}")
        ax.scatter(xs, paper, marker="D", s=14, color="black", zorder=3, label="paper" if b else None)
    ax.axhline(1.0, color="grey", linewidth=0.6)
    ax.set_xticks(range(len(EXPERIMENTS)), [label for _, label in EXPERIMENTS], fontsize=7)
    ax.set_ylabel("Pado's speed-up (x)", fontsize=7)
    ax.tick_params(labelsize=7)
    ax.set_ylim(0, top * 1.45)  # the legend above the tallest bar or mark
    ax.legend(fontsize=6, frameon=False, loc="upper center", ncol=2)
    fig.tight_layout()
    paths = [out.with_suffix(".png"), out.with_suffix(".svg")]
    fig.savefig(paths[0], dpi=300)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, _ in EXPERIMENTS:
        parser.add_argument(
            f"--{name.replace('_', '-')}", type=Path, help=f"the {name.replace('_', ' ')} sweep's directory"
        )
    parser.add_argument("--out", type=Path, required=True, help="the figure's path without suffix")
    args = parser.parse_args()
    results = {name: speedups(getattr(args, name)) for name, _ in EXPERIMENTS if getattr(args, name)}
    if not any(results.values()):
        print("pado_figure: no Pado run paired with a baseline in the sweeps given", file=sys.stderr)
        return 2
    for name, found in results.items():
        for baseline, ratio in found.items():
            paper = PAPER[(name, baseline)]
            print(f"{name} vs {baseline}: {1 / ratio.geo:.2f}x (paper {paper}x; n = {ratio.n})")
    for path in draw(results, args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
