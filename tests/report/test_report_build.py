"""testbed report: the numbers in report.md against the fixture's own data."""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from pathlib import Path

import pytest

from testbed.app.report.build import PARTIAL_NOTICE, write_report
from testbed.app.report.errors import UsageError
from testbed.app.report.metrics import compute_metrics
from testbed.app.report.rundir import load_run
from tests.support.recorded_run import DECISIONS, NODE_MEMORY_MB, RUN_END, RecordedRun, crash

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[94] if len(values) > 1 else values[0]


def row(*cells: object) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def relaunches(run: RecordedRun) -> tuple[int, int]:
    logical = {(t["job_id"], t["stage"], t["index"]) for t in run.tasks}
    return len(run.tasks) - len(logical), len(logical)


def alive(node: dict, end: float) -> float:
    return (node["ended_s"] if node["ended_s"] is not None else end) - node["launched_s"]


def test_metrics_match_the_recorded_data(spark_run: RecordedRun) -> None:
    metrics = compute_metrics(load_run(spark_run.path))
    jcts = [j["jct_s"] for j in spark_run.jobs]
    queues = [j["queue_s"] for j in spark_run.jobs]
    assert metrics.jct.mean == pytest.approx(statistics.mean(jcts))
    assert metrics.jct.p50 == pytest.approx(statistics.median(jcts))
    assert metrics.jct.p95 == pytest.approx(p95(jcts))
    assert metrics.jct.max == pytest.approx(max(jcts))
    assert metrics.queue.mean == pytest.approx(statistics.mean(queues))
    sorts = [j["jct_s"] for j in spark_run.jobs if j["workload"] == "sort"]
    assert metrics.jct_by_workload["sort"].p95 == pytest.approx(p95(sorts))
    relaunched, tasks = relaunches(spark_run)
    assert (metrics.relaunched_tasks, metrics.tasks) == (relaunched, tasks) == (2, 8)
    assert metrics.relaunched_ratio == pytest.approx(relaunched / tasks)
    assert metrics.evictions == 1
    assert metrics.data.spill_bytes == sum(t["spill_bytes"] for t in spark_run.tasks)
    assert metrics.makespan_s == pytest.approx(
        max(j["finish_s"] for j in spark_run.jobs) - min(j["submit_s"] for j in spark_run.jobs)
    )


def test_cost_and_memory_utilisation(spark_run: RecordedRun) -> None:
    metrics = compute_metrics(load_run(spark_run.path))
    end = spark_run.end
    expected_cost = sum(alive(n, end) / 3600 * n["price_per_hour"] for n in spark_run.nodes)
    assert metrics.total_cost == pytest.approx(expected_cost)
    transient = next(c for c in metrics.costs if c.node_class == "transient")
    assert transient.node_seconds == pytest.approx(
        sum(alive(n, end) for n in spark_run.nodes if n["node_class"] == "transient")
    )
    allocated = sum(t["memory_mb"] * (t["end_s"] - t["start_s"]) for t in spark_run.tasks)
    capacity = sum(NODE_MEMORY_MB * alive(n, end) for n in spark_run.nodes)
    assert metrics.memory.mean_utilisation == pytest.approx(allocated / capacity)
    assert metrics.memory.peak_utilisation == pytest.approx(
        max(_utilisation_at(spark_run, t["start_s"]) for t in spark_run.tasks)
    )


def _utilisation_at(run: RecordedRun, t: float) -> float:
    used = sum(a["memory_mb"] for a in run.tasks if a["start_s"] <= t < a["end_s"])
    nodes = [n for n in run.nodes if n["launched_s"] <= t < (n["ended_s"] or run.end)]
    return used / (NODE_MEMORY_MB * len(nodes))


def test_report_md_shows_the_numbers(spark_run: RecordedRun) -> None:
    text = write_report(spark_run.path)[0].read_text()
    jcts = [j["jct_s"] for j in spark_run.jobs]
    queues = [j["queue_s"] for j in spark_run.jobs]
    assert (
        row(
            "all",
            3,
            *(
                f"{v:.2f}"
                for v in (
                    statistics.mean(jcts),
                    statistics.median(jcts),
                    p95(jcts),
                    max(jcts),
                    statistics.mean(queues),
                    p95(queues),
                )
            ),
        )
        in text
    )
    for job in spark_run.jobs:
        assert (
            row(
                job["job_id"],
                job["workload"],
                "succeeded",
                *(f"{job[k]:.2f}" for k in ("submit_s", "start_s", "finish_s", "jct_s", "queue_s")),
                job["tasks"],
                job["relaunched_tasks"],
            )
            in text
        )
    relaunched, tasks = relaunches(spark_run)
    assert (
        f"Relaunched tasks: {relaunched} of {tasks} tasks (relaunched ratio {relaunched / tasks:.3f})" in text
    )
    assert PARTIAL_NOTICE not in text


def test_report_md_cost_data_decisions_and_policy_sections(spark_run: RecordedRun) -> None:
    text = write_report(spark_run.path)[0].read_text()
    end = spark_run.end
    total_seconds = sum(alive(n, end) for n in spark_run.nodes)
    total_cost = sum(alive(n, end) / 3600 * n["price_per_hour"] for n in spark_run.nodes)
    assert row("total", 4, f"{total_seconds:.2f}", "", f"{total_cost:.4f}") in text
    spill = sum(t["spill_bytes"] for t in spark_run.tasks)
    assert f"| spill bytes | {spill / 2**20:.2f} MiB |" in text
    assert "| merge passes | bytes_pushed |" in text  # the extra numeric column of jobs.csv
    assert f"| {sum(j['bytes_pushed'] for j in spark_run.jobs) / 2**10:.2f} KiB |" in text
    for kind, count in Counter(kind for _, kind in DECISIONS).items():
        assert row(kind, count) in text
    assert row("mean_short_queue_s", f"{spark_run.summary['mean_short_queue_s']:g}") in text
    assert row("6.00", "t1", "transient", "lifetime", "6.00", "6.00", 1, "976.56 KiB") in text


def test_every_time_says_its_clock_and_a_lifetime_model_reads_as_written(spark_run: RecordedRun) -> None:
    import yaml

    scenario = yaml.safe_load((spark_run.path / "scenario.yaml").read_text())
    scenario["time_scale"] = 60
    scenario["chaos"] = {"transient": {"lifetime": {"weibull": {"shape": 0.6, "scale": "3m"}}}}
    (spark_run.path / "scenario.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    evictions = (spark_run.path / "evictions.csv").read_text().replace(",6.0,1,", ",359.4,1,")
    (spark_run.path / "evictions.csv").write_text(evictions)
    text = write_report(spark_run.path)[0].read_text()
    assert row("transient lifetime model (trace time)", "weibull: {shape: 0.6, scale: 3m}") in text
    assert "{'weibull'" not in text
    assert "| lived (s, emulated) | lifetime drawn (s, trace) |" in text
    assert row("6.00", "t1", "transient", "lifetime", "6.00", "359.40", 1, "976.56 KiB") in text
    units = re.findall(r"\(s\b[^)]*\)", text)
    assert len(units) > 20 and set(units) == {"(s, emulated)", "(s, trace)"}, set(units)


@pytest.mark.parametrize("header", ["new", "old"])
def test_a_dilated_run_converts_its_times_once_and_keeps_the_lifetime_drawn_in_trace_time(
    spark_run: RecordedRun, header: str
) -> None:
    """Dilation 6.67: the eviction at 13.34 wall s reads 2.00 emulated, lived 13.34 - 0 wall
    = 2.00 emulated, and the lifetime drawn, 579.36 trace s, as drawn (it read 86.86: divided
    by the dilation). A run directory from before the columns named their clock reads the same."""
    import yaml

    scenario = yaml.safe_load((spark_run.path / "scenario.yaml").read_text())
    scenario["fidelity"] = {"mode": "faithful", "dilation": 6.67}
    (spark_run.path / "scenario.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    lines = (spark_run.path / "evictions.csv").read_text().splitlines()
    assert lines[0].startswith("t_wall_s,") and ",lifetime_trace_s," in lines[0]
    if header == "old":
        lines[0] = lines[0].replace("t_wall_s", "t_s").replace("lifetime_trace_s", "lifetime_s")
    lines[1] = lines[1].replace("6.0,t1,transient,lifetime,6.0,", "13.34,t1,transient,lifetime,579.36,")
    (spark_run.path / "evictions.csv").write_text("\n".join(lines) + "\n")
    (spark_run.path / "events.jsonl").unlink()  # the tables alone (the journal is read the same way)
    text = write_report(spark_run.path)[0].read_text()
    assert row("2.00", "t1", "transient", "lifetime", "2.00", "579.36", 1, "976.56 KiB") in text


def test_the_lifetime_drawn_of_a_journaled_eviction_stays_in_trace_time(spark_run: RecordedRun) -> None:
    """From events.jsonl (no evictions.csv): the eviction's ``lifetime_s`` is trace seconds."""
    import yaml

    scenario = yaml.safe_load((spark_run.path / "scenario.yaml").read_text())
    scenario["fidelity"] = {"mode": "faithful", "dilation": 2}
    (spark_run.path / "scenario.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    (spark_run.path / "evictions.csv").unlink()
    events = (spark_run.path / "events.jsonl").read_text().splitlines()
    evictions = [i for i, line in enumerate(events) if json.loads(line)["event"] == "eviction"]
    assert len(evictions) == 1
    event = json.loads(events[evictions[0]])
    events[evictions[0]] = json.dumps({**event, "lifetime_s": 579.36})
    (spark_run.path / "events.jsonl").write_text("\n".join(events) + "\n")
    text = write_report(spark_run.path)[0].read_text()
    assert row(f"{event['t'] / 2:.2f}", "t1", "transient", "lifetime") in text
    assert "| 579.36 | 1 | 976.56 KiB |" in text


def test_the_report_counts_evictions_per_zone(spark_run: RecordedRun) -> None:
    import yaml

    scenario = yaml.safe_load((spark_run.path / "scenario.yaml").read_text())
    scenario["cluster"]["transient"]["zones"] = {"z-a": 1, "z-b": 1}
    (spark_run.path / "scenario.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    text = write_report(spark_run.path)[0].read_text()
    assert "Evictions per zone" not in text  # the fixture's node ids are not <class>-<ordinal>
    evictions = (spark_run.path / "evictions.csv").read_text().replace(",t1,", ",transient-1,")
    (spark_run.path / "evictions.csv").write_text(evictions)
    assert "Evictions per zone: z-b 1" in write_report(spark_run.path)[0].read_text()


def test_the_report_shows_the_realism_check(spark_run: RecordedRun) -> None:
    import yaml

    scenario = yaml.safe_load((spark_run.path / "scenario.yaml").read_text())
    scenario["chaos"] = {"transient": {"lifetime": {"uniform": {"a": 0, "b": 240}}}}
    (spark_run.path / "scenario.yaml").write_text(yaml.safe_dump(scenario, sort_keys=False))
    assert "Realism check" not in write_report(spark_run.path)[0].read_text()  # nothing journaled
    drawn = {"t": 0.0, "event": "lifetime_drawn", "node": "t1", "class": "transient", "lifetime_s": 60.0}
    timing = {
        **{"t": 6.0, "event": "eviction_timing", "node": "t1", "class": "transient", "reason": "lifetime"},
        **{"drawn_s": 60.0, "actual_s": 60.002, "promised_s": 0.5, "lead_s": 0.504},
    }
    with (spark_run.path / "events.jsonl").open("a") as events:
        events.write(json.dumps(drawn) + "\n" + json.dumps(timing) + "\n")
    text = write_report(spark_run.path)[0].read_text()
    assert "lead-time error |had - model| p50 4.0 ms" in text  # no intended_s: the lead announced
    assert "| transient | 1 | 0.7500 |" in text


def test_plots_are_written_and_embedded(spark_run: RecordedRun) -> None:
    markdown_path, html_path = write_report(spark_run.path)
    linked = re.findall(r"!\[[^\]]*\]\((plots/[a-z_]+\.png)\)", markdown_path.read_text())
    assert set(linked) == {
        f"plots/{n}.png" for n in ("jct_cdf", "queue_cdf", "nodes_alive", "tasks_gantt", "memory")
    }
    for link in linked:
        assert (spark_run.path / link).read_bytes().startswith(PNG_MAGIC)
    page = html_path.read_text()
    assert page.count('src="data:image/png;base64,') == len(linked)
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page), "external resource"


def test_a_crashed_run_gives_a_partial_report(spark_run: RecordedRun) -> None:
    kept = crash(spark_run, at=10.5)
    run = load_run(spark_run.path)
    assert run.partial
    assert any("1 malformed line" in warning for warning in run.warnings)
    finished = {e["job"]: e for e in kept if e["event"] == "job_finished"}
    submitted = [e for e in kept if e["event"] == "job_submitted"]
    assert list(finished) == ["j1"]

    text = write_report(spark_run.path)[0].read_text()
    assert PARTIAL_NOTICE in text
    unfinished = len(submitted) - len(finished)
    assert f"| jobs (succeeded / failed / unfinished) | 3 ({len(finished)} / 0 / {unfinished}) |" in text
    assert f"| mean JCT (s, emulated) | {finished['j1']['jct_s']:.2f} |" in text
    assert "| j2 | sort | unfinished |" in text
    assert "jobs from events.jsonl" in text
    running = [
        e
        for e in kept
        if e["event"] == "task_started"
        and not any(
            f["event"] == "task_finished" and f["task"] == e["task"] and f["attempt"] == e["attempt"]
            for f in kept
        )
    ]
    assert row("running", len(running)) in text
    assert "merge passes" not in text  # the journal does not carry them: no made-up zeros
    assert (spark_run.path / "plots" / "tasks_gantt.png").is_file()


def test_events_alone_give_the_same_headline_numbers(spark_run: RecordedRun) -> None:
    """A run whose tables were lost is rebuilt from the journal to the same numbers."""
    from_tables = compute_metrics(load_run(spark_run.path))
    for name in ("jobs.csv", "tasks.csv", "nodes.csv", "evictions.csv"):
        (spark_run.path / name).unlink()
    from_events = compute_metrics(load_run(spark_run.path))
    keys = [
        "mean JCT (s, emulated)",
        "p95 JCT (s, emulated)",
        "mean queueing delay (s, emulated)",
        "makespan (s, emulated)",
        "relaunched ratio",
        "evictions",
        "spill bytes",
        "cost",
        "mean memory utilisation (0-1)",
    ]
    tables, events = from_tables.headline(), from_events.headline()
    assert {k: pytest.approx(tables[k]) for k in keys} == {k: events[k] for k in keys}


def test_summary_disagreements_are_reported(spark_run: RecordedRun) -> None:
    summary = dict(spark_run.summary, mean_jct_s=99.0)
    (spark_run.path / "summary.json").write_text(json.dumps(summary))
    text = write_report(spark_run.path)[0].read_text()
    expected = statistics.mean(j["jct_s"] for j in spark_run.jobs)
    assert f"summary.json says mean_jct_s = 99, the tables give {expected:g}" in text


def test_missing_optional_files_are_tolerated(spark_run: RecordedRun) -> None:
    for name in ("scenario.yaml", "decisions.csv", "summary.json"):
        (spark_run.path / name).unlink()
    text = write_report(spark_run.path)[0].read_text()
    assert "## Scheduler decisions" not in text
    assert "## Policy metrics" not in text
    assert "scenario.yaml is missing" in text
    assert f"Record ends at {RUN_END:.2f} s" in text


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp / "nope", "no such run directory"),
        (lambda tmp: tmp, "not a run directory"),
        (lambda tmp: (tmp / "f.txt", (tmp / "f.txt").write_text("x"))[0], "not a directory"),
    ],
)
def test_unusable_run_dirs_raise_a_usage_error(tmp_path: Path, make, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        write_report(make(tmp_path))


def test_data_section_labels_reads_and_adds_no_ratios(spark_run: RecordedRun) -> None:
    """Task bytes_in include the input a map reads, so they are no "shuffle read"; and a
    per-job ratio column of jobs.csv (the master writes relaunched_ratio) has no sum."""
    jobs_csv = spark_run.path / "jobs.csv"
    header, *rows = jobs_csv.read_text().splitlines()
    ratios = [0.5, 0.25, 0.0]
    with_ratios = [f"{job},{ratio}" for job, ratio in zip(rows, ratios, strict=True)]
    jobs_csv.write_text("\n".join([header + ",relaunched_ratio", *with_ratios]) + "\n")
    text = write_report(spark_run.path)[0].read_text()
    assert "| job | read (input + shuffle) | shuffle written | spill bytes |" in text
    data = text[text.index("## Spill and shuffle data") :]
    total = next(line for line in data.splitlines() if line.startswith("| total |"))
    assert total.endswith("| - |"), total  # not 0.75


def test_retries_of_a_tasks_own_failure_are_not_eviction_relaunches(spark_run: RecordedRun) -> None:
    tasks = spark_run.path / "tasks.csv"
    tasks.write_text(tasks.read_text().replace(",failed,MemoryError,", ",failed,oom,"))
    metrics = compute_metrics(load_run(spark_run.path))
    assert (metrics.relaunched_tasks, metrics.error_relaunches) == (1, 1)  # the eviction's, the oom's
    text = write_report(spark_run.path)[0].read_text()
    assert row("relaunched tasks (evictions, lost data)", 1) in text
    assert row("relaunches after task errors", 1) in text
    jobs = spark_run.path / "jobs.csv"  # a master that counts them apart: its numbers stand
    lines = jobs.read_text().splitlines()
    jobs.write_text("\n".join([lines[0] + ",error_relaunches", *(line + ",0" for line in lines[1:])]) + "\n")
    assert compute_metrics(load_run(spark_run.path)).error_relaunches == 0


def test_the_cost_follows_a_moving_price(spark_run: RecordedRun) -> None:
    """The transient price steps from 0.3 to 0.9 at 2 trace seconds; at time scale 2 that is
    1 emulated second: each node pays 0.3 before and 0.9 after."""
    import yaml

    scenario = yaml.safe_load((spark_run.path / "scenario.yaml").read_text())
    scenario["time_scale"] = 2.0
    scenario["cluster"]["transient"]["price"] = {"steps": [[0, 0.3], [2, 0.9]]}
    (spark_run.path / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    summary = json.loads((spark_run.path / "summary.json").read_text())
    summary.pop("time_scale", None)
    (spark_run.path / "summary.json").write_text(json.dumps(summary))
    metrics = compute_metrics(load_run(spark_run.path))
    transient = next(c for c in metrics.costs if c.node_class == "transient")
    end = spark_run.end

    def paid(node: dict) -> float:
        start, stop = node["launched_s"], node["ended_s"] if node["ended_s"] is not None else end
        before = max(0.0, min(stop, 1.0) - start)
        return (0.3 * before + 0.9 * (stop - start - before)) / 3600

    nodes = [n for n in spark_run.nodes if n["node_class"] == "transient"]
    assert transient.cost == pytest.approx(sum(paid(n) for n in nodes))
    assert 0.3 < transient.mean_price < 0.9
    report = write_report(spark_run.path)[0].read_text()
    assert "The price of transient moves" in report
