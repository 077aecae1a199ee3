"""Checks of a recorded run directory."""

from __future__ import annotations

import tempfile
from pathlib import Path

from testbed.journal.tables import rebuild_tables


def assert_tables_from_events(run_dir: Path) -> None:
    """The CSVs the run wrote are those its ``events.jsonl`` makes, byte for byte."""
    with tempfile.TemporaryDirectory() as elsewhere:
        rebuilt = Path(elsewhere)
        counts = rebuild_tables(run_dir / "events.jsonl", rebuilt)
        written = sorted(p.name for p in run_dir.glob("*.csv"))
        assert sorted(f"{table}.csv" for table in counts) == written
        for name in written:
            assert (rebuilt / name).read_bytes() == (run_dir / name).read_bytes(), name
