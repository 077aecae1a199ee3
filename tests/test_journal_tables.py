"""The journal's tables are a function of its events: every row is made from one event
(``testbed.journal.tables.ROWS_FROM_EVENTS``), by the writer as the run goes and by
``rebuild_tables`` from ``events.jsonl`` alone, byte for byte the same."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from master.shell.journal_file import Journal, _encode
from testbed.journal.schema import EVENTS
from testbed.journal.tables import (
    DISK_COLUMNS,
    ROWS_FROM_EVENTS,
    SPECULATION_COUNTERS,
    TABLES,
    clock_named,
    disk_column,
    emulated_row,
    read_table,
    row_of,
)
from tests.support.runs import assert_tables_from_events
from tests.support.sim import SCENARIO, simulate

TASK = {"task": "j000.s1.t2", "job": "j000", "stage": 1, "node": "transient-3", "attempt": 1}


def test_every_table_is_made_by_declared_event_kinds() -> None:
    assert set(ROWS_FROM_EVENTS) <= set(EVENTS)
    assert {table for table, _ in ROWS_FROM_EVENTS.values()} == set(TABLES)


def _row(event: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    derived = row_of(event)
    assert derived is not None
    table, row = derived
    return table, {name: value for name, value in row.items() if value is not None}


def test_a_task_row_has_its_metrics_only_when_its_node_reported_them() -> None:
    ended = {
        "t": 9.5,
        "event": "task_finished",
        **TASK,
        "index": 2,
        "class": "transient",
        "status": "lost",
        "failure": "node_lost",
        "memory_mb": 64,
        "elastic": 0,
        "ideal_memory_mb": 64,
        "predicted_s": None,
        "start_s": 4.25,
    }
    assert _row(ended) == (
        "tasks",
        {
            "task_id": "j000.s1.t2",
            "job_id": "j000",
            "stage": 1,
            "index": 2,
            "attempt": 1,
            "node_id": "transient-3",
            "node_class": "transient",
            "memory_mb": 64,
            "elastic": 0,
            "ideal_memory_mb": 64,
            "start_s": 4.25,
            "end_s": 9.5,
            "status": "lost",
            "failure": "node_lost",
        },
    )
    reported = {**ended, "status": "succeeded", "failure": None, "bytes_in": 10, "cpu_s": 0.5}
    assert _row(reported)[1] == {
        **{name: value for name, value in _row(ended)[1].items() if name != "failure"},
        "status": "succeeded",
        "bytes_in": 10,
        "cpu_s": 0.5,
    }
    reads = {"local": 7, "remote": {"transient-1": 5, "transient-2": 4}, "source": 3}
    read_row = _row({**reported, "input_reads": reads})[1]
    counted = {"input_local_bytes": 7, "input_remote_bytes": 9, "input_source_bytes": 3}
    assert read_row == {**_row(reported)[1], **counted}  # remote holders summed
    crashed = {"t": 30.0, "event": "task_finished", **TASK, "status": "lost", "failure": "master_crashed"}
    assert _row({**crashed, "end_s": 20.0})[1]["end_s"] == 20.0  # it ended at the crash, not at t


def test_a_job_row_derives_its_queue_time_and_relaunch_ratio() -> None:
    counters = {"error_relaunches": 0, "bytes_recomputed": 5, "map_phase_s": 1.5, "reduce_phase_s": None}
    finished = {
        "t": 12.0,
        "event": "job_finished",
        "job": "j001",
        "status": "succeeded",
        "jct_s": 10.0,
        "error": None,
        "name": "sort-1",
        "workload": "sort",
        "submit_s": 2.0,
        "start_s": 2.5,
        "tasks": 8,
        "relaunched_tasks": 2,
        **counters,
    }
    table, row = _row(finished)
    assert table == "jobs"
    assert row == {
        "job_id": "j001",
        "name": "sort-1",
        "workload": "sort",
        "submit_s": 2.0,
        "start_s": 2.5,
        "finish_s": 12.0,
        "jct_s": 10.0,
        "queue_s": 0.5,
        "status": "succeeded",
        "tasks": 8,
        "relaunched_tasks": 2,
        "relaunched_ratio": 0.25,
        "error_relaunches": 0,
        "bytes_recomputed": 5,
        "map_phase_s": 1.5,
    }
    unplanned = {"t": 60.0, "event": "job_finished", "job": "j002", "status": "failed", "jct_s": None}
    unplanned |= {"error": "not submitted: timeout", "name": "wordcount-2", "workload": "wordcount"}
    assert _row(unplanned)[1] == {
        "job_id": "j002",
        "name": "wordcount-2",
        "workload": "wordcount",
        "status": "failed",
        "error": "not submitted: timeout",
    }


@pytest.mark.parametrize(
    ("kind", "fields", "ended_s", "reason"),
    [
        ("node_start_failed", {}, 7.0, "start_failed"),
        ("node_lost", {"reason": "evicted", "detect_s": 0.1, "ended_s": 6.9}, 6.9, "evicted"),
        ("node_ended", {"reason": "run_end"}, 7.0, "run_end"),
    ],
)
def test_a_node_row_is_made_by_each_way_a_node_ends(
    kind: str, fields: dict[str, Any], ended_s: float, reason: str
) -> None:
    node = {"node": "transient-1", "class": "transient", "launched_s": 1.0, "price_per_hour": 0.03}
    assert _row({"t": 7.0, "event": kind, **node, **fields}) == (
        "nodes",
        {
            "node_id": "transient-1",
            "node_class": "transient",
            "launched_s": 1.0,
            "ended_s": ended_s,
            "end_reason": reason,
            "price_per_hour": 0.03,
        },
    )


def test_a_decision_row_keeps_its_columns_of_the_detail_and_all_of_it_as_json() -> None:
    decision = {"job": "j000", "task": "j000.s0.t0", "decision": "elastic", "node": "transient-0"}
    detail = {"memory_mb": 16.0, "ideal_memory_mb": 32.0, "penalty": 1.5}
    assert _row({"t": 3.0, "event": "decision", **decision, "detail": detail}) == (
        "decisions",
        {
            "t_s": 3.0,
            "job_id": "j000",
            "task_id": "j000.s0.t0",
            "decision": "elastic",
            "node_id": "transient-0",
            "memory_mb": 16.0,
            "ideal_memory_mb": 32.0,
            "detail": '{"memory_mb":16.0,"ideal_memory_mb":32.0,"penalty":1.5}',
        },
    )


def test_a_resumed_journal_rebuilds_as_one_table(tmp_path: Path) -> None:
    """A resumed run appends to its tables (one header); rebuilding gives the same file."""
    for start in (0.0, 100.0):
        journal = Journal(tmp_path, clock=lambda start=start: start + 1 / 3)
        journal.t0 = 0.0
        journal.event("node_ended", node="reserved-0", **{"class": "reserved"}, reason="run_end")
        journal.close()
    with open(tmp_path / "nodes.csv", newline="") as handle:
        assert [row["ended_wall_s"] for row in csv.DictReader(handle)] == ["0.3333", "100.3333"]
    assert_tables_from_events(tmp_path)


OLDER_JOBS = [column for column in TABLES["jobs"] if column not in SPECULATION_COUNTERS]
"""jobs.csv's header before the speculation columns and before the columns named their clock."""


def test_a_resumed_older_run_appends_under_the_header_it_finds(tmp_path: Path) -> None:
    """A run directory of an older testbed, resumed: its new rows go under the header its file
    has (not today's three more columns, which read back shifted or under no name)."""
    older = ",".join(OLDER_JOBS) + "\n" + "j000,sort-0,sort,0.0,0.5,4.0,4.0,0.5,succeeded,2" + ",0" * 9 + "\n"
    (tmp_path / "jobs.csv").write_text(older)
    journal = Journal(tmp_path, clock=lambda: 12.0)
    journal.t0 = 0.0
    journal.event(
        "job_finished",
        job="j001",
        status="succeeded",
        jct_s=10.0,
        error=None,
        name="sort-1",
        workload="sort",
        submit_s=2.0,
        start_s=2.5,
        tasks=8,
        relaunched_tasks=2,
        wasted_slot_s=1.5,
    )
    journal.close()
    lines = (tmp_path / "jobs.csv").read_text().splitlines()
    assert lines[0] == ",".join(OLDER_JOBS) and len(lines) == 3
    rows = read_table(tmp_path / "jobs.csv", "jobs")
    assert [(r["job_id"], r["finish_wall_s"], r["jct_wall_s"], r["tasks"]) for r in rows] == [
        ("j000", "4.0", "4.0", "2"),
        ("j001", "12.0", "10.0", "8"),
    ]
    assert all(set(r) == {disk_column("jobs", c) for c in OLDER_JOBS} for r in rows)


def test_a_summary_of_an_older_run_reads_its_cpu_seconds_under_their_name() -> None:
    """Before the round times named their clock, a measured round's CPU seconds were
    ``solver_time_*_s``; read today, they are ``solver_time_*_cpu_s`` (a model's stay)."""
    older = {"solver_time_p50_s": 0.002, "solver_time_p99_s": 0.01, "solver_time_source": "measured_cpu"}
    assert clock_named(older) == {
        "solver_time_p50_cpu_s": 0.002,
        "solver_time_p99_cpu_s": 0.01,
        "solver_time_p50_s": None,
        "solver_time_p99_s": None,
        "solver_time_source": "measured_cpu",
    }
    modelled = {**older, "solver_time_source": "model"}
    assert clock_named(modelled) == modelled
    today = {**clock_named(older), "mean_jct_s": 3.0}
    assert clock_named(today) == today


def test_every_time_column_names_its_clock() -> None:
    """On disk a time is ``_wall_s`` (the journal's clock) or ``_trace_s`` (a drawn lifetime);
    a task's CPU seconds (``cpu_s``) are no clock's."""
    times = {column for header in DISK_COLUMNS.values() for column in header if column.endswith("_s")}
    assert times and all(c.endswith(("_wall_s", "_trace_s")) for c in times - {"cpu_s"})
    assert [c for c in times if c.endswith("_trace_s")] == ["lifetime_trace_s"]
    assert DISK_COLUMNS["jobs"][3:8] == (
        "submit_wall_s",
        "start_wall_s",
        "finish_wall_s",
        "jct_wall_s",
        "queue_wall_s",
    )
    assert DISK_COLUMNS["evictions"][0] == "t_wall_s"
    assert [len(DISK_COLUMNS[t]) for t in TABLES] == [len(TABLES[t]) for t in TABLES]


OLD_HEADER = "t_s,node_id,node_class,reason,lifetime_s,tasks_running,bytes_lost\n"
OLD_EVICTIONS = OLD_HEADER + "13.0,t1,transient,lifetime,579.36,1,0\n"


@pytest.mark.parametrize("header", ["old", "new"])
def test_a_table_reads_back_under_its_clocks_names_old_or_new(tmp_path: Path, header: str) -> None:
    """A run directory from before the columns named their clock reads as a new one; a dilated
    run's row converts once: wall / dilation as ``_s``, the drawn lifetime stays trace seconds."""
    text = OLD_EVICTIONS
    if header == "new":
        text = text.replace("t_s,", "t_wall_s,").replace("lifetime_s", "lifetime_trace_s")
    (tmp_path / "evictions.csv").write_text(text)
    (row,) = read_table(tmp_path / "evictions.csv", "evictions")
    assert (row["t_wall_s"], row["lifetime_trace_s"]) == ("13.0", "579.36")
    converted = emulated_row(row, 6.5)
    assert (converted["t_s"], converted["lifetime_trace_s"], converted["node_id"]) == ("2.0", "579.36", "t1")
    assert "t_wall_s" not in converted
    assert read_table(tmp_path / "jobs.csv", "jobs") == []  # a table the run never wrote


@pytest.mark.parametrize("cpu_column", ["cpu_wall_s", "cpu_s"])
def test_a_tasks_cpu_seconds_are_no_clocks_and_are_never_dilated(tmp_path: Path, cpu_column: str) -> None:
    """A worker's CPU seconds are this machine's, neither wall nor emulated: written ``cpu_s``
    (an older run's ``cpu_wall_s`` reads as it), kept as they are by a dilated run's conversion,
    while its times are divided (a task at 1/d of a core for d x t wall seconds used t CPU s)."""
    assert "cpu_s" in DISK_COLUMNS["tasks"] and "cpu_wall_s" not in DISK_COLUMNS["tasks"]
    (tmp_path / "tasks.csv").write_text(f"task_id,start_wall_s,end_wall_s,{cpu_column}\nt,0.0,8.0,2.0\n")
    (row,) = read_table(tmp_path / "tasks.csv", "tasks")
    assert row["cpu_s"] == "2.0"
    converted = emulated_row(row, 4.0)
    assert (converted["end_s"], converted["cpu_s"]) == ("2.0", "2.0")


@pytest.mark.parametrize("policy", [{"strategy": "pado"}, {"scheduler": "yarn-me"}])
def test_a_simulated_runs_tables_are_what_its_events_make(tmp_path: Path, policy: dict[str, str]) -> None:
    run_dir = simulate(tmp_path, policy=policy, **SCENARIO).run_dir
    tables = {"tasks.csv", "jobs.csv", "nodes.csv", "evictions.csv"} | (
        {"decisions.csv"} if "scheduler" in policy else set()
    )
    assert tables <= {p.name for p in run_dir.glob("*.csv")}
    assert_tables_from_events(run_dir)


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.dates(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(deadline=None)  # a loaded host's pauses are no failure
@given(st.dictionaries(st.text(max_size=8), JSONISH, max_size=6))
def test_a_journal_line_is_json_dumps_of_its_record(fields: dict[str, Any]) -> None:
    """The journal's encoder, made once, gives ``json.dumps``'s very bytes (floats, NaN and
    infinities, non-ASCII text, values made text by ``default=str``)."""
    record = {"t": 1.5, "event": "x", **fields}
    assert _encode(record) == json.dumps(record, separators=(",", ":"), default=str)
