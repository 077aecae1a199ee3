"""The run directory and its journal, written as the run goes so a crash loses nothing.

``events.jsonl`` gets one JSON object per event and each table (tasks, jobs,
nodes, decisions, evictions) one CSV row per finished thing, each line flushed
at once. ``summary.json`` is written at the end (and rewritten by a resumed run).
What an event holds is the schema in ``testbed.journal.schema``: every event is checked
against it. The tables are made from the events alone (``testbed.journal.tables``:
the event kinds that make a row, and how), so the writer takes only events, and
``testbed.journal.tables.rebuild_tables`` makes the same CSVs again from ``events.jsonl``.

A real run flushes every line (a crash loses nothing, and ``--resume`` reads the journal);
the simulator, which never resumes, flushes every few hundred events (``flush_each=False``
and ``flush``): the same bytes, written in larger pieces.
"""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]
from pathlib import Path
from typing import Any, TextIO

from testbed.journal.schema import check_event
from testbed.journal.tables import TableWriter, row_of, table_writer

log = logging.getLogger(__name__)

_ENCODER = json.JSONEncoder(separators=(",", ":"), default=str, check_circular=False)
"""``json.dumps(record, separators=(",", ":"), default=str)``, without an encoder made per event
and without its check for cycles (an event's fields are checked values, never a cycle)."""
_CHUNKS = c_make_encoder(  # what ``_ENCODER.encode`` builds again for every object it encodes
    None,  # markers: no check for cycles
    _ENCODER.default,
    encode_basestring_ascii,
    _ENCODER.indent,
    _ENCODER.key_separator,
    _ENCODER.item_separator,
    _ENCODER.sort_keys,
    _ENCODER.skipkeys,
    _ENCODER.allow_nan,
)


def _encode(record: dict[str, Any]) -> str:
    """``_ENCODER.encode(record)``, the same C encoder's very same string, made once: ``encode``
    builds it again on each call (with a float formatter closure it then does not use)."""
    return "".join(_CHUNKS(record, 0))


RESERVE_NAME = ".journal-reserve"
RESERVE_BYTES = 128 * 1024
"""Disk space the journal holds back from the start, given back when its disk is full so
that the run can still record how it ends (its jobs' rows, summary.json)."""


def found_header(path: Path) -> list[str] | None:
    """The header of a table a resumed run appends to (None: no file, or an empty one)."""
    with contextlib.suppress(FileNotFoundError), open(path, newline="", encoding="utf-8") as handle:
        return next(csv.reader(handle), None)
    return None


def new_run_dir(base: Path, name: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    run_dir = base / f"{stamp}-{name}"
    base.mkdir(parents=True, exist_ok=True)
    run_dir.mkdir(mode=0o700)
    latest = base / "latest"
    tmp = base / f".latest-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(run_dir.name)
    os.replace(tmp, latest)
    return run_dir


@dataclass
class _Table:
    handle: TextIO
    writer: TableWriter


class Journal:
    def __init__(self, run_dir: Path, clock: Any = time.monotonic, flush_each: bool = True) -> None:
        """``flush_each``: flush every record as it is written (else only on ``flush`` and ``close``)."""
        self.run_dir = run_dir
        self.clock = clock
        self.flush_each = flush_each
        self.t0 = clock()
        self._events = open(run_dir / "events.jsonl", "a", encoding="utf-8")  # noqa: SIM115
        self._tables: dict[str, _Table] = {}
        self.listeners: list[Any] = []
        self.on_disk_full: Callable[[OSError], None] | None = None
        """Called once, when a write first fails (after the reserve is given back)."""
        self.disk_full: OSError | None = None
        self.dropped = 0
        """Records lost because the disk was full even after the reserve was given back."""
        self._reserve = run_dir / RESERVE_NAME
        with contextlib.suppress(OSError):  # a disk already full: no reserve, the run still starts
            self._reserve.write_bytes(bytes(RESERVE_BYTES))

    def now(self) -> float:
        """Seconds since the run started."""
        return self.clock() - self.t0

    def event(self, name: str, /, **fields: Any) -> None:
        """Append one event; ``JournalSchemaError`` if it is not as ``testbed.journal.schema`` declares."""
        check_event(name, fields)
        self.write_event(self.now(), name, fields)

    def write_event(self, t: float, name: str, fields: dict[str, Any]) -> None:
        """Append one event already checked (by the master's core), at run time ``t``, and the
        table row it makes (``testbed.journal.tables.ROWS_FROM_EVENTS``)."""
        record = {"t": round(t, 4), "event": name, **fields}
        line = _encode(record) + "\n"
        derived = row_of(record)  # before writing: a row off its table's schema is a bug and raises
        self._written(self._events, self._events.write, line)
        if derived is not None:
            self._row(*derived)
        for listener in self.listeners:
            listener(record)

    def _row(self, table: str, row: Mapping[str, Any]) -> None:
        entry = self._tables.get(table)
        if entry is None:
            try:
                entry = self._open_table(table)
            except OSError as exc:
                self._full(exc)
                self.dropped += 1
                return
        self._written(entry.handle, entry.writer.writerow, row)

    def _open_table(self, table: str) -> _Table:
        path = self.run_dir / f"{table}.csv"
        header = found_header(path)  # a resumed run's rows go under its file's header
        handle = open(path, "a", newline="", encoding="utf-8")  # noqa: SIM115
        writer = table_writer(handle, table, header)
        if header is None:
            writer.writeheader()
        entry = self._tables[table] = _Table(handle, writer)
        return entry

    def _written(self, handle: TextIO, write: Callable[[Any], Any], record: Any) -> None:
        """Write and flush a record. A full disk does not stop the master: the reserve is
        given back, the master is told (it ends the run, saying why), and the record is
        flushed again; what still does not fit is counted and dropped."""
        try:
            write(record)
            if self.flush_each:
                handle.flush()
        except OSError as exc:
            self._flush_after_full(handle, exc)

    def flush(self) -> None:
        """Flush what was written (with ``flush_each`` off); a full disk is handled as in ``_written``."""
        for handle in (self._events, *(entry.handle for entry in self._tables.values())):
            try:
                handle.flush()
            except OSError as exc:
                self._flush_after_full(handle, exc)

    def _flush_after_full(self, handle: TextIO, exc: OSError) -> None:
        """The disk is full: give the reserve back, say so, and flush once more; what still
        does not fit is counted and dropped."""
        self._full(exc)
        try:
            handle.flush()
        except OSError:
            self.dropped += 1

    def _full(self, exc: OSError) -> None:
        if self.disk_full is not None:
            return
        self.disk_full = exc
        self._reserve.unlink(missing_ok=True)
        if self.on_disk_full is not None:
            self.on_disk_full(exc)

    def write_json(self, name: str, data: Any) -> None:
        tmp = self.run_dir / f".{name}.tmp"
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, self.run_dir / name)

    def close(self) -> None:
        for handle in (self._events, *(entry.handle for entry in self._tables.values())):
            try:
                handle.close()
            except OSError as exc:  # its last flush: the disk is full
                self._full(exc)
                self.dropped += 1
        self._reserve.unlink(missing_ok=True)
        if self.dropped:
            log.error("%d journal records were lost: the disk of %s was full", self.dropped, self.run_dir)
