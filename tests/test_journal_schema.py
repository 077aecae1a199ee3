"""The journal's schema: the writer checks every event against it, rows derive from events,
and readers skip what is not an event."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from master.shell.journal_file import Journal
from master.summary.coaster import long_job_ids
from testbed.journal.schema import (
    EVENTS,
    JournalSchemaError,
    TaskStarted,
    check_event,
    events_of,
    read_events,
)
from testbed.journal.tables import DISK_COLUMNS, TABLES, check_row, columns

STARTED = {
    "task": "j000.s0.t0",
    "job": "j000",
    "stage": 0,
    "index": 0,
    "node": "transient-0",
    "class": "transient",
    "attempt": 0,
    "memory_mb": 256,
}


def test_a_well_formed_event_passes() -> None:
    check_event("task_started", STARTED)
    check_event("node_lost", {"node": "reserved-0", "reason": "master_crashed", "detect_s": None})
    check_event("eviction_notice", {"node": "transient-0", "seconds": 2})  # an int is a float too


@pytest.mark.parametrize(
    ("name", "fields", "complaint"),
    [
        ("task_begun", STARTED, "not a kind"),
        ("task_started", {**STARTED, "colour": "red"}, "no field 'colour'"),
        ("task_started", {k: v for k, v in STARTED.items() if k != "attempt"}, "lacks \\['attempt'\\]"),
        ("task_started", {**STARTED, "attempt": "0"}, "attempt='0' is not of type int"),
        ("job_finished", {"job": "j0", "status": "failed", "jct_s": None, "error": 3}, "error=3"),
    ],
)
def test_an_event_off_its_schema_is_refused(name: str, fields: dict, complaint: str) -> None:
    with pytest.raises(JournalSchemaError, match=complaint):
        check_event(name, fields)


def test_a_shape_that_passed_still_refuses_a_value_of_another_type() -> None:
    """``check_event`` and ``check_row`` remember the shapes that passed (names and value
    types): the same fields with a value of a wrong type are still refused, every time."""
    check_event("task_started", STARTED)
    check_event("task_started", {**STARTED, "node": "transient-1"})  # the same shape again
    for _ in range(2):
        with pytest.raises(JournalSchemaError, match="stage"):
            check_event("task_started", {**STARTED, "stage": "0"})
    check_row("decisions", {"task_id": "j000.s0.t0", "memory_mb": 256.0})
    for _ in range(2):
        with pytest.raises(JournalSchemaError, match="memory_mb"):
            check_row("decisions", {"task_id": "j000.s0.t0", "memory_mb": "256"})


def test_the_writer_refuses_an_event_off_its_schema(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    with pytest.raises(JournalSchemaError):
        journal.event("task_started", task="j000.s0.t0")
    journal.close()
    assert (tmp_path / "events.jsonl").read_text() == ""  # nothing half-written


def test_an_eviction_row_is_made_from_its_event(tmp_path: Path) -> None:
    journal = Journal(tmp_path, clock=lambda: 12.5)
    journal.t0 = 10.0
    facts = {"reason": "storm", "lifetime_s": None, "tasks_running": 2, "bytes_lost": 4096}
    journal.event("eviction", node="transient-1", **{"class": "transient"}, **facts)
    journal.close()
    with open(tmp_path / "evictions.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows == [
        {
            "t_wall_s": "2.5",
            "node_id": "transient-1",
            "node_class": "transient",
            "reason": "storm",
            "lifetime_trace_s": "",
            "tasks_running": "2",
            "bytes_lost": "4096",
        }
    ]
    assert list(rows[0]) == list(DISK_COLUMNS["evictions"])


NODE_ROW = {"node_id": "transient-0", "node_class": "transient", "launched_s": 0, "ended_s": 3.5}


def test_a_well_formed_row_passes() -> None:
    check_row("nodes", {**NODE_ROW, "end_reason": "evicted", "price_per_hour": None})  # None: empty
    check_row("decisions", {"task_id": "j000.s0.t0", "memory_mb": 256.0, "allocation_ratio": 1})


@pytest.mark.parametrize(
    ("table", "fields", "complaint"),
    [
        ("machines", NODE_ROW, "not one of"),
        ("nodes", {**NODE_ROW, "colour": "red"}, "no column 'colour'"),
        ("nodes", {**NODE_ROW, "ended_s": "3.5"}, "ended_s='3.5' is not of type int | float"),
        ("tasks", {"task_id": "j000.s0.t0", "attempt": 1.0}, "attempt=1.0 is not of type int"),
    ],
)
def test_a_row_off_its_schema_is_refused(table: str, fields: dict, complaint: str) -> None:
    with pytest.raises(JournalSchemaError, match=complaint):
        check_row(table, fields)


def test_the_writer_refuses_an_event_whose_row_is_off_its_tables_schema(tmp_path: Path) -> None:
    journal = Journal(tmp_path)
    decision = {"job": "j000", "task": "j000.s0.t0", "decision": "regular", "node": None}
    with pytest.raises(JournalSchemaError, match="memory_mb='a lot' is not of type"):
        journal.event("decision", **decision, detail={"memory_mb": "a lot"})
    journal.close()
    assert (tmp_path / "events.jsonl").read_text() == ""  # nothing half-written
    assert not (tmp_path / "decisions.csv").exists()


def test_a_tasks_metrics_and_a_decisions_detail_keep_their_columns() -> None:
    metrics = {"bytes_in": 10, "records_in": 3, "fetch_s": 0.5, "compute_s": 1.5}
    assert columns("tasks", metrics) == {"bytes_in": 10, "compute_s": 1.5}
    detail = {"memory_mb": 128.0, "free_memory_mb": 512.0}
    assert columns("decisions", detail) == {"memory_mb": 128.0}


def test_every_table_keeps_its_columns() -> None:
    """The CSV formats the report and existing run directories rely on."""
    nodes = ("node_id", "node_class", "launched_s", "ended_s", "end_reason", "price_per_hour")
    assert TABLES["nodes"] == nodes
    assert TABLES["tasks"][:5] == ("task_id", "job_id", "stage", "index", "attempt")
    assert TABLES["jobs"][-11:-8] == ("map_phase_s", "reduce_phase_s", "error")
    speculation = ("speculative_attempts", "speculative_wins", "wasted_slot_s")
    reads = ("input_local_bytes", "input_remote_bytes", "input_source_bytes", "input_local_fraction")
    assert TABLES["jobs"][-8:] == (*speculation, "preempted_attempts", *reads)  # appended
    assert set(TABLES) == {"tasks", "jobs", "nodes", "decisions", "evictions"}


def test_readers_skip_torn_and_foreign_lines_and_select_by_kind(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = [
        json.dumps({"t": 0.5, "event": "task_started", **STARTED}),
        json.dumps({"t": 0.6, "event": "some_future_event"}),
        json.dumps({"event": "no_time"}),
        '{"t": 0.7, "event": "task_sta',
    ]
    path.write_text("\n".join(lines))
    read = read_events(path)
    assert read.malformed == 2
    assert [e["event"] for e in read.events] == ["task_started", "some_future_event"]
    assert [e["memory_mb"] for e in events_of(read.events, TaskStarted)] == [256]


def test_long_jobs_are_read_past_a_torn_line(tmp_path: Path) -> None:
    """A resumed run's journal holds the torn line its crash left; its summary still reads."""
    path = tmp_path / "events.jsonl"
    submitted = {"workload": "sleep", "tasks": 1, "est_s": 1.0}
    path.write_text(
        json.dumps({"t": 0.0, "event": "job_submitted", "job": "j000", "long": True, **submitted})
        + '\n{"t": 1.0, "event": "task_sta\n'
        + json.dumps({"t": 2.0, "event": "job_submitted", "job": "j001", "long": False, **submitted})
        + "\n"
    )
    assert long_job_ids(path) == {"j000"}


def test_every_kind_has_a_distinct_schema() -> None:
    assert len(set(EVENTS.values())) == len(EVENTS)
