"""Overlay plots across runs and variants, sized for one column of a paper (3.3 in wide):
the CDF of each variant's job completion times (or queueing delays), with a band.

A variant with several runs (seeds, repeats) is drawn as the CDF of all its runs'
jobs pooled, with the band spanning the middle 95% of its runs' own CDFs at each
point (the run-to-run spread); a variant of one run gets the 95% DKW confidence
band of its empirical CDF (Dvoretzky-Kiefer-Wolfowitz: ±sqrt(ln(2/0.05) / 2n)).
Each figure is written as PNG and SVG.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

COLUMN_WIDTH_IN = 3.3
HEIGHT_IN = 2.4
DKW_ALPHA = 0.05

Samples = dict[str, list[list[float]]]
"""Variant label -> one list of values per run."""


def ecdf_at(values: list[float], xs: np.ndarray) -> np.ndarray:
    data = np.sort(np.asarray(values, dtype=float))
    return np.searchsorted(data, xs, side="right") / data.size


def band(runs: list[list[float]], xs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(pooled CDF, lower band, upper band) at ``xs``."""
    pooled = ecdf_at([v for run in runs for v in run], xs)
    if len(runs) > 1:
        curves = np.array([ecdf_at(run, xs) for run in runs])
        low, high = np.percentile(curves, [2.5, 97.5], axis=0)
        return pooled, low, high
    eps = math.sqrt(math.log(2 / DKW_ALPHA) / (2 * len(runs[0])))
    return pooled, np.clip(pooled - eps, 0, 1), np.clip(pooled + eps, 0, 1)


def plot_cdfs(
    samples: Samples, xlabel: str, stem: Path, ylabel: str = "fraction of jobs", count_runs: bool = True
) -> list[Path]:
    """Write ``<stem>.png`` and ``<stem>.svg``; nothing (an empty list) without data.
    ``count_runs``: each legend entry says its number of runs."""
    samples = {label: [run for run in runs if run] for label, runs in samples.items()}
    samples = {label: runs for label, runs in samples.items() if runs}
    if not samples:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    everything = [v for runs in samples.values() for run in runs for v in run]
    xs = np.linspace(min(everything), max(everything), 400)
    with plt.rc_context({"font.size": 7, "axes.titlesize": 7, "legend.fontsize": 6}):
        fig, ax = plt.subplots(figsize=(COLUMN_WIDTH_IN, HEIGHT_IN))
        for label, runs in samples.items():
            pooled, low, high = band(runs, xs)
            legend = f"{label} ({len(runs)} run{'s' * (len(runs) > 1)})" if count_runs else label
            (line,) = ax.step(xs, pooled, where="post", linewidth=1.0, label=legend)
            ax.fill_between(xs, low, high, step="post", alpha=0.2, color=line.get_color(), linewidth=0)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_ylim(0, 1.01)
        ax.grid(alpha=0.3, linewidth=0.5)
        ax.legend(loc="lower right", frameon=False)
        return save_figure(fig, stem)


def save_figure(fig: Figure, stem: Path, top: float = 1.0) -> list[Path]:
    """Write ``<stem>.png`` (300 dpi) and ``<stem>.svg``, then close the figure;
    ``top``: the axes' share of the height (room for a legend above)."""
    import matplotlib.pyplot as plt

    fig.tight_layout(pad=0.3, rect=(0, 0, 1, top))
    paths = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.savefig(paths[0], dpi=300)
    fig.savefig(paths[1])
    plt.close(fig)
    return paths
