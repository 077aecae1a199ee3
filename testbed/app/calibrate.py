"""``testbed calibrate``: measure the simulator's execution model on this machine.

It runs a calibration scenario for real (``CALIBRATION_SCENARIO``, or the user's: any
scenario whose jobs use the built-in workloads) over some seeds with ``testbed sweep``'s
runner, then fits, from the runs' tables (``fit``):

- ``ops``: per task op, over every succeeded attempt (tasks.csv; a stage's op from the job's
  plan, ``testbed.workloads.catalog.plan_job``), ``fixed_s`` and ``s_per_mb`` of compute seconds =
  fixed_s + s_per_mb x input MB (``fit_line``: least squares, both >= 0; when the attempts'
  inputs hardly differ in size a constant cannot be told from a rate, and it is the ratio of
  the sums with no constant), and ``output_ratio`` = output bytes over input bytes of the
  attempts that wrote a block (a final attempt's output goes to the sink: PageRank's last
  iterate stage had pulled iterate's ratio down by 1/iterations; an op with no such attempt
  keeps the default). The simulator does not use the ratio of an op whose job's shape sizes
  its output (``SHAPED_RATIOS``; PageRank's on a generated graph, ``master/execution_model.py``
  ``GRAPH_SHAPED``: the file says so). An op that is a job's final stage in one place and not
  in another (``final_split_ops``: mlr's model, PageRank's iterate) is fitted twice: ``<op>``
  from its other stages' attempts, ``<op>.final`` from the final stages' (they write the
  run's output instead of blocks: mlr's last model took 10x the seconds per MB of the
  others), which the simulator uses for a job's final stage. Either way the fitted times
  add up to the measured ones: the total work the model must reproduce. A real attempt's
  compute seconds hold the fetch of its input, which the model adds on its own: the modelled
  fetch of each attempt (``fetch_seconds``) is taken off first;
- ``launch_overhead``: the median of ``end - start - compute_s`` of those attempts; of
  faithful runs with nodes of several sizes, a constant and ``launch_cpu_s``, the agent's
  CPU seconds of it, divided by a node's cores (``launch_values``);
- ``node_startup``: the median of ``node_launching`` -> ``node_up`` (events.jsonl), the
  replacement of the evicted node included; of faithful runs also ``node_startup_cores``, the
  cores of the nodes it was measured on (an agent starts inside its node's CPU quota, so a node
  of other cores starts in proportion: ``SimulationSpec.startup_s``);
- ``will_delay``: the median ``detect_s`` of the nodes lost to an eviction;
- ``copy_send_cpu_s_per_mb``, ``copy_receive_cpu_s_per_mb``, ``serve_cpu_s_per_mb``: the
  agents' CPU seconds per MB of a copy sent and received and of a block served, measured
  after the runs by ``python -m agents.copy_cpu`` (``copy_cpu``: the real data plane between
  two processes, each side's CPU from ``/proc``). Host CPU seconds are a faithful node's
  emulated core-seconds (its quota is its cores over the dilation), so they hold in both modes.

Every time is in the runs' emulated seconds (wall / dilation). The file it writes is a
calibration file (``testbed/scenario/simulation.py``): ``simulation`` (those fields) and ``measured``
(the command, host, cores, load average before and after the runs it made, how many runs it
found already made in ``--runs`` (their load is not known), the runs' fidelity mode and
dilation, runs and samples per value). Its times are emulated seconds of the mode it was
measured in: an unisolated calibration holds the host's contention at its load, a faithful one
a node's own share; a scenario should use the one of its mode.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from testbed.app.sweep.grid import grid
from testbed.app.sweep.options import SERIAL, Executor
from testbed.app.sweep.run import run_sweep
from testbed.journal.tables import measured_rows
from testbed.node.bandwidth import BURST_S, book
from testbed.plan import Dependency
from testbed.scenario.schema import Scenario, load_scenario
from testbed.scenario.simulation import FINAL_OP, OP_MODELS, STREAMED_OPS
from testbed.workloads.catalog import plan_job

MB = 2**20

CALIBRATION_SCENARIO: dict[str, Any] = {
    "name": "calibrate",
    "seed": 1,
    "cluster": {"reserved": 1, "transient": 2},
    "policy": {"scheduler": "fifo", "strategy": "spark"},
    "chaos": {
        "transient": {"lifetime": "none", "replace": True},
        "storms": [{"at": "1s", "evict": {"count": 1, "kind": "transient", "select": "oldest"}}],
    },
    "jobs": [
        {"workload": "wordcount", "size_mb": 8, "maps": 4, "reduces": 2},
        {"workload": "wordcount", "size_mb": 32, "maps": 4, "reduces": 1},
        {"workload": "sort", "size_mb": 8, "maps": 4, "reduces": 2},
        {"workload": "sort", "size_mb": 32, "maps": 4, "reduces": 1},
        {"workload": "pagerank", "nodes": 50_000, "edges": 400_000, "iterations": 3},
        {"workload": "pagerank", "nodes": 20_000, "edges": 100_000, "iterations": 3, "maps": 2},
        {"workload": "mlr", "points": 4000, "features": 1000, "classes": 512, "iterations": 2, "maps": 4},
        {"workload": "mlr", "points": 1000, "features": 1000, "classes": 512, "iterations": 2, "maps": 4},
    ],
}
"""Two jobs of each built-in workload at once on 1 reserved + 2 transient nodes, their splits
and reduce inputs 4x to 16x apart in size (a per-task constant and a per-MB rate need
attempts of several sizes: ``fit_line``; mlr's gradient inputs, split and model, 2x: its
features and classes are scenarios/pado-mlr.yaml's, since an mlr task's seconds per MB grow
with its classes), and one transient node evicted 1 s in for the detection delay and a
replacement's start-up."""

SHAPED_RATIOS = ("mlr.",)
"""Ops whose output over input the job's shape sets, not the op: mlr's gradient (the model over
the split: classes over points per map), aggregate (1 / maps) and model (0.5, 1 in the first
iteration). Calibrate fits their times and keeps their default ratios (measured on
scenarios/pado-mlr.yaml, the shipped mlr scenario)."""

UNUSED_RATIOS = (
    "output_ratio is not used by the simulator for mlr.gradient, mlr.model, mlr.aggregate (the job's "
    "model shape sizes them), nor for the pagerank ops of a generated graph (its nodes, edges and "
    "partitions do: testbed/workloads/pagerank/sizes.py); pagerank's serve a graph read from files"
)
"""The calibration file's note on the ratios its values carry but the simulator does not use."""

BUILT_IN = ("wordcount", "sort", "pagerank", "mlr")
"""The workloads whose ops the simulator's model has (a plugin's tasks have its own model)."""

MIN_SIZE_SPREAD = 0.25
"""The least coefficient of variation of an op's input sizes for a constant to be fitted
beside the rate: below it (splits of one size, as in most scenarios) the line is
ill-conditioned (a fit on one-size splits gave wordcount.map 3.1 s per task and 0 s per MB)."""


def load_average() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def stage_deps(scenario: Scenario) -> dict[tuple[str, int], tuple[Dependency, ...]]:
    """``(workload, stage) -> the stages it reads`` of the scenario's built-in jobs (as
    ``stage_ops``)."""
    deps: dict[tuple[str, int], tuple[Dependency, ...]] = {}
    for job in scenario.jobs:
        if job.workload in BUILT_IN:
            for index, stage in enumerate(plan_job(job, scenario.seed, scenario).stages):
                deps.setdefault((job.workload, index), stage.deps)
    return deps


def nic_bytes_s(scenario: Scenario) -> dict[str, float]:
    """Each node class's (by name) NIC as the execution model has it (bytes per emulated second)."""
    return {name: named.spec.network_mbps * 1e6 / 8 for name, named in scenario.node_classes.items()}


def class_cores(scenario: Scenario) -> dict[str, float]:
    """Each node class's (by name) cores (its CPU quota in a faithful run, in emulated cores)."""
    return {name: named.spec.cores for name, named in scenario.node_classes.items()}


def stage_ops(scenario: Scenario) -> dict[tuple[str, int], str]:
    """``(workload, stage) -> op`` of the scenario's jobs (one plan per workload: a built-in
    workload's stages do not depend on its sizes, but for PageRank's iterations)."""
    ops: dict[tuple[str, int], str] = {}
    for job in scenario.jobs:
        if job.workload in BUILT_IN:
            plan = plan_job(job, scenario.seed, scenario)
            for index, stage in enumerate(plan.stages):
                ops.setdefault((job.workload, index), stage.op)
    return ops


def final_split_ops(scenario: Scenario) -> frozenset[str]:
    """The ops of the scenario's built-in jobs that are a job's final stage somewhere and not
    elsewhere: their final stages' attempts are ``<op>.final`` (``FINAL_OP``), fitted and shown
    apart (an op that is always final, a wordcount or sort reduce, keeps its name)."""
    final: set[str] = set()
    other: set[str] = set()
    for job in scenario.jobs:
        if job.workload in BUILT_IN:
            for stage in plan_job(job, scenario.seed, scenario).stages:
                (final if stage.final else other).add(stage.op)
    return frozenset(final & other)


def final_stages(jobs: list[dict[str, str]], tasks: list[dict[str, str]]) -> dict[str, int]:
    """Each succeeded job's final stage (jobs.csv, tasks.csv rows): the last stage of its tasks
    (a built-in plan's final stage is its last one, which a succeeded job ran). A job that did
    not succeed has none: its attempts count as its ops' other stages'."""
    succeeded = {row["job_id"] for row in jobs if row.get("status") == "succeeded"}
    last: dict[str, int] = {}
    for task in tasks:
        if task["job_id"] in succeeded:
            last[task["job_id"]] = max(last.get(task["job_id"], 0), int(task["stage"]))
    return last


def attempt_op(
    op: str, task: Mapping[str, str], finals: Mapping[str, int], final_split: frozenset[str]
) -> str:
    """The op a tasks.csv row is fitted and shown as: ``<op>.final`` for the job's final stage
    (``finals``: ``final_stages``) of an op in ``final_split`` (``final_split_ops``)."""
    final = op in final_split and int(task["stage"]) == finals.get(task["job_id"])
    return op + FINAL_OP if final else op


def _events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def fetch_seconds(
    tasks: list[dict[str, str]],
    workloads: Mapping[str, str],
    deps_of: Mapping[tuple[str, int], tuple[Dependency, ...]],
    nic: Mapping[str, float],
    dilation: float = 1.0,
    burst: float = 0.0,
) -> dict[tuple[str, str], float]:
    """Per succeeded attempt ``(task_id, attempt)``: the seconds the execution model's links
    give the fetch of its remote input. The attempts are replayed in the order they started
    (emulated seconds: the tables' over ``dilation``), each booking its remote bytes, sender
    after sender, on the sender's ``net-out`` and its own node's ``net-in``, as
    ``master.sim`` books them (``testbed.node.bandwidth.book``, ``burst`` emulated seconds). Its
    input is cut between the nodes that produced it as the succeeded attempts of the stages
    it reads produced it (a shuffle: every parent's output; a narrow dependency: its
    parent's). A real attempt's ``compute_s`` holds its fetch; the model adds a fetch of its
    own to its compute."""
    done = [task for task in tasks if task["status"] == "succeeded"]
    by_stage: dict[tuple[str, int], list[dict[str, str]]] = {}
    for task in done:
        by_stage.setdefault((task["job_id"], int(task["stage"])), []).append(task)
    free: dict[tuple[str, str], float] = {}  # (node, "out" or "in") -> the link's next free time
    seconds = {}
    for task in sorted(done, key=lambda row: float(row["start_s"])):
        produced: dict[str, float] = {}
        classes: dict[str, str] = {}
        for dep in deps_of.get((workloads.get(task["job_id"], ""), int(task["stage"])), ()):
            for parent in by_stage.get((task["job_id"], dep.stage), []):
                if dep.kind == "narrow" and parent["index"] != task["index"]:
                    continue
                node = parent["node_id"]
                produced[node] = produced.get(node, 0.0) + float(parent["bytes_out"] or 0)
                classes[node] = parent["node_class"]
        total = sum(produced.values())
        if total <= 0 or task["node_class"] not in nic:
            continue
        me = task["node_id"]
        start = at = float(task["start_s"]) / dilation
        for sender, nbytes in produced.items():
            if sender == me or not nbytes or classes[sender] not in nic:
                continue
            share = float(task["bytes_in"] or 0) * nbytes / total
            free[(sender, "out")], out_s = book(
                free.get((sender, "out"), 0.0), at, share, nic[classes[sender]], burst
            )
            free[(me, "in")], in_s = book(
                free.get((me, "in"), 0.0), at, share, nic[task["node_class"]], burst
            )
            at += max(out_s, in_s)
        seconds[(task["task_id"], task["attempt"])] = at - start
    return seconds


def fit(
    run_dirs: list[Path],
    ops_of: Mapping[tuple[str, int], str],
    deps_of: Mapping[tuple[str, int], tuple[Dependency, ...]] | None = None,
    nic: Mapping[str, float] | None = None,
    final_split: frozenset[str] = frozenset(),
    cores: Mapping[str, float] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(simulation values, samples)`` from the run directories: what each value was fitted
    from (attempts, nodes) so that a file says how much it rests on. With the stages'
    dependencies and the NICs, each attempt's modelled fetch (``fetch_seconds``) is taken off
    its compute seconds before the op's line is fitted, so that the model, which adds it
    back, does not count it twice. The final stages' attempts of an op in ``final_split``
    (``final_split_ops``) are fitted as ``<op>.final``. With each class's ``cores``, the
    start-ups of faithful runs are given with the cores of their nodes (``node_startup_cores``)."""
    work: dict[str, list[tuple[float, float, float]]] = {}  # op -> [(MB in, compute_s, bytes_out)]
    overheads: list[tuple[float, float | None]] = []  # (seconds, the node's quota in cores or None)
    startups: list[tuple[float, float | None]] = []  # (seconds, the node's quota in cores or None)
    detections: list[float] = []
    bursts: list[float] = []  # the scale model's link burst in each faithful run's emulated seconds
    fetched = [0.0, 0.0]  # modelled fetch seconds taken off, compute seconds measured
    for run in run_dirs:
        summary = json.loads((run / "summary.json").read_text())
        dilation = float(summary.get("dilation") or 1.0)
        faithful = summary.get("fidelity_mode") == "faithful"
        if faithful:
            bursts.append(BURST_S / dilation)
        jobs = measured_rows(run / "jobs.csv")
        workloads = {row["job_id"]: row["workload"] for row in jobs}
        tasks = measured_rows(run / "tasks.csv")
        finals = final_stages(jobs, tasks)
        fetches = fetch_seconds(
            tasks, workloads, deps_of or {}, nic or {}, dilation, bursts[-1] if faithful else 0.0
        )
        for task in tasks:
            op = ops_of.get((workloads.get(task["job_id"], ""), int(task["stage"])))
            if op is None or task["status"] != "succeeded" or not task["compute_s"]:
                continue
            op = attempt_op(op, task, finals, final_split)
            measured = float(task["compute_s"]) / dilation
            fetch = fetches.get((task["task_id"], task["attempt"]), 0.0)
            compute = compute_seconds(op, measured, fetch, task)
            fetched[0] += measured - compute
            fetched[1] += measured
            quota = (cores or {}).get(task.get("node_class", "")) if faithful else None
            overheads.append(((float(task["end_s"]) - float(task["start_s"])) / dilation - measured, quota))
            work.setdefault(op, []).append((float(task["bytes_in"]) / MB, compute, float(task["bytes_out"])))
        launched: dict[str, float] = {}
        for event in _events(run / "events.jsonl"):
            if event["event"] == "node_launching":
                launched[event["node"]] = event["t"]
            elif event["event"] == "node_up" and event["node"] in launched:
                quota = (cores or {}).get(event.get("class", "")) if faithful else None
                startups.append(((event["t"] - launched.pop(event["node"])) / dilation, quota))
            elif event["event"] == "node_lost" and event.get("detect_s") is not None:
                detections.append(float(event["detect_s"]) / dilation)
    values: dict[str, Any] = {}
    samples: dict[str, Any] = {}
    if overheads:
        values.update(launch_values(overheads))
        samples["launch_overhead"] = f"{len(overheads)} attempts"
    if startups:
        values.update(startup_values(startups))
        samples["node_startup"] = f"{len(startups)} node starts"
    if detections:
        values["will_delay"] = round(statistics.median(detections), 4)
        samples["will_delay"] = f"{len(detections)} evicted nodes"
    if bursts:
        values["link_burst"] = round(statistics.median(bursts), 5)
        samples["link_burst"] = (
            f"the scale model's {BURST_S} s of wall burst over the dilation of {len(bursts)} runs"
        )
    if fetched[0] > 0:
        samples["fetch"] = (
            f"{fetched[0]:.3g} s of the {fetched[1]:.3g} s of compute measured are modelled fetches"
        )
    ops: dict[str, dict[str, float]] = {}
    for op, attempts in sorted(work.items()):
        sizes = [mb for mb, _, _ in attempts]
        if sum(sizes) <= 0:
            continue
        fixed, rate = fit_line(sizes, [seconds for _, seconds, _ in attempts])
        written = [(mb, o) for mb, _, o in attempts if o > 0]
        out = sum(o for _, o in written)
        ops[op] = {
            "s_per_mb": round(rate, 4),
            "output_ratio": round(out / (sum(mb for mb, _ in written) * MB), 4)
            if out and not op.startswith(SHAPED_RATIOS)
            else _final_ratio(op),
            "fixed_s": round(fixed, 4),
        }
        samples[f"ops.{op}"] = f"{len(attempts)} attempts of {min(sizes):.3g} to {max(sizes):.3g} MB"
    if ops:
        values["ops"] = ops
        values["fetch_overlap"] = True  # STREAMED_OPS fitted as compute_seconds does
    return values, samples


def compute_seconds(op: str, measured: float, fetch: float, task: Mapping[str, str]) -> float:
    """An attempt's compute seconds: its measured ones (its fetch included) less its modelled
    fetch; of an op in ``STREAMED_OPS``, whose worker sums each frame as it comes, no less than
    the worker's own CPU seconds (``cpu_s``) nor more than the measured (MLR's Spark aggregates,
    0.26 s with 0.25 s of modelled fetch, had left 0.0002 s/MB where their CPU took 0.0024:
    2026-11-28, docs/simulation.md)."""
    if op.removesuffix(FINAL_OP) not in STREAMED_OPS:
        return max(0.0, measured - fetch)
    return min(measured, max(float(task.get("cpu_s") or 0.0), measured - fetch))


def launch_values(overheads: list[tuple[float, float | None]]) -> dict[str, float]:
    """``launch_overhead`` (the median attempt's), or, when every attempt ran on a node under a
    CPU quota and the nodes had several sizes, ``launch_overhead`` + ``launch_cpu_s`` / cores
    fitted through each size's median (``fit_line`` on 1 / cores): a faithful agent launches
    and reports under its node's quota, which it may use whole (2026-11-27, pado-vs-spark at
    dilation 10.67: 0.028 to 0.037 emulated s an attempt on its 1-cpu nodes, 0.010 to 0.015 on
    its 8-cpu node)."""
    by_cores: dict[float | None, list[float]] = {}
    for seconds, quota in overheads:
        by_cores.setdefault(quota, []).append(seconds)
    median = round(max(0.0, statistics.median(seconds for seconds, _ in overheads)), 4)
    sizes = [cores for cores in by_cores if cores is not None]
    if len(sizes) < max(2, len(by_cores)):  # one size, or an attempt on a node of no quota
        return {"launch_overhead": median}
    fixed, rate = fit_line([1 / c for c in sizes], [statistics.median(by_cores[c]) for c in sizes])
    if rate <= 0:
        return {"launch_overhead": median}
    return {"launch_overhead": round(fixed, 4), "launch_cpu_s": round(rate, 4)}


def startup_values(startups: list[tuple[float, float | None]]) -> dict[str, float]:
    """``node_startup`` (the median start), and ``node_startup_cores`` when every start is of a
    node under a CPU quota: each start scaled to the median node's cores first (an agent's
    start-up is CPU work under its node's quota: 2026-11-27, pado-vs-spark at dilation 6.67, its
    1-cpu nodes started in 1.65 to 2.05 emulated s, its 2-cpu node in 0.90 to 1.14)."""
    under_quota = [(seconds, quota) for seconds, quota in startups if quota is not None]
    if len(under_quota) < len(startups):
        return {"node_startup": round(statistics.median(seconds for seconds, _ in startups), 4)}
    reference = statistics.median_high(quota for _, quota in under_quota)  # a node's own cores
    scaled = [seconds * quota / reference for seconds, quota in under_quota]
    return {"node_startup": round(statistics.median(scaled), 4), "node_startup_cores": reference}


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
    """The default ratio: a final op's tasks write their output to the run's sink, not as blocks
    (tasks.csv has no bytes out for them), and a shaped op's ratio is its job's; ``<op>.final``'s
    is its op's (the simulator writes no block of a final stage's output)."""
    default = OP_MODELS.get(op.removesuffix(FINAL_OP))
    return default.output_ratio if default is not None else 0.0


def calibrate(
    scenario_path: Path,
    seed_count: int,
    work_dir: Path,
    extra: list[str],
    command: str,
    check: Callable[[Scenario], None] = lambda _: None,
    executor: Executor = SERIAL,
) -> dict[str, Any]:
    """Run the scenario for real into ``work_dir`` (resumable) and return the calibration
    document (``simulation`` and ``measured``); an error when no run succeeded."""
    overrides = [*extra, "backend=local"]
    scenario = load_scenario(scenario_path, overrides)
    cells = grid([], [scenario.seed + i for i in range(seed_count)])
    reused = sum((work_dir / cell.name / "summary.json").exists() for cell in cells)
    before = load_average()
    results = run_sweep(scenario_path, [], seed_count, work_dir, overrides, 1, check, executor)
    after = load_average()
    runs = [work_dir / c.name for c, r in zip(cells, results, strict=True) if r.status == "ok"]
    if not runs:
        raise RuntimeError(f"no calibration run succeeded; see {work_dir}/logs/")
    values, samples = fit(
        runs,
        stage_ops(scenario),
        stage_deps(scenario),
        nic_bytes_s(scenario),
        final_split=final_split_ops(scenario),
        cores=class_cores(scenario),
    )
    copies = copy_cpu()
    values.update({key: copies[key] for key in COPY_CPU_KEYS})
    samples["copy_cpu"] = f"{copies['copies']} copies and fetches of {copies['mb'] / copies['copies']:.3g} MB"
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


COPY_CPU_KEYS = ("copy_send_cpu_s_per_mb", "copy_receive_cpu_s_per_mb", "serve_cpu_s_per_mb")


def copy_cpu(mb: float = 4.0, repeats: int = 8) -> dict[str, float]:
    """The agents' CPU seconds per MB of a copy and a fetch served (``agents.copy_cpu``, run as
    its own process: the real data plane, which this package does not import)."""
    done = subprocess.run(
        [sys.executable, "-m", "agents.copy_cpu", "--mb", str(mb), "--repeats", str(repeats)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_calibration(document: dict[str, Any], path: Path) -> None:
    head = (
        "# A calibration of the simulator's execution model (docs/simulation.md), measured by\n"
        f"# {document['measured']['command']}\n"
        "# Use it: simulation: {calibration: FILE} in a scenario, or --set simulation.calibration=FILE\n"
        f"# {UNUSED_RATIOS}\n"
    )
    path.write_text(head + yaml.safe_dump(document, sort_keys=False), encoding="utf-8")


def write_calibration_scenario(path: Path) -> Path:
    path.write_text(yaml.safe_dump(CALIBRATION_SCENARIO, sort_keys=False), encoding="utf-8")
    return path
