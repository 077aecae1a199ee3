"""``testbed calibrate``: measure the simulator's execution model on this machine.

It runs a calibration scenario for real (``CALIBRATION_SCENARIO``, or the user's: any
scenario whose jobs use the built-in workloads) over some seeds with ``testbed sweep``'s
runner, then fits, from the runs' tables (``fit``):

- ``ops``: per task op, over every succeeded attempt (tasks.csv; a stage's op from the job's
  plan, ``testbed.workloads.plan_job``), ``fixed_s`` and ``s_per_mb`` of compute seconds =
  fixed_s + s_per_mb x input MB (``fit_line``: least squares, both >= 0; when the attempts'
  inputs hardly differ in size a constant cannot be told from a rate, and it is the ratio of
  the sums with no constant), and ``output_ratio`` = output bytes over input bytes (a final
  op's: the default, its output goes to the sink). Either way the fitted times add up to the
  measured ones: the total work the model must reproduce;
- ``launch_overhead``: the median of ``end - start - compute_s`` of those attempts;
- ``node_startup``: the median of ``node_launching`` -> ``node_up`` (events.jsonl), the
  replacement of the evicted node included;
- ``will_delay``: the median ``detect_s`` of the nodes lost to an eviction.

Every time is in the runs' emulated seconds (wall / dilation). The file it writes is a
calibration file (``testbed/scenario_sim.py``): ``simulation`` (those fields) and ``measured``
(the command, host, cores, load average before and after the runs it made, how many runs it
found already made in ``--runs`` (their load is not known), the runs' fidelity mode and
dilation, runs and samples per value). Its times are emulated seconds of the mode it was
measured in: an unisolated calibration holds the host's contention at its load, a faithful one
a node's own share; a scenario should use the one of its mode.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import statistics
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from testbed.scenario import Scenario, load_scenario
from testbed.scenario_sim import OP_MODELS
from testbed.sweep import grid, run_sweep
from testbed.workloads import plan_job

MB = 2**20

CALIBRATION_SCENARIO: dict[str, Any] = {
    "name": "calibrate",
    "seed": 1,
    "cluster": {"reserved": 1, "transient": 2},
    "policy": {"scheduler": "fifo", "strategy": "spark"},
    "chaos": {
        "transient": {"lifetime": "none", "replace": True},
        "storms": [{"at": "2s", "evict": {"count": 1, "kind": "transient", "select": "oldest"}}],
    },
    "jobs": [
        {"workload": "wordcount", "size_mb": 8, "maps": 4, "reduces": 2},
        {"workload": "wordcount", "size_mb": 32, "maps": 4, "reduces": 1},
        {"workload": "sort", "size_mb": 8, "maps": 4, "reduces": 2},
        {"workload": "sort", "size_mb": 32, "maps": 4, "reduces": 1},
        {"workload": "pagerank", "nodes": 50_000, "edges": 400_000, "iterations": 3},
        {"workload": "pagerank", "nodes": 20_000, "edges": 100_000, "iterations": 3, "maps": 2},
    ],
}
"""Two jobs of each built-in workload at once on 1 reserved + 2 transient nodes, their splits
and reduce inputs 4x to 16x apart in size (a per-task constant and a per-MB rate need
attempts of several sizes: ``fit_line``), and one transient node evicted 2 s in for the
detection delay and a replacement's start-up."""

MIN_SIZE_SPREAD = 0.25
"""The least coefficient of variation of an op's input sizes for a constant to be fitted
beside the rate: below it (splits of one size, as in most scenarios) the line is
ill-conditioned (a fit on one-size splits gave wordcount.map 3.1 s per task and 0 s per MB)."""


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def stage_ops(scenario: Scenario) -> dict[tuple[str, int], str]:
    """``(workload, stage) -> op`` of the scenario's jobs (one plan per workload: a built-in
    workload's stages do not depend on its sizes, but for PageRank's iterations)."""
    ops: dict[tuple[str, int], str] = {}
    for job in scenario.jobs:
        if job.workload in ("wordcount", "sort", "pagerank"):
            plan = plan_job(job, scenario.seed, scenario)
            for index, stage in enumerate(plan.stages):
                ops.setdefault((job.workload, index), stage.op)
    return ops


def csv_rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def fit(run_dirs: list[Path], ops_of: dict[tuple[str, int], str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(simulation values, samples)`` from the run directories: what each value was fitted
    from (attempts, nodes) so that a file says how much it rests on."""
    work: dict[str, list[tuple[float, float, float]]] = {}  # op -> [(MB in, compute_s, bytes_out)]
    overheads: list[float] = []
    startups: list[float] = []
    detections: list[float] = []
    for run in run_dirs:
        summary = json.loads((run / "summary.json").read_text())
        dilation = float(summary.get("dilation") or 1.0)
        workloads = {row["job_id"]: row["workload"] for row in csv_rows(run / "jobs.csv")}
        for task in csv_rows(run / "tasks.csv"):
            op = ops_of.get((workloads.get(task["job_id"], ""), int(task["stage"])))
            if op is None or task["status"] != "succeeded" or not task["compute_s"]:
                continue
            compute = float(task["compute_s"]) / dilation
            work.setdefault(op, []).append((float(task["bytes_in"]) / MB, compute, float(task["bytes_out"])))
            overheads.append((float(task["end_s"]) - float(task["start_s"])) / dilation - compute)
        launched: dict[str, float] = {}
        for event in _events(run / "events.jsonl"):
            if event["event"] == "node_launching":
                launched[event["node"]] = event["t"]
            elif event["event"] == "node_up" and event["node"] in launched:
                startups.append((event["t"] - launched.pop(event["node"])) / dilation)
            elif event["event"] == "node_lost" and event.get("detect_s") is not None:
                detections.append(float(event["detect_s"]) / dilation)
    values: dict[str, Any] = {}
    samples: dict[str, Any] = {}
    if overheads:
        values["launch_overhead"] = round(max(0.0, statistics.median(overheads)), 4)
        samples["launch_overhead"] = f"{len(overheads)} attempts"
    if startups:
        values["node_startup"] = round(statistics.median(startups), 4)
        samples["node_startup"] = f"{len(startups)} node starts"
    if detections:
        values["will_delay"] = round(statistics.median(detections), 4)
        samples["will_delay"] = f"{len(detections)} evicted nodes"
    ops: dict[str, dict[str, float]] = {}
    for op, attempts in sorted(work.items()):
        sizes = [mb for mb, _, _ in attempts]
        if sum(sizes) <= 0:
            continue
        fixed, rate = fit_line(sizes, [seconds for _, seconds, _ in attempts])
        out = sum(o for _, _, o in attempts)
        ops[op] = {
            "s_per_mb": round(rate, 4),
            "output_ratio": round(out / (sum(sizes) * MB), 4) if out else _final_ratio(op),
            "fixed_s": round(fixed, 4),
        }
        samples[f"ops.{op}"] = f"{len(attempts)} attempts of {min(sizes):.3g} to {max(sizes):.3g} MB"
    if ops:
        values["ops"] = ops
    return values, samples


def fit_line(sizes: list[float], seconds: list[float]) -> tuple[float, float]:
    """``(fixed, rate)`` with ``seconds ~ fixed + rate x size``: least squares with both >= 0
    (the unconstrained line, else the better of its two edges: through the origin, or a
    constant). Sizes spread less than ``MIN_SIZE_SPREAD``: no constant, the ratio of the sums.
    Both ways the fitted seconds sum to the measured ones (or fall short of them by what a
    negative constant would have taken)."""
    n = len(sizes)
    mean_x, mean_y = sum(sizes) / n, sum(seconds) / n
    sxx = sum((x - mean_x) ** 2 for x in sizes)
    if mean_x <= 0 or (sxx / n) ** 0.5 / mean_x < MIN_SIZE_SPREAD:
        return 0.0, sum(seconds) / sum(sizes)
    rate = sum((x - mean_x) * (y - mean_y) for x, y in zip(sizes, seconds, strict=True)) / sxx
    fixed = mean_y - rate * mean_x
    if fixed >= 0 and rate >= 0:
        return fixed, rate
    through_origin = (
        0.0,
        max(0.0, sum(x * y for x, y in zip(sizes, seconds, strict=True)) / sum(x * x for x in sizes)),
    )
    constant = (max(0.0, mean_y), 0.0)

    def sse(line: tuple[float, float]) -> float:
        return sum((line[0] + line[1] * x - y) ** 2 for x, y in zip(sizes, seconds, strict=True))

    return min(through_origin, constant, key=sse)


def _final_ratio(op: str) -> float:
    """A final op's tasks write their output to the run's sink, not as blocks: tasks.csv has no
    bytes out for them, and the measured default stands."""
    return OP_MODELS[op].output_ratio if op in OP_MODELS else 0.0


def calibrate(
    scenario_path: Path,
    seed_count: int,
    work_dir: Path,
    extra: list[str],
    command: str,
    check: Callable[[Scenario], None] = lambda _: None,
) -> dict[str, Any]:
    """Run the scenario for real into ``work_dir`` (resumable) and return the calibration
    document (``simulation`` and ``measured``); an error when no run succeeded."""
    overrides = [*extra, "backend=local"]
    scenario = load_scenario(scenario_path, overrides)
    cells = grid([], [scenario.seed + i for i in range(seed_count)])
    reused = sum((work_dir / cell.name / "summary.json").exists() for cell in cells)
    before = load_average()
    results = run_sweep(scenario_path, [], seed_count, work_dir, overrides, 1, check)
    after = load_average()
    runs = [work_dir / c.name for c, r in zip(cells, results, strict=True) if r.status == "ok"]
    if not runs:
        raise RuntimeError(f"no calibration run succeeded; see {work_dir}/logs/")
    values, samples = fit(runs, stage_ops(scenario))
    summaries = [json.loads((run / "summary.json").read_text()) for run in runs]
    measured = {
        "command": command,
        "at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node(),
        "cores": os.cpu_count(),
        "load_average_before": before,
        "load_average_after": after,
        "runs_reused": reused,
        "scenario": str(scenario_path),
        "fidelity_mode": summaries[0].get("fidelity_mode", scenario.fidelity.mode),
        "dilation": sorted({float(summary.get("dilation") or 1.0) for summary in summaries}),
        "runs": [str(run) for run in runs],
        "failed_runs": len(results) - len(runs),
        "samples": samples,
    }
    return {"simulation": values, "measured": measured}


def write_calibration(document: dict[str, Any], path: Path) -> None:
    head = (
        "# A calibration of the simulator's execution model (docs/simulation.md), measured by\n"
        f"# {document['measured']['command']}\n"
        "# Use it: simulation: {calibration: FILE} in a scenario, or --set simulation.calibration=FILE\n"
    )
    path.write_text(head + yaml.safe_dump(document, sort_keys=False), encoding="utf-8")


def write_calibration_scenario(path: Path) -> Path:
    path.write_text(yaml.safe_dump(CALIBRATION_SCENARIO, sort_keys=False), encoding="utf-8")
    return path
