"""Paired statistics over a paper sweep's runs: per variant n, mean, sd and a 95% interval;
per comparison the ratio of the subject's metric to the other variant's, paired by seed,
with its interval and a test.

    python benchmarks/paper_stats.py SWEEP_DIR [SWEEP_DIR ...] --metric mean_jct_s \
        --compare scheduler --subject yarn-me

Runs are the sweep's cell directories that have a summary.json (``testbed sweep`` names
them ``key-value_..._seed-N``); several sweep directories may be given (e.g. two halves of
a grid run side by side). Runs that agree on every other varied key form one condition.

- mean's interval: Student's t over the seeds (n - 1 degrees of freedom). With 3 seeds this
  is wide on purpose: a percentile bootstrap is too narrow at such n.
- ratio: the geometric mean over seeds of subject / other (the same seed gives both the
  same trace or eviction schedule), its t interval on the logs, and the paired t-test
  on the logs (two-sided, ``scipy.stats.ttest_rel``); with 6 or more pairs also the exact
  Wilcoxon signed-rank test. A claim "faster" or "slower" needs p < 0.05.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CELL = re.compile(r"^(?P<label>.*)_seed-(?P<seed>\d+)$")


def cells(sweeps: Iterable[Path]) -> list[tuple[dict[str, str], int, dict]]:
    """(varied values, seed, summary) of every finished run, each value under its key's last
    part (``policy.options.firmament.cost_model`` -> ``cost_model``)."""
    found = []
    for sweep in sweeps:
        named = grid_labels(sweep)
        for summary in sorted(sweep.glob("*/summary.json")):
            match = CELL.match(summary.parent.name)
            if match is None:
                continue
            label = match["label"]
            values = named.get(label) or dict(part.split("-", 1) for part in label.split("_") if "-" in part)
            found.append((values, int(match["seed"]), json.loads(summary.read_text())))
    return found


def grid_labels(sweep: Path) -> dict[str, dict[str, str]]:
    """Each cell label of the sweep's grid (its sweep.json) and its values: a label alone is
    ambiguous where a key holds an underscore (``cost_model-quincy``); empty without one."""
    from testbed.app.sweep.grid import Variation, grid

    try:
        vary = json.loads((sweep / "sweep.json").read_text())["vary"]
    except (OSError, ValueError, KeyError):
        return {}
    variations = [Variation(key, tuple(str(value) for value in values)) for key, values in vary]
    return {
        CELL.match(cell.name)["label"]: {key.rsplit(".", 1)[-1]: value for key, value in cell.values}
        for cell in grid(variations, [0])
    }


def t_interval(values: list[float]) -> tuple[float, float] | None:
    from scipy import stats  # where a test is computed: importing the tables' users stays quick

    if len(values) < 2:
        return None
    mean, sem = float(np.mean(values)), float(stats.sem(values))
    if sem == 0:
        return mean, mean
    half = sem * float(stats.t.ppf(0.975, len(values) - 1))
    return mean - half, mean + half


@dataclass(frozen=True)
class Ratio:
    """The subject's metric over another variant's, paired by seed: the geometric mean over
    the seeds, its 95% t interval on the logs (None with one pair), the paired t-test's p
    and, with 6 or more pairs, the Wilcoxon signed-rank test's."""

    n: int
    geo: float
    low: float | None
    high: float | None
    p_t: float | None
    p_w: float | None


def paired_ratio(mine: dict[int, float], other: dict[int, float]) -> Ratio | None:
    """``mine`` over ``other`` ({seed: value}) on their common seeds; None without one."""
    common = sorted(set(mine) & set(other))
    logs = [math.log(mine[s] / other[s]) for s in common if mine[s] > 0 and other[s] > 0]
    if not logs:
        return None
    from scipy import stats

    interval = t_interval(logs)
    low, high = (math.exp(interval[0]), math.exp(interval[1])) if interval else (None, None)
    p_t = float(stats.ttest_1samp(logs, 0.0).pvalue) if len(logs) > 1 and np.std(logs) > 0 else None
    p_w = float(stats.wilcoxon(logs).pvalue) if len(logs) >= 6 else None
    return Ratio(len(logs), math.exp(float(np.mean(logs))), low, high, p_t, p_w)


def fmt(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"


def table(runs: list[tuple[dict[str, str], int, dict]], metric: str, compare: str, subject: str) -> str:
    by_condition: dict[tuple, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    failed: list[str] = []
    for values, seed, summary in runs:
        condition = tuple(sorted((k, v) for k, v in values.items() if k != compare))
        value = summary.get(metric)
        if value is None or summary.get("failed"):
            failed.append(f"{values} seed {seed}: {metric}={value}, failed jobs {summary.get('failed')}")
        if value is not None:
            by_condition[condition][values.get(compare, "")][seed] = float(value)
    lines = []
    for condition, variants in sorted(by_condition.items()):
        label = ", ".join(f"{k}={v}" for k, v in condition) or "all runs"
        lines += [
            f"**{label}** ({metric})",
            "",
            "| variant | seeds | n | mean | sd | 95% CI (t) |",
            "|---|---|---|---|---|---|",
        ]
        for name, seeds in sorted(variants.items()):
            data = [seeds[s] for s in sorted(seeds)]
            interval = t_interval(data)
            sd = float(np.std(data, ddof=1)) if len(data) > 1 else None
            ci = f"[{fmt(interval[0])}, {fmt(interval[1])}]" if interval else "-"
            lines.append(
                f"| {name} | {','.join(map(str, sorted(seeds)))} | {len(data)} | "
                f"{fmt(float(np.mean(data)))} | {fmt(sd)} | {ci} |"
            )
        lines += [
            "",
            f"| {subject} / other, paired by seed | n | geo-mean ratio | 95% CI (t on logs) "
            "| paired t-test p | Wilcoxon p |",
            "|---|---|---|---|---|---|",
        ]
        mine = variants.get(subject, {})
        for name, seeds in sorted(variants.items()):
            if name == subject:
                continue
            ratio = paired_ratio(mine, seeds)
            if ratio is None:
                lines.append(f"| vs {name} | 0 | - | - | - | - |")
                continue
            ci = f"[{fmt(ratio.low)}, {fmt(ratio.high)}]" if ratio.low is not None else "-"
            lines.append(
                f"| vs {name} | {ratio.n} | {ratio.geo:.3f} | {ci} | {fmt(ratio.p_t)} | {fmt(ratio.p_w)} |"
            )
        lines.append("")
    if failed:
        lines += ["Runs with failed jobs or no value (flagged, kept where a value exists):", ""]
        lines += [f"- {line}" for line in failed]
    return "\n".join(lines)


def conditions(runs: list[tuple[dict[str, str], int, dict]]) -> str:
    backends = sorted({_backend(s) for _, _, s in runs})
    sims = [s["simulation"] for _, _, s in runs if isinstance(s.get("simulation"), dict)]
    walls = [w for w in (sim.get("elapsed_s") for sim in sims) if isinstance(w, int | float)]
    text = f"backend {', '.join(backends)}; {len(runs)} runs"
    if walls:
        text += f"; wall {min(walls):.0f} to {max(walls):.0f} s per run"
    fidelity = [s["fidelity"] for _, _, s in runs if isinstance(s.get("fidelity"), dict)]
    busy = [f["host_busy_mean"] for f in fidelity if "host_busy_mean" in f]
    if busy:
        distorted = sum(bool(f.get("distorted")) for f in fidelity)
        text += f"; host busy {min(busy):.2f} to {max(busy):.2f} of its cores; {distorted} flagged distorted"
    return text


def _backend(summary: dict) -> str:
    """``sim``, or a real run's mode and dilation (a real run's summary names no backend)."""
    if "backend" in summary:
        return str(summary["backend"])
    return f"real ({summary.get('fidelity_mode')}, dilation {summary.get('dilation')})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweeps", nargs="+", type=Path)
    parser.add_argument("--metric", default="mean_jct_s")
    parser.add_argument("--compare", required=True, help="the varied key (last part)")
    parser.add_argument("--subject", required=True, help="the value compared against the others")
    args = parser.parse_args()
    runs = cells(args.sweeps)
    if not runs:
        print("no finished runs", file=sys.stderr)
        return 1
    print(f"Conditions: {conditions(runs)}.\n")
    print(table(runs, args.metric, args.compare, args.subject))
    return 0


if __name__ == "__main__":
    sys.exit(main())
