"""Today's error of the simulator: every shipped scenario that has a real form, cross-checked
against the shipped calibration, as one table in docs/simulation.md ("Today's error").

    python benchmarks/crosscheck_table.py [--seeds 5] [--only LABEL,...] [--out crosschecks/table]
        [--doc docs/simulation.md] [--no-doc]

Each group is one ``testbed crosscheck SCENARIO [--vary ...] --seeds N --set
simulation.calibration=scenarios/calibration/faithful.yaml --out OUT/LABEL`` (a rerun resumes
it). The table gives per cell the real and simulated mean JCT with their 95% intervals, the mean
and p95 JCT errors, the relaunched ratios, and which of the goals (mean JCT within 10%, p95
within 20%, relaunched ratio within 0.05) it meets; its heading names the date, head, host load
and seeds, and the groups that did not run (``--only``) stay out of it, named.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION = ROOT / "scenarios" / "calibration" / "faithful.yaml"
GROUPS: dict[str, tuple[str, list[str]]] = {
    "eviction-storm": ("eviction-storm.yaml", []),
    "pado-vs-spark": ("pado-vs-spark.yaml", ["--vary", "policy.strategy=spark,spark-checkpoint,pado"]),
    "yarn-me": ("yarn-me.yaml", ["--vary", "policy.scheduler=yarn,yarn-me"]),
    "pado-mlr": ("pado-mlr.yaml", ["--vary", "policy.strategy=spark,spark-checkpoint,pado"]),
    "cloudcoaster": ("cloudcoaster.yaml", ["--vary", "policy.autoscaler=static,cloudcoaster"]),
}
GOALS = {"mean_jct_s": 0.10, "p95_jct_s": 0.20}
RELAUNCHED_GOAL = 0.05
BEGIN, END = "<!-- crosscheck-table:begin -->", "<!-- crosscheck-table:end -->"


def run_group(label: str, seeds: int, out: Path) -> Path:
    scenario, vary = GROUPS[label]
    folder = out / label
    command = [sys.executable, "-m", "testbed.app.cli", "crosscheck", str(ROOT / "scenarios" / scenario)]
    command += vary
    command += ["--seeds", str(seeds), "--set", f"simulation.calibration={CALIBRATION}", "--out", str(folder)]
    print("$", " ".join(command[2:]), flush=True)
    subprocess.run(command, check=False, cwd=ROOT)  # exit 1 = beyond a tolerance: none is given
    if not (folder / "crosscheck.csv").exists():
        raise SystemExit(f"{label}: the cross-check wrote no crosscheck.csv: see {folder}")
    return folder


def interval(row: dict[str, str], side: str) -> str:
    mean, low, high = (float(row[f"{side}_{k}"]) for k in ("mean", "low", "high"))
    return f"{mean:.3g} [{low:.3g}, {high:.3g}]"


def cell_rows(label: str, folder: Path) -> list[str]:
    rows = list(csv.DictReader((folder / "crosscheck.csv").open()))
    fixed = {"metric", "real_runs", "real_mean", "real_low", "real_high", "sim_runs", "sim_mean", "sim_low"}
    fixed |= {"sim_high", "abs_error", "rel_error", "tolerance", "within"}
    cells: dict[str, dict[str, dict[str, str]]] = {}
    for row in rows:
        cell = ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in row.items() if k not in fixed) or "-"
        cells.setdefault(cell, {})[row["metric"]] = row
    return [_line(label, cell, metrics) for cell, metrics in cells.items()]


def _line(label: str, cell: str, metrics: dict[str, dict[str, str]]) -> str:
    jct, p95, ratio = metrics["mean_jct_s"], metrics["p95_jct_s"], metrics["relaunched_ratio"]
    missed = [m for m, goal in GOALS.items() if abs(float(metrics[m]["rel_error"] or "nan")) > goal]
    ratio_error = float(ratio["abs_error"]) if ratio["abs_error"] else 0.0
    if abs(ratio_error) > RELAUNCHED_GOAL:
        missed.append("relaunched")
    goals = "**all met**" if not missed else "missed: " + ", ".join(missed).replace("_s", "")
    return (
        f"| {label} | {cell} | {jct['real_runs']} / {jct['sim_runs']} | {interval(jct, 'real')} "
        f"| {interval(jct, 'sim')} | {float(jct['rel_error']) * 100:+.1f}% "
        f"| {float(p95['rel_error']) * 100:+.1f}% "
        f"| {float(ratio['real_mean']):.3f} / {float(ratio['sim_mean']):.3f} | {goals} |"
    )


def table(lines: list[str], seeds: int, left_out: list[str], load: tuple[float, ...]) -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    heading = (
        f"Made by `python benchmarks/crosscheck_table.py --seeds {seeds}` at {when}, head "
        f"{head.stdout.strip() or 'unknown'}, host load (1, 5, 15 min) before {load[0]:.1f} {load[1]:.1f} "
        f"{load[2]:.1f}, after {' '.join(f'{x:.1f}' for x in os.getloadavg())}; calibration "
        f"`scenarios/calibration/faithful.yaml`. Intervals: 95% over the seeds; errors: sim mean "
        f"against real mean."
    )
    if left_out:
        heading += f" Not run this time: {', '.join(left_out)}."
    header = (
        "| scenario | cell | runs real / sim | mean JCT real (s) | mean JCT sim (s) | mean JCT error "
        "| p95 error | relaunched ratio real / sim | goals |\n|---|---|---|---|---|---|---|---|---|"
    )
    return "\n".join([BEGIN, heading, "", header, *lines, END])


def write_doc(doc: Path, text: str) -> None:
    old = doc.read_text()
    if BEGIN not in old:
        raise SystemExit(f"{doc}: no {BEGIN} ... {END} markers to write the table between")
    start, end = old.index(BEGIN), old.index(END) + len(END)
    doc.write_text(old[:start] + text + old[end:])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--only", default=",".join(GROUPS), help=f"groups, of {', '.join(GROUPS)}")
    parser.add_argument("--out", type=Path, default=ROOT / "crosschecks" / "table")
    parser.add_argument("--doc", type=Path, default=ROOT / "docs" / "simulation.md")
    parser.add_argument("--no-doc", action="store_true", help="print the table only")
    args = parser.parse_args()
    chosen = args.only.split(",")
    unknown = [g for g in chosen if g not in GROUPS]
    if unknown:
        print(f"--only: unknown group(s) {', '.join(unknown)}: of {', '.join(GROUPS)}", file=sys.stderr)
        return 2
    load = os.getloadavg()
    lines = [line for label in chosen for line in cell_rows(label, run_group(label, args.seeds, args.out))]
    text = table(lines, args.seeds, [g for g in GROUPS if g not in chosen], load)
    print(text)
    if not args.no_doc:
        write_doc(args.doc, text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
