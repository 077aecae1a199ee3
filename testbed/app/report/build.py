"""``testbed report RUN_DIR``: report.md, a self-contained report.html and plots/*.png."""

from __future__ import annotations

from pathlib import Path

import yaml

from testbed.app.report import plots
from testbed.app.report.document import (
    Block,
    Bullets,
    Callout,
    Heading,
    Image,
    Paragraph,
    Table,
    money,
    number,
    percent,
    ratio,
    seconds,
    size,
    to_html,
    to_markdown,
)
from testbed.app.report.errors import UsageError
from testbed.app.report.evictions_section import evictions_section
from testbed.app.report.fidelity_section import fidelity_section
from testbed.app.report.gantt import MAX_LANES
from testbed.app.report.metrics import (
    DataVolumes,
    Elasticity,
    RunMetrics,
    Stats,
    compute_metrics,
    elastic_measured,
    is_completed,
    summary_disagreements,
)
from testbed.app.report.resume_section import resume_notice
from testbed.app.report.rundir import RunData, load_run

PARTIAL_NOTICE = (
    "Partial run: there is no summary.json (the run crashed, was interrupted or is still "
    "going). Everything below is computed from what was recorded."
)


def write_report(run_dir: Path) -> tuple[Path, Path]:
    """Write report.md, report.html and plots/*.png into ``run_dir``; return (md, html)."""
    run = load_run(run_dir)
    blocks = report_blocks(run, compute_metrics(run))
    markdown_path, html_path = run.path / "report.md", run.path / "report.html"
    try:
        (run.path / "plots").mkdir(exist_ok=True)
        for block in blocks:
            if isinstance(block, Image):
                (run.path / block.relative_path).write_bytes(block.png)
                if block.svg is not None:
                    (run.path / block.svg_path).write_bytes(block.svg)
        markdown_path.write_text(to_markdown(blocks), encoding="utf-8")
        html_path.write_text(to_html(blocks, f"Run report: {run.name}"), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{run_dir}: cannot write the report: {exc.strerror or exc}") from None
    return markdown_path, html_path


def report_blocks(run: RunData, metrics: RunMetrics) -> list[Block]:
    sections = (
        _title, _scenario, _summary, _jct, _cluster, _tasks, _data, _cost, _memory,
        _decisions, _elasticity, _policy, fidelity_section, _notes,
    )  # fmt: skip
    return [block for section in sections for block in section(run, metrics)]


def _image(name: str, title: str, plot: plots.Plot | None) -> list[Block]:
    return [] if plot is None else [Image(name, title, plot.png, plot.svg)]


# --------------------------------------------------------------------- sections


def _title(run: RunData, metrics: RunMetrics) -> list[Block]:
    blocks: list[Block] = [Heading(f"Run report: {run.name}", 1)]
    if run.partial:
        blocks.append(Callout(PARTIAL_NOTICE))
    blocks += resume_notice(run)
    blocks.append(
        Paragraph(
            f"Run directory: {run.path}. Status: {run.status}. Record ends at {seconds(run.end_s)} s"
            + (
                f" (emulated; {seconds(run.end_s * run.dilation)} s wall)."
                if run.dilation != 1.0
                else " (wall)."
            )
        )
    )
    if run.dilation != 1.0:
        blocks.append(
            Paragraph(
                f"Every time in this report is in emulated seconds: wall seconds divided by the run's "
                f"time dilation, {run.dilation:g} (docs/fidelity.md). The run's files keep wall seconds."
            )
        )
    else:
        blocks.append(
            Paragraph(
                "Times marked (s, emulated) are seconds since the run started on the emulated "
                "cluster's clock, here the wall clock (time dilation 1); (s, trace) is the "
                "scenario's clock (emulated x time scale)."
            )
        )
    return blocks


def _fidelity_setting(run: RunData) -> str:
    fidelity = run.scenario.get("fidelity")
    mode = fidelity.get("mode", "unisolated") if isinstance(fidelity, dict) else "unisolated"
    return f"{mode}, dilation {run.dilation:g}"


def _scenario(run: RunData, metrics: RunMetrics) -> list[Block]:
    policy = run.policy
    rows = [
        ["name", run.name],
        ["seed", str(run.seed if run.seed is not None else "-")],
        ["time scale", f"{run.time_scale:g} (trace seconds per emulated second)"],
        ["fidelity", _fidelity_setting(run)],
        [
            "scheduler / strategy / autoscaler",
            " / ".join(run.policy_label(axis) for axis in ("scheduler", "strategy", "autoscaler")),
        ],
    ]
    if policy.options:
        rows.append(["policy options", ", ".join(f"{k}={v}" for k, v in policy.options.items())])
    if "cluster" not in run.scenario:
        rows.append(["cluster", "not recorded: node memory and prices are the schema's defaults"])
    for node_class, (kind, spec) in run.node_classes.items():
        rows.append(
            [
                f"{node_class} nodes" if kind == node_class else f"{node_class} nodes ({kind})",
                f"{spec.count} x {spec.slots} slots, {spec.memory_mb} MB, price {spec.price_per_hour:g}/h",
            ]
        )
    rows += _scenario_jobs_and_chaos(run)
    return [Heading("Scenario"), Table(["setting", "value"], rows)]


def _scenario_jobs_and_chaos(run: RunData) -> list[list[str]]:
    specs = run.scenario.get("jobs")
    rows = []
    if isinstance(specs, list):
        workloads = sorted({str(s.get("workload", "?")) for s in specs if isinstance(s, dict)})
        workloads = [run.workload_label(workload) for workload in workloads]
        rows.append(["job entries", f"{len(specs)} ({', '.join(workloads)})"])
    chaos = run.scenario.get("chaos")
    if isinstance(chaos, dict):
        transient = chaos.get("transient") or {}
        lifetime = transient.get("lifetime", "none") if isinstance(transient, dict) else "none"
        rows.append(["transient lifetime model (trace time)", as_written(lifetime)])
        rows.append(["eviction storms", str(len(chaos.get("storms") or []))])
    return rows


def _summary(run: RunData, metrics: RunMetrics) -> list[Block]:
    m = metrics
    rows = [
        [
            "jobs (succeeded / failed / unfinished)",
            f"{m.jobs} ({m.succeeded} / {m.failed} / {m.unfinished})",
        ],
        ["mean JCT (s, emulated)", seconds(m.jct.mean)],
        ["p50 JCT (s, emulated)", seconds(m.jct.p50)],
        ["p95 JCT (s, emulated)", seconds(m.jct.p95)],
        ["max JCT (s, emulated)", seconds(m.jct.max)],
        ["mean queueing delay (s, emulated)", seconds(m.queue.mean)],
        ["makespan (s, emulated)", seconds(m.makespan_s)],
        ["tasks / attempts", f"{m.tasks} / {m.attempts}"],
        ["relaunched tasks (evictions, lost data)", str(m.relaunched_tasks)],
        ["relaunched ratio", ratio(m.relaunched_ratio)],
        ["relaunches after task errors", str(m.error_relaunches)],
        [
            "failed attempts by cause",
            ", ".join(f"{cause} {count}" for cause, count in m.failures_by_cause.items()) or "none",
        ],
        ["evictions", str(m.evictions)],
        ["spill bytes", size(m.data.spill_bytes)],
        [
            "bytes read (input + shuffle) / shuffle written",
            f"{size(m.data.bytes_in)} / {size(m.data.bytes_out)}",
        ],
        ["cost", money(m.total_cost)],
        [
            "mean / peak memory utilisation",
            f"{percent(m.memory.mean_utilisation)} / {percent(m.memory.peak_utilisation)}",
        ],
    ]
    return [Heading("Summary"), Table(["metric", "value"], rows)]


def _stats_cells(stats: Stats) -> list[str]:
    return [str(stats.count), *map(seconds, (stats.mean, stats.p50, stats.p95, stats.max))]


def _jct(run: RunData, metrics: RunMetrics) -> list[Block]:
    headers = [
        "workload",
        "jobs",
        "mean JCT (s, emulated)",
        "p50 JCT (s, emulated)",
        "p95 JCT (s, emulated)",
        "max JCT (s, emulated)",
        "mean queue (s, emulated)",
        "p95 queue (s, emulated)",
    ]
    rows = []
    for workload, stats in [*metrics.jct_by_workload.items(), ("all", metrics.jct)]:
        queue = metrics.queue if workload == "all" else metrics.queue_by_workload.get(workload)
        rows.append(
            [
                workload,
                *_stats_cells(stats),
                seconds(queue.mean if queue else None),
                seconds(queue.p95 if queue else None),
            ]
        )
    completed = [j for j in run.jobs if is_completed(j)]
    jct_series = {"all": [j.jct_s for j in completed if j.jct_s is not None]}
    queue_series = {"all": [j.queue_s for j in run.jobs if j.queue_s is not None]}
    if len(metrics.jct_by_workload) > 1:
        for workload in metrics.jct_by_workload:
            jct_series[workload] = [
                j.jct_s for j in completed if j.workload == workload and j.jct_s is not None
            ]
            queue_series[workload] = [
                j.queue_s for j in run.jobs if j.workload == workload and j.queue_s is not None
            ]
    return [
        Heading("Job completion times"),
        Paragraph(
            "JCT = finish of the job's last task - submission; queueing delay = start "
            "of its first task - submission. Statistics cover the jobs that finished "
            "without failing."
        ),
        Table(headers, rows),
        *_image(
            "jct_cdf",
            "CDF of job completion times",
            plots.cdf(jct_series, "JCT (s, emulated)", "Job completion time CDF"),
        ),
        *_image(
            "queue_cdf",
            "CDF of queueing delays",
            plots.cdf(queue_series, "queueing delay (s, emulated)", "Queueing delay CDF"),
        ),
        Heading("Jobs", 3),
        Table(
            [
                "job",
                "workload",
                "status",
                "submit (s, emulated)",
                "start (s, emulated)",
                "finish (s, emulated)",
                "JCT (s, emulated)",
                "queue (s, emulated)",
                "tasks",
                "relaunched",
                "map phase (s, emulated)",
                "reduce phase (s, emulated)",
            ],
            [
                [
                    j.job_id,
                    j.workload,
                    j.status,
                    seconds(j.submit_s),
                    seconds(j.start_s),
                    seconds(j.finish_s),
                    seconds(j.jct_s),
                    seconds(j.queue_s),
                    number(j.tasks),
                    number(j.relaunched_tasks),
                    seconds(j.map_phase_s),
                    seconds(j.reduce_phase_s),
                ]
                for j in run.jobs
            ],
        ),
    ]


def _cluster(run: RunData, metrics: RunMetrics) -> list[Block]:
    blocks: list[Block] = [
        Heading("Cluster timeline"),
        *_image(
            "nodes_alive",
            "Nodes alive per class; red crosses mark evictions",
            plots.nodes_timeline(metrics.nodes_alive, run.evictions),
        ),
    ]
    if run.nodes:
        blocks.append(
            Table(
                [
                    "node",
                    "class",
                    "launched (s, emulated)",
                    "ended (s, emulated)",
                    "end reason",
                    "alive (s, emulated)",
                ],
                [
                    [
                        n.node_id,
                        n.node_class,
                        seconds(n.launched_s),
                        seconds(n.ended_s),
                        n.end_reason or "-",
                        seconds((n.ended_s if n.ended_s is not None else run.end_s) - n.launched_s),
                    ]
                    for n in run.nodes
                ],
            )
        )
    return [*blocks, *evictions_section(run)]


def as_written(value: object) -> str:
    """A scenario value as YAML would write it inline (``weibull: {shape: 0.6, scale: 3m}``)."""
    if isinstance(value, str | int | float):
        return str(value)
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=10**6).strip()
    return text[1:-1] if isinstance(value, dict) and text.startswith("{") else text


def _tasks(run: RunData, metrics: RunMetrics) -> list[Block]:
    m = metrics
    return [
        Heading("Tasks"),
        Paragraph(
            f"Relaunched tasks: {m.relaunched_tasks} of {m.tasks} tasks "
            f"(relaunched ratio {ratio(m.relaunched_ratio)}), caused by evictions or lost data; "
            f"{m.error_relaunches} more relaunches retried a task's own failure (an error, out "
            f"of memory, a full disk); {m.attempts} attempts recorded."
        ),
        *_image(
            "tasks_gantt",
            "Task attempts per node (r = reserved, t = transient), one lane per slot, coloured "
            "by job; hatched red: failed, killed or lost attempts (runs with more than "
            f"{MAX_LANES} slots: busy slots per group of nodes instead)",
            plots.gantt(run),
        ),
        Table(
            ["attempt status", "attempts"],
            [[status, str(count)] for status, count in sorted(m.attempts_by_status.items())],
        ),
    ]


def _data(run: RunData, metrics: RunMetrics) -> list[Block]:
    extra = list(dict.fromkeys(key for job in run.jobs for key in job.extra))
    jobs = {j.job_id: j for j in run.jobs}
    # the journal carries bytes but not spill counts or merge passes
    counts = run.sources.get("tasks") == "tasks.csv"
    headers = [
        "job",
        "read (input + shuffle)",
        "shuffle written",
        "spill bytes",
        *(["spills", "merge passes"] if counts else []),
        *extra,
    ]
    rows = []
    for job_id in dict.fromkeys([*jobs, *metrics.data_by_job]):
        volumes = metrics.data_by_job.get(job_id)
        values = jobs[job_id].extra if job_id in jobs else {}
        rows.append(
            [
                job_id,
                *_volume_cells(volumes, counts),
                *(_extra_cell(key, values.get(key)) for key in extra),
            ]
        )
    rows.append(
        [
            "total",
            *_volume_cells(metrics.data, counts),
            *(_extra_total(key, run) for key in extra),
        ]
    )
    return [
        Heading("Spill and shuffle data"),
        Paragraph(
            "Summed over every task attempt that reported its metrics: failed ones too, but an "
            "attempt lost with its node reports none."
        ),
        Table(headers, rows),
    ]


def _volume_cells(volumes: DataVolumes | None, counts: bool) -> list[str]:
    if volumes is None:
        return ["-"] * (5 if counts else 3)
    cells = [size(volumes.bytes_in), size(volumes.bytes_out), size(volumes.spill_bytes)]
    return cells + ([number(volumes.spills), number(volumes.merge_passes)] if counts else [])


def _extra_cell(key: str, value: float | None) -> str:
    return size(value) if "bytes" in key else number(value)


def _extra_total(key: str, run: RunData) -> str:
    """The column's sum over jobs; a ratio (``relaunched_ratio``, ``input_local_fraction``) does
    not add up."""
    if "ratio" in key or "fraction" in key:
        return "-"
    return _extra_cell(key, sum(j.extra.get(key, 0.0) for j in run.jobs))


def _cost(run: RunData, metrics: RunMetrics) -> list[Block]:
    scaled = run.time_scale != 1.0
    headers = ["class", "nodes", "node-seconds (emulated)", "price per hour", "cost"]
    if scaled:
        headers.append("cost at trace time")
    rows = []
    for item in metrics.costs:
        row = [
            item.node_class,
            str(item.nodes),
            seconds(item.node_seconds),
            number(item.mean_price),
            money(item.cost),
        ]
        rows.append(row + ([money(_scale(item.cost, run.time_scale))] if scaled else []))
    total = metrics.total_cost
    rows.append(
        [
            "total",
            str(sum(c.nodes for c in metrics.costs)),
            seconds(sum(c.node_seconds for c in metrics.costs)),
            "",
            money(total),
        ]
        + ([money(_scale(total, run.time_scale))] if scaled else [])
    )
    text = (
        "Node-seconds = sum over a class's nodes of (end, or the end of the record, - "
        "launch), in emulated time (wall / dilation); cost = node-seconds / 3600 x price per hour."
    )
    moving = [c.node_class for c in metrics.costs if c.moving_cost is not None]
    if moving:
        text += (
            f' The price of {", ".join(moving)} moves (docs/chaos.md, "Price over time"): its cost is the '
            "integral of the price over the trace time each node was up, / 3600 / time scale, and its "
            "price per hour the mean paid (cost / node-hours)."
        )
    if scaled:
        text += (
            f" At time scale {run.time_scale:g} an emulated second stands for "
            f"{run.time_scale:g} trace seconds, hence the trace-time column."
        )
    return [Heading("Cost"), Paragraph(text), Table(headers, rows)]


def _scale(value: float | None, factor: float) -> float | None:
    return None if value is None else value * factor


def _memory(run: RunData, metrics: RunMetrics) -> list[Block]:
    usage = metrics.memory
    return [
        Heading("Memory utilisation"),
        Paragraph(
            "Utilisation(t) = memory allocated to running task attempts / memory of the "
            f"nodes alive at t. Mean (time-weighted): {percent(usage.mean_utilisation)}; "
            f"peak: {percent(usage.peak_utilisation)}."
        ),
        *_image("memory", "Memory allocated to tasks and memory utilisation", plots.memory(usage)),
    ]


def _decisions(run: RunData, metrics: RunMetrics) -> list[Block]:
    counts, by_job = metrics.decision_counts, metrics.decisions_by_job
    if counts is None or by_job is None:
        return []
    kinds = list(counts)
    return [
        Heading("Scheduler decisions"),
        Table(["decision", "count"], [[kind, str(count)] for kind, count in counts.items()]),
        Table(
            ["job", *kinds],
            [[job, *(str(per_job.get(kind, 0)) for kind in kinds)] for job, per_job in by_job.items()],
        ),
    ]


def _elasticity(run: RunData, metrics: RunMetrics) -> list[Block]:
    by_job, total = metrics.elasticity_by_job, metrics.elasticity
    if by_job is None or total is None:
        return []
    workloads = {j.job_id: j.workload for j in run.jobs}
    rows = [[job, workloads.get(job, "-"), *_elasticity_cells(stats)] for job, stats in by_job.items()]
    rows.append(["all", "", *_elasticity_cells(total)])
    elastic = sorted((t for t in elastic_measured(run.tasks) if t.elastic), key=lambda t: t.start_s)
    blocks: list[Block] = [
        Heading("Memory elasticity"),
        Paragraph(
            "Succeeded task attempts placed by a memory-aware scheduler. Allocation ratio = "
            "allocated / ideal memory (elastic attempts run below 1 and spill). Model error = "
            "|predicted - measured runtime|, measured = end - start as the master saw it; "
            "the prediction is the profile's ideal duration times its penalty at the ratio."
        ),
        Table(
            [
                "job",
                "workload",
                "attempts",
                "elastic",
                "mean ratio",
                "min ratio",
                "elastic spill",
                "model error elastic (s, emulated)",
                "model error regular (s, emulated)",
            ],
            rows,
        ),
    ]
    if elastic:
        blocks += [
            Heading("Elastic task attempts", 3),
            Table(
                [
                    *("task", "node", "memory (MB)", "ideal (MB)", "ratio"),
                    *("predicted (s, emulated)", "measured (s, emulated)", "spill"),
                ],
                [
                    [
                        t.task_id,
                        t.node_id,
                        number(t.memory_mb),
                        number(t.ideal_memory_mb),
                        ratio(t.allocation_ratio),
                        seconds(t.predicted_s),
                        seconds((t.end_s or t.start_s) - t.start_s),
                        size(t.spill_bytes),
                    ]
                    for t in elastic
                ],
            ),
        ]
    return blocks


def _elasticity_cells(stats: Elasticity) -> list[str]:
    return [
        str(stats.attempts),
        str(stats.elastic),
        ratio(stats.mean_ratio),
        ratio(stats.min_ratio),
        size(stats.elastic_spill_bytes),
        seconds(stats.elastic_error_s),
        seconds(stats.regular_error_s),
    ]


def _policy(run: RunData, metrics: RunMetrics) -> list[Block]:
    if not metrics.policy_metrics:
        return []
    return [
        Heading("Policy metrics"),
        Paragraph("Keys of summary.json specific to the policies of this run."),
        Table(
            ["metric", "value"],
            [[key, number(value)] for key, value in metrics.policy_metrics.items()],
        ),
    ]


def _notes(run: RunData, metrics: RunMetrics) -> list[Block]:
    items = [f"{table} from {source}" for table, source in run.sources.items()]
    items += run.warnings
    items += summary_disagreements(run.summary, metrics)
    return [Heading("Data sources and notes"), Bullets(items)]
