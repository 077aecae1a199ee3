"""Where Pado wins, as a map (issue 46, point 6): Pado's mean JCT over Spark's and over
Spark-checkpoint's against the job's length over the transient containers' mean lifetime and
against the reserved share of the slots, in the simulator.

    python benchmarks/pado_regime.py --out DIR [--seeds 4] [--time-scales 0.25,0.5,1,2,4] \
        [--reserved-slots 2,4,8,16] [--jobs 2] [--figure docs/pado-regime]

The grid is scenarios/papers/pado.yaml (the iterative job at the paper's 40 + 5 containers, the
high rate) under each strategy, with ``time_scale`` (the lifetimes, written in trace time, run
that many times faster against the same job) and ``cluster.reserved.slots`` varied. A cell's
job length is Spark's mean JCT with no eviction (one run per reserved-slot value: the sim is
deterministic) times its ``time_scale``, over the lifetime model's mean; its reserved share is
the reserved slots over all slots. The shipped scenarios named in ``POINTS`` are run the same
way (each strategy with no eviction and at its own rate) and placed on the map; the paper's
ALS at its three rates is placed from its stated 13 minutes (``PAPER_ALS``).

Every run is a ``testbed sweep`` cell under DIR (a rerun resumes them); the script prints the
tables (markdown, with the head commit, the date and the load average) and writes
``<figure>.png`` and ``.svg``. Sim results do not depend on the host's load.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "benchmarks"), str(ROOT)]  # this tree's testbed, as testbed() runs

from paper_stats import Ratio, fmt, paired_ratio  # noqa: E402
from reproduce import commit, load_average, testbed  # noqa: E402

from testbed.app.overlay import save_figure  # noqa: E402
from testbed.chaosmodels.lifetimes import parse_lifetime  # noqa: E402

GRID = ROOT / "scenarios" / "papers" / "pado.yaml"
HORIZON_S = 5400
"""The grid's timeout (1.5 h, 7x Pado's JCT there). From 0.4 of the mean lifetime on,
Spark's lineage never finishes the job with 20 reserved slots or fewer (at time_scale 2 it was
in its first iteration after 16,700 s). A run that hits the timeout counts as taking it, a lower
bound, and the ratios over it are upper bounds (``<`` in the table). The chaos plan is drawn up
to timeout x time_scale (trace time) within 100,000 evictions, which the shipped 7d passes at
time_scale 4."""
HORIZON = f"timeout={HORIZON_S}s"
STRATEGIES = ("spark", "spark-checkpoint", "pado")
BASELINES = ("spark", "spark-checkpoint")
POINTS = {  # the shipped scenarios placed on the map: their label, (sweep folder, scenario)
    "papers/pado-mr (sort)": ("mr", ROOT / "scenarios" / "papers" / "pado-mr.yaml"),
    "pado-vs-spark (in sim)": ("pvs", ROOT / "scenarios" / "pado-vs-spark.yaml"),
}
ALS_SPARK_S = 13 * 60
"""Pado, section 5.2.1: "Spark finishes the job in 13 minutes without any evictions"."""
PAPER_ALS = {  # the paper's ALS at each rate: Pado against Spark, against Spark-checkpoint
    "low": "Pado ahead of Spark-checkpoint",
    "medium": "Spark past 90 min; Pado ahead of Spark-checkpoint",
    "high": "Pado 4.1x Spark, 2.1x Spark-checkpoint",
}
PAPER_SHARE = 5 * 4 / (5 * 4 + 40 * 4)
"""5 reserved and 40 transient containers of 4 vCPUs each (section 5.1.1)."""


@dataclass(frozen=True)
class Cell:
    """One point of the map: its coordinates and Pado's ratio against each baseline."""

    label: str
    length: float  # job length over the mean lifetime
    share: float  # reserved slots over all slots
    jct: dict[str, float]  # each strategy's mean JCT over the seeds (s)
    ratios: dict[str, Ratio | None]
    censored: frozenset[str]  # the strategies with a run that hit the timeout


def mean_lifetime_s(value: object) -> float:
    """The lifetime model's mean in trace seconds, from 10^6 seeded draws (every family)."""
    return float(parse_lifetime(value).sample(np.random.default_rng(0), 1_000_000).mean())


def share_of(scenario: dict) -> float:
    reserved, transient = scenario["cluster"]["reserved"], scenario["cluster"]["transient"]
    slots = reserved["count"] * reserved["slots"]
    return slots / (slots + transient["count"] * transient["slots"])


def sweep(scenario: Path, out: Path, varies: list[str], sets: list[str], seeds: int, jobs: int) -> None:
    command = ["sweep", str(scenario), "--seeds", str(seeds), "--jobs", str(jobs), "--out", str(out)]
    for vary in varies:
        command += ["--vary", vary]
    for setting in sets:
        command += ["--set", setting]
    status = testbed(*command, check=False)  # 1: some runs failed; they are left out below
    if status not in (0, 1):
        raise SystemExit(f"pado_regime: testbed sweep {scenario.name} exited {status}")


def finished(out: Path) -> list[tuple[dict, dict]]:
    """(summary, resolved scenario) of the sweep's runs whose jobs all finished or whose every
    failure is the run's timeout (``censored``: the JCT taken is the makespan, the timeout); a
    run's resolved scenario.yaml says its strategy, seed, time_scale, slots and rate."""
    runs = []
    for path in sorted(out.glob("*/summary.json")):
        summary = json.loads(path.read_text())
        errors = summary.get("errors") or {}
        timed_out = bool(errors) and all("hit its timeout" in e for e in errors.values())
        if timed_out and summary.get("succeeded") == 0:
            summary = {**summary, "mean_jct_s": summary["makespan_s"], "censored": True}
        elif summary.get("mean_jct_s") is None or summary.get("failed"):
            continue
        runs.append((summary, yaml.safe_load((path.parent / "scenario.yaml").read_text())))
    return runs


def strategy(scenario: dict) -> str:
    return str(scenario["policy"]["strategy"])


def lifetime(scenario: dict) -> object:
    return scenario["chaos"]["transient"]["lifetime"]


def reserved_slots(scenario: dict) -> int:
    return int(scenario["cluster"]["reserved"]["slots"])


def cell(label: str, runs: list[tuple[dict, dict]], length: float) -> Cell:
    """Pado's paired ratios over ``runs`` (one condition; each strategy by seed)."""
    by_strategy: dict[str, dict[int, float]] = defaultdict(dict)
    for summary, scenario in runs:
        by_strategy[strategy(scenario)][int(scenario["seed"])] = float(summary["mean_jct_s"])
    jct = {s: float(np.mean(list(v.values()))) for s, v in by_strategy.items()}
    ratios = {b: paired_ratio(by_strategy.get("pado", {}), by_strategy.get(b, {})) for b in BASELINES}
    censored = frozenset(strategy(sc) for s, sc in runs if s.get("censored"))
    return Cell(label, length, share_of(runs[0][1]), jct, ratios, censored)


def grid_cells(out: Path, args: argparse.Namespace) -> list[Cell]:
    """The grid's cells, by reserved slots then time_scale."""
    strategies = "policy.strategy=" + ",".join(STRATEGIES)
    scales, slots = f"time_scale={args.time_scales}", f"cluster.reserved.slots={args.reserved_slots}"
    sweep(GRID, out / "grid", [strategies, scales, slots], [HORIZON], args.seeds, args.jobs)
    sweep(
        GRID,
        out / "none",
        ["policy.strategy=spark,pado", slots],
        ["chaos.transient.lifetime=none", HORIZON],
        1,
        args.jobs,
    )
    return read_grid(out)


def read_grid(out: Path) -> list[Cell]:
    """The cells of the sweeps under ``out`` (``grid``, and ``none``: Spark's runs with no
    eviction, which give each reserved-slot value's job length), by reserved slots then
    time_scale."""
    spark_none = {
        reserved_slots(sc): float(s["mean_jct_s"])
        for s, sc in finished(out / "none")
        if strategy(sc) == "spark"
    }
    groups: dict[tuple[int, float], list[tuple[dict, dict]]] = defaultdict(list)
    for summary, scenario in finished(out / "grid"):
        groups[(reserved_slots(scenario), float(scenario["time_scale"]))].append((summary, scenario))
    found = []
    for (slots_value, scale), runs in sorted(groups.items()):
        scenario = runs[0][1]
        length = spark_none[slots_value] * scale / mean_lifetime_s(lifetime(scenario))
        count = scenario["cluster"]["reserved"]["count"]
        found.append(cell(f"{count} x {slots_value} reserved slots, time_scale {scale:g}", runs, length))
    return found


def point_cell(label: str, scenario_path: Path, out: Path, args: argparse.Namespace) -> Cell:
    """A shipped scenario at its own rate, its length from Spark's runs with no eviction."""
    own = yaml.safe_load(scenario_path.read_text())["chaos"]["transient"]["lifetime"]
    varies = ["policy.strategy=" + ",".join(STRATEGIES), f"chaos.transient.lifetime=none,{own}"]
    sweep(scenario_path, out, varies, ["backend=sim"], args.seeds, args.jobs)
    runs = finished(out)
    none = [float(s["mean_jct_s"]) for s, sc in runs if lifetime(sc) == "none" and strategy(sc) == "spark"]
    evicted = [(s, sc) for s, sc in runs if lifetime(sc) == own]
    scale = float(evicted[0][1].get("time_scale", 1.0))
    return cell(label, evicted, float(np.mean(none)) * scale / mean_lifetime_s(own))


def ratio_text(c: Cell, baseline: str) -> str:
    """Pado's ratio with its interval and p; ``<`` when the baseline hit the timeout (the
    ratio an upper bound), ``>`` when Pado did."""
    ratio = c.ratios[baseline]
    if ratio is None:
        return "-"
    bound = ("<" if baseline in c.censored else "") + (">" if "pado" in c.censored else "")
    interval = f" [{fmt(ratio.low)}, {fmt(ratio.high)}]" if ratio.low is not None and not bound else ""
    return (
        f"{bound}{fmt(ratio.geo)}{interval}, p = {fmt(ratio.p_t)}"
        if not bound
        else f"{bound} {fmt(ratio.geo)}"
    )


def table(found: list[Cell]) -> str:
    head = (
        "| cell | job length / mean lifetime | reserved share | spark (s) | spark-checkpoint (s) "
        "| pado (s) | pado / spark [95% CI], p | pado / spark-checkpoint [95% CI], p |\n"
        "|---|---|---|---|---|---|---|---|\n"
    )
    rows = [
        f"| {c.label} | {c.length:.3g} | {c.share:.3f} | "
        + " | ".join(("> " if s in c.censored else "") + fmt(c.jct.get(s)) for s in STRATEGIES)
        + f" | {ratio_text(c, 'spark')} | {ratio_text(c, 'spark-checkpoint')} |"
        for c in found
    ]
    return head + "\n".join(rows)


def paper_points() -> list[tuple[str, float]]:
    return [(f"ALS {rate}", ALS_SPARK_S / mean_lifetime_s(rate)) for rate in PAPER_ALS]


def draw(found: list[Cell], points: list[Cell], stem: Path) -> list[Path]:
    """One panel per baseline: each cell a square coloured by Pado's ratio (blue: Pado
    faster), the ratio written on it, the line where it is 1 interpolated between the cells
    (dashed), the shipped scenarios as diamonds and the paper's ALS as stars at the paper's
    share."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import FixedLocator, NullFormatter

    fig, axes = plt.subplots(1, 3, figsize=(7.0, 3.2), gridspec_kw={"width_ratios": [1, 1, 0.04]})
    norm = LogNorm(vmin=1 / 8, vmax=8)
    for ax, baseline in zip(axes[:2], BASELINES, strict=True):
        drawn = [c for c in found if c.ratios[baseline]]
        xs, ys = [c.length for c in drawn], [c.share for c in drawn]
        values = [c.ratios[baseline].geo for c in drawn]  # type: ignore[union-attr]
        ax.scatter(xs, ys, c=values, cmap="RdBu_r", norm=norm, marker="s", s=170)
        for c, v in zip(drawn, values, strict=True):
            bound = "<" if baseline in c.censored else ""
            ax.annotate(
                f"{bound}{v:.2f}", (c.length, c.share), ha="center", va="center", fontsize=4.5, zorder=4
            )
        if len(set(ys)) > 1 and len(set(xs)) > 2 and min(values) < 1 < max(values):
            ax.tricontour(xs, ys, np.log10(values), levels=[0.0], colors="k", linewidths=0.7, linestyles="--")
        _overlay(ax, points, baseline, norm)
        ax.set_xscale("log")
        ax.set_xlim(0.03, 2.5)
        ax.set_ylim(0.0, 0.4)
        ax.xaxis.set_major_locator(FixedLocator([0.05, 0.1, 0.2, 0.5, 1, 2]))
        ax.xaxis.set_major_formatter(lambda x, _: f"{x:g}")
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.tick_params(labelsize=6)
        ax.set_xlabel("job length (Spark, no eviction) / mean lifetime", fontsize=7)
        ax.set_title(f"Pado / {'Spark' if baseline == 'spark' else 'Spark-checkpoint'} mean JCT", fontsize=7)
    axes[0].set_ylabel("reserved share of slots", fontsize=7)
    bar = fig.colorbar(axes[0].collections[0], cax=axes[2], ticks=[1 / 8, 1 / 4, 1 / 2, 1, 2, 4, 8])
    bar.ax.set_yticklabels(["1/8", "1/4", "1/2", "1", "2", "4", "8"], fontsize=6)
    bar.ax.yaxis.set_minor_formatter(NullFormatter())
    bar.set_label("Pado / baseline (< 1: Pado faster)", fontsize=7)
    return save_figure(fig, stem)


def _overlay(ax: object, points: list[Cell], baseline: str, norm: object) -> None:
    """The shipped scenarios (diamonds, coloured by their ratio) and the paper's ALS (stars)."""
    for c in points:
        ratio = c.ratios[baseline]
        colour = None if ratio is None else [[ratio.geo]]
        ax.scatter(
            [c.length], [c.share], c=colour, cmap="RdBu_r", norm=norm, marker="D", s=30, edgecolors="k"
        )
        ax.annotate(c.label, (c.length, c.share), xytext=(3, 3), textcoords="offset points", fontsize=4.5)
    for label, length in paper_points():
        ax.scatter(
            [length], [PAPER_SHARE], marker="*", s=110, facecolors="none", edgecolors="goldenrod", zorder=3
        )
        ax.annotate(label, (length, PAPER_SHARE), xytext=(-8, -14), textcoords="offset points", fontsize=4.5)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="the sweeps' folder (a rerun resumes)")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--time-scales", default="0.25,0.5,1,2,4")
    parser.add_argument("--reserved-slots", default="2,4,8,16")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--figure", type=Path, default=ROOT / "docs" / "pado-regime")
    args = parser.parse_args()
    before, started = load_average(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    found = grid_cells(args.out, args)
    points = [point_cell(label, path, args.out / folder, args) for label, (folder, path) in POINTS.items()]
    print(
        f"commit {commit()}, started {started}, load average {before} before and {load_average()} after; "
        f"seeds 1 to {args.seeds}; grid {GRID.relative_to(ROOT)}, time_scale {args.time_scales}, "
        f"reserved slots per container {args.reserved_slots}; sim (deterministic per seed)\n"
    )
    print(table(found) + "\n\nShipped scenarios, each at its own rate:\n\n" + table(points) + "\n")
    for label, length in paper_points():
        print(f"{label}: job length / mean lifetime {length:.3g}, reserved share {PAPER_SHARE:.3f}")
    args.figure.parent.mkdir(parents=True, exist_ok=True)
    print("wrote", ", ".join(str(p) for p in draw(found, points, args.figure)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
