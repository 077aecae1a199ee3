"""The run directory and its journal, written as the run goes so a crash loses nothing.

``events.jsonl`` gets one JSON object per event and each table (tasks, jobs,
nodes, evictions) one CSV row per finished thing, each line flushed at once.
``summary.json`` is written at the end (and rewritten by a resumed run).
What an event and a row hold is the schema in ``testbed.journal``: every event
is checked against it, and rows that repeat an event's facts are made from it.
"""

from __future__ import annotations

import csv
import json
import os
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from testbed.journal import ROWS_FROM_EVENTS, TABLES, check_event


def new_run_dir(base: Path, name: str) -> Path:
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    run_dir = base / f"{stamp}-{name}"
    run_dir.mkdir(parents=True)
    latest = base / "latest"
    tmp = base / f".latest-{os.getpid()}"
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(run_dir.name)
    os.replace(tmp, latest)
    return run_dir


@dataclass
class _Table:
    handle: TextIO
    writer: Any


class Journal:
    def __init__(self, run_dir: Path, clock: Any = time.monotonic) -> None:
        self.run_dir = run_dir
        self.clock = clock
        self.t0 = clock()
        self._events = open(run_dir / "events.jsonl", "a", encoding="utf-8")  # noqa: SIM115
        self._tables: dict[str, _Table] = {}
        self.listeners: list[Any] = []

    def now(self) -> float:
        """Seconds since the run started."""
        return self.clock() - self.t0

    def event(self, name: str, /, **fields: Any) -> None:
        """Append one event; ``JournalSchemaError`` if it is not as ``testbed.journal`` declares."""
        check_event(name, fields)
        record = {"t": round(self.now(), 4), "event": name, **fields}
        self._events.write(json.dumps(record, separators=(",", ":"), default=str) + "\n")
        self._events.flush()
        derived = ROWS_FROM_EVENTS.get(name)
        if derived is not None:
            table, make_row = derived
            self.row(table, **make_row(record))
        for listener in self.listeners:
            listener(record)

    def row(self, table: str, **fields: Any) -> None:
        entry = self._tables.get(table)
        if entry is None:
            path = self.run_dir / f"{table}.csv"
            fresh = not path.exists() or path.stat().st_size == 0
            handle = open(path, "a", newline="", encoding="utf-8")  # noqa: SIM115
            writer = csv.DictWriter(handle, TABLES[table], extrasaction="ignore")
            if fresh:
                writer.writeheader()
            entry = self._tables[table] = _Table(handle, writer)
        entry.writer.writerow({k: _cell(v) for k, v in fields.items()})
        entry.handle.flush()

    def write_json(self, name: str, data: Any) -> None:
        tmp = self.run_dir / f".{name}.tmp"
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, self.run_dir / name)

    def close(self) -> None:
        self._events.close()
        for entry in self._tables.values():
            entry.handle.close()


def _cell(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 4)
    if value is None:
        return ""
    return value
