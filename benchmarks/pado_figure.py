"""Pado's headline speed-ups at the paper's size beside the paper's (EuroSys'17, Figs. 5 to 7, high
eviction rate): for each experiment, how many times faster Pado is than Spark and than
Spark-checkpoint, the geometric mean over seeds with its 95% interval (paired by seed:
``paper_stats.paired_ratio``), the paper's value marked beside each bar.

    python benchmarks/reproduce.py pado --out IT          # every rate, 10 seeds
    python benchmarks/reproduce.py pado-mr --out MR
    python benchmarks/reproduce.py pado-mr-keyed --out KEYED
    python benchmarks/reproduce.py pado-mlr --out MLR     # about 40 min here
    python benchmarks/pado_figure.py --iterative IT --mr MR --mr-keyed KEYED --mlr MLR \
        --out docs/pado-speedups --rates-out docs/pado-rates

``--mr-keyed``: the MR job priced as the paper's, a keyed sum: pado-mr's scenario with the sort's
map and reduce at our wordcount's measured (built-in) rates, the sort's bytes (docs/papers.md,
"Pado MR priced as the paper's reduce"); each experiment is optional.

Writes ``<out>.png`` and ``<out>.svg``, one paper column wide, and prints the numbers drawn.
A sweep may hold other eviction rates: the speed-ups are the high rate's. With ``--rates-out``
and sweeps over every rate (``reproduce.py NAME``, no ``--vary``), a second figure
in the paper's Figs. 5 to 7 format: per experiment each strategy's mean JCT at each rate, with
the standard deviation over seeds as error bars (as the paper's), and its relaunched tasks per
original task. Runs with a failed job are left out of both figures (the sweep's sweep.md and
paired.md flag them).
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from paper_stats import Ratio, cells, paired_ratio

from testbed.app.overlay import COLUMN_WIDTH_IN, HEIGHT_IN, save_figure

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


RATES = ("none", "low", "medium", "high")
STRATEGIES = (("spark", "Spark"), ("spark-checkpoint", "Spark-checkpoint"), ("pado", "Pado"))
TEXT_WIDTH_IN = 7.0
"""Both columns of a paper's page."""


def finished(sweep: Path) -> Iterator[tuple[str | None, str, int, dict]]:
    """(eviction rate, strategy, seed, summary) of the sweep's runs whose jobs all finished; the
    rate is None when the sweep did not vary it."""
    for values, seed, summary in cells([sweep]):
        if summary.get("mean_jct_s") is not None and not summary.get("failed"):
            yield values.get("lifetime"), values.get("strategy", ""), seed, summary


def speedups(sweep: Path) -> dict[str, Ratio]:
    """Pado's paired ratio against each baseline in the sweep's runs at the high rate."""
    by_strategy: dict[str, dict[int, float]] = defaultdict(dict)
    for rate, strategy, seed, summary in finished(sweep):
        if rate in ("high", None):
            by_strategy[strategy][seed] = float(summary["mean_jct_s"])
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
    return save_figure(fig, out)


Series = dict[str, dict[str, list[tuple[float, float]]]]
"""strategy -> rate -> (mean JCT in s, relaunched ratio) per finished run."""


def rate_series(sweep: Path) -> Series:
    series: Series = defaultdict(lambda: defaultdict(list))
    for rate, strategy, _seed, summary in finished(sweep):
        if rate in RATES:
            pair = float(summary["mean_jct_s"]), float(summary.get("relaunched_ratio") or 0.0)
            series[strategy][rate].append(pair)
    return series


def draw_rates(results: dict[str, Series], out: Path) -> list[Path]:
    """Per experiment (a column): each strategy's mean JCT in minutes over the rates (mean
    over seeds, sd as error bars) above its relaunched tasks per original task."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [(name, label) for name, label in EXPERIMENTS if name in results]
    fig, axes = plt.subplots(2, len(names), figsize=(TEXT_WIDTH_IN, 3.6), squeeze=False)
    width = 0.27
    for column, (name, label) in enumerate(names):
        for s, (strategy, legend) in enumerate(STRATEGIES):
            runs = results[name].get(strategy, {})
            present = [(r, runs[rate]) for r, rate in enumerate(RATES) if runs.get(rate)]
            xs = [r + (s - 1) * width for r, _ in present]
            jcts = [[j / 60 for j, _ in pairs] for _, pairs in present]
            relaunched = [np.mean([x for _, x in pairs]) for _, pairs in present]
            errors = [np.std(v, ddof=1) if len(v) > 1 else 0.0 for v in jcts]
            axes[0][column].bar(xs, [np.mean(v) for v in jcts], width, yerr=errors, capsize=1.5, label=legend)
            axes[1][column].bar(xs, relaunched, width, label=legend)
        axes[0][column].set_title(label.replace("\n", " "), fontsize=7)
        for row, ylabel in enumerate(("JCT (min)", "relaunched / original tasks")):
            axis = axes[row][column]
            axis.set_xticks(range(len(RATES)), RATES, fontsize=6)
            axis.tick_params(labelsize=6)
            if column == 0:
                axis.set_ylabel(ylabel, fontsize=7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(STRATEGIES), fontsize=7, frameon=False)
    return save_figure(fig, out, top=0.94)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for name, _ in EXPERIMENTS:
        parser.add_argument(
            f"--{name.replace('_', '-')}", type=Path, help=f"the {name.replace('_', ' ')} sweep's directory"
        )
    parser.add_argument("--out", type=Path, required=True, help="the figure's path without suffix")
    parser.add_argument("--rates-out", type=Path, help="the per-rate figure's path without suffix")
    args = parser.parse_args()
    results = {name: speedups(getattr(args, name)) for name, _ in EXPERIMENTS if getattr(args, name)}
    if not any(results.values()):
        print("pado_figure: no Pado run paired with a baseline in the sweeps given", file=sys.stderr)
        return 2
    for name, found in results.items():
        for baseline, ratio in found.items():
            paper = PAPER[(name, baseline)]
            print(f"{name} vs {baseline}: {1 / ratio.geo:.2f}x (paper {paper}x; n = {ratio.n})")
    paths = draw(results, args.out)
    if args.rates_out:
        series = {name: rate_series(getattr(args, name)) for name, _ in EXPERIMENTS if getattr(args, name)}
        paths += draw_rates(series, args.rates_out)
    for path in paths:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
