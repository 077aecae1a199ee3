"""``testbed crosscheck``: the same cells and seeds run for real and on the simulator, compared.

Two sweeps (``testbed/app/sweep/``: its grid, its runner, its resume) into ``<out>/real`` and
``<out>/sim``: the real one on the scenario's backend (``local`` when the scenario says
``sim``), the other with ``backend=sim``. Then ``crosscheck.md`` and ``crosscheck.csv``
(``testbed/app/crosscheck/table.py``: per cell and metric, real and sim mean with their intervals and
the error) and ``crosscheck.png``: every job's simulated JCT against its real JCT (the job of
the same cell and seed), with the line y = x. The host's load average before and after the
real runs heads the markdown: a loaded host slows the real side only. A faithful real side's
link burst (its token buckets', in its emulated seconds) is the sim side's ``link_burst``.
"""

from __future__ import annotations

import csv
import json
import platform
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import yaml

from testbed.app.calibrate import attempt_op, final_split_ops, final_stages, load_average, stage_ops
from testbed.app.crosscheck.table import (
    MetricError,
    RunNumbers,
    Tolerance,
    Values,
    cell_label,
    compare,
    csv_rows,
    markdown,
    op_table,
    violations,
)
from testbed.app.sweep.grid import Cell, Variation, grid
from testbed.app.sweep.options import SERIAL, Executor
from testbed.app.sweep.results import CellResult, cell_result
from testbed.app.sweep.run import run_sweep
from testbed.journal.tables import emulated_row, measured_rows, read_table
from testbed.node.bandwidth import BURST_S
from testbed.scenario.schema import Scenario, load_scenario
from testbed.scenario.simulation import calibration_digest

SIDES = ("real", "sim")


@dataclass(frozen=True)
class Crosscheck:
    errors: list[MetricError]
    failed: list[str]
    """``side/run (status)`` of each run that failed or crashed (left out of the numbers)."""

    def problems(self, tolerances: Mapping[str, Tolerance]) -> list[str]:
        """One line per failed run (together) and per error beyond its tolerance: exit 1."""
        lines = []
        if self.failed:
            lines.append(f"{len(self.failed)} run(s) failed: {', '.join(self.failed)}; see <side>/logs/")
        for error, tolerance in violations(self.errors, tolerances):
            relative = "n/a" if error.relative is None else f"{error.relative * 100:+.1f}%"
            absolute = "n/a" if error.absolute is None else f"{error.absolute:+.4g}"
            lines.append(
                f"beyond tolerance: {cell_label(error.cell)} {error.metric}: error {absolute} ({relative}), "
                f"limit {tolerance.text()}"
            )
        return lines


def run_crosscheck(
    scenario_path: Path,
    variations: list[Variation],
    seed_count: int,
    out: Path,
    extra: list[str],
    tolerances: Mapping[str, Tolerance],
    check: Callable[[Scenario], None] = lambda _: None,
    sim_only: Sequence[str] = (),
    executor: Executor = SERIAL,
) -> Crosscheck:
    """The cells run for real, then simulated (``sim_only``: overrides of the sim side alone,
    e.g. the calibration ``--calibrate`` measured), and compared."""
    base = load_scenario(scenario_path, extra)
    real_backend = "local" if base.backend in (None, "sim") else base.backend
    seeds = [base.seed + i for i in range(seed_count)]
    cells = grid(variations, seeds)
    reused = sum((out / "real" / cell.name / "summary.json").exists() for cell in cells)
    load_before = load_average()
    real_extra = [*extra, f"backend={real_backend}"]
    run_sweep(scenario_path, variations, seed_count, out / "real", real_extra, 1, check, executor)
    load_after = load_average()
    sim_extra = [*extra, *sim_only, *real_link_burst(out / "real", extra)]
    sim_side = [*sim_extra, "backend=sim"]
    run_sweep(scenario_path, variations, seed_count, out / "sim", sim_side, 1, check, executor)
    results = {side: {cell: cell_result(out / side, cell) for cell in cells} for side in SIDES}
    errors = compare(_numbers_by_cell(cells, results))
    rows = csv_rows(errors, tolerances)
    with open(out / "crosscheck.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    head = (
        f"# Cross-check: {base.name} ({scenario_path}), real ({real_backend}) against sim\n\n"
        + load_note(load_before, load_after, reused, len(cells))
        + "".join(f"Overrides: `--set {s}`\n" for s in extra)
        + "".join(f"Sim side only: `--set {s}`\n" for s in sim_extra[len(extra) :])
        + calibration_note(load_scenario(scenario_path, [*extra, *sim_only, "backend=sim"]))
        + "\n"
    )
    ops = ["", "Task durations per op (the execution model's parts):", "", *task_durations(out, cells, base)]
    text = head + markdown(errors, tolerances, seeds) + "\n".join(ops) + "\n"
    (out / "crosscheck.md").write_text(text, encoding="utf-8")
    scatter(out, cells, out / "crosscheck.png")
    failed = [
        f"{side}/{r.name} ({r.status})" for side in SIDES for r in results[side].values() if r.status != "ok"
    ]
    return Crosscheck(errors, failed)


def load_note(before: str, after: str, reused: int, runs: int) -> str:
    """The host's load around the real runs made now; a rerun that made none (the real runs
    resumed from an earlier call) does not know theirs."""
    if reused == runs:
        return f"Host load average: not known (all {runs} real runs were made by an earlier call).\n"
    note = f"Host load average (1, 5, 15 min) before the real runs: {before}; after: {after}.\n"
    if reused:
        note += f"({reused} of the {runs} real runs were made by an earlier call, at a load not known.)\n"
    return note


def real_link_burst(real: Path, extra: list[str]) -> list[str]:
    """The sim side's ``simulation.link_burst`` override: the real runs' token bucket burst
    (``testbed.node.bandwidth.BURST_S``, wall seconds) in their emulated seconds, when they were
    faithful (an unisolated run has no bucket) and the caller set none. It depends on the
    dilation the real runs had on this host, which the simulated scenario does not know."""
    if any(s.startswith("simulation.link_burst=") for s in extra):
        return []
    for summary in sorted(real.glob("*/summary.json")):
        data = json.loads(summary.read_text())
        if data.get("fidelity_mode") == "faithful":
            return [f"simulation.link_burst={BURST_S / float(data.get('dilation') or 1.0):.6g}"]
    return []


def calibration_note(scenario: Scenario) -> str:
    """Which calibration the sim side used (the simulated scenario: named, or the one beside
    it), where it was measured, and a warning when that was another host or another fidelity
    mode than the scenario runs in (its times then mean other seconds)."""
    path = scenario.simulation.calibration
    if path is None:
        return "Simulated with the execution model's defaults (no calibration).\n"
    note = f"Calibration: `{path}` (SHA-256 {calibration_digest(path)[:12]})"
    measured = (yaml.safe_load(Path(path).read_text()) or {}).get("measured") or {}
    if not isinstance(measured, dict):
        return note + "\n"
    host, mode = measured.get("host"), measured.get("fidelity_mode")
    if host is not None:
        note += f", measured on {host} at load {measured.get('load_average_before', 'unknown')}"
        if host != platform.node():
            note += f"; **this host is {platform.node()}**"
    if mode is not None and mode != scenario.fidelity.mode:
        note += f"; **measured in {mode} mode, the scenario runs {scenario.fidelity.mode}**"
    return note + "\n"


def _numbers_by_cell(
    cells: list[Cell], results: dict[str, dict[Cell, CellResult]]
) -> dict[Values, tuple[RunNumbers, RunNumbers]]:
    """Each cell's successful runs' summary numbers, real and sim, in seed order."""
    grouped: dict[Values, tuple[list[dict[str, float]], list[dict[str, float]]]] = {}
    for cell in cells:
        real, sim = grouped.setdefault(cell.values, ([], []))
        for side, runs in (("real", real), ("sim", sim)):
            result = results[side][cell]
            if result.status == "ok":
                runs.append(result.summary)
    return dict(grouped)


def task_durations(out: Path, cells: list[Cell], scenario: Scenario) -> list[str]:
    """The op table of every succeeded attempt (launch to end, emulated seconds; input and
    output MB) of both sides, the final stages of an op that is not always final apart as
    ``<op>.final`` (as ``testbed calibrate`` fits them)."""
    ops_of, final_split = stage_ops(scenario), final_split_ops(scenario)
    sides: dict[str, dict[str, list[tuple[float, float, float]]]] = {side: {} for side in SIDES}
    for side in SIDES:
        for cell in cells:
            run = out / side / cell.name
            if not (run / "summary.json").exists():
                continue
            dilation = float(json.loads((run / "summary.json").read_text()).get("dilation") or 1.0)
            jobs = measured_rows(run / "jobs.csv")
            tasks = [emulated_row(row, dilation) for row in read_table(run / "tasks.csv", "tasks")]
            workloads, finals = {row["job_id"]: row["workload"] for row in jobs}, final_stages(jobs, tasks)
            for task in tasks:
                workload = workloads.get(task["job_id"], "")
                op = ops_of.get((workload, int(task["stage"])), f"{workload}.stage{task['stage']}")
                op = attempt_op(op, task, finals, final_split)
                if task["status"] == "succeeded":
                    seconds = float(task["end_s"]) - float(task["start_s"])
                    mb = [float(task[key] or 0) / 2**20 for key in ("bytes_in", "bytes_out")]
                    sides[side].setdefault(op, []).append((seconds, *mb))
    return op_table(sides["real"], sides["sim"])


def job_jcts(run_dir: Path) -> dict[str, float]:
    """Each succeeded job's JCT in emulated seconds (jobs.csv has wall seconds)."""
    path = run_dir / "jobs.csv"
    summary = run_dir / "summary.json"
    if not path.exists() or not summary.exists():
        return {}
    dilation = float(json.loads(summary.read_text()).get("dilation") or 1.0)
    jobs = (emulated_row(row, dilation) for row in read_table(path, "jobs"))
    return {j["job_id"]: float(j["jct_s"]) for j in jobs if j["status"] == "succeeded" and j["jct_s"]}


def scatter(out: Path, cells: list[Cell], path: Path) -> None:
    """Simulated against real JCT of every job both sides finished, one colour per cell."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    points: dict[Values, tuple[list[float], list[float]]] = {}
    for cell in cells:
        real, sim = job_jcts(out / "real" / cell.name), job_jcts(out / "sim" / cell.name)
        xs, ys = points.setdefault(cell.values, ([], []))
        for job in sorted(real.keys() & sim.keys()):
            xs.append(real[job])
            ys.append(sim[job])
    everything = [v for xs, ys in points.values() for v in (*xs, *ys)]
    for values, (xs, ys) in points.items():
        ax.scatter(xs, ys, s=14, alpha=0.7, label=cell_label(values))
    top = max(everything, default=1.0) * 1.05
    ax.plot([0, top], [0, top], color="grey", linewidth=1, label="y = x")
    ax.set_xlim(0, top)
    ax.set_ylim(0, top)
    ax.set_xlabel("real JCT (s, emulated)")
    ax.set_ylabel("simulated JCT (s)")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
