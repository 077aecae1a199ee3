"""The JCT table printed at the end of a run fits an 80-column terminal without clipping."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from rich.console import Console

from testbed.app.console import print_jct_table
from testbed.journal.tables import TABLES

SUMMARY = {
    "name": "quickstart",
    "jobs": 2,
    "succeeded": 1,
    "mean_jct_s": 1234.5,
    "p95_jct_s": 1234.5,
    "makespan_s": 2000.0,
    "evictions": 3,
    "relaunched_tasks": 7,
}


def test_every_cell_is_printed_whole_in_80_columns(tmp_path: Path) -> None:
    with (tmp_path / "jobs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, TABLES["jobs"], restval="")
        writer.writeheader()
        writer.writerow(
            {
                "job_id": "j000",
                "workload": "wordcount",
                "status": "succeeded",
                "submit_s": 0,
                "queue_s": 0.25,
                "jct_s": 1234.5,
                "tasks": 120,
                "relaunched_tasks": 7,
            }
        )
        writer.writerow(
            {
                "job_id": "j001",
                "workload": "pagerank",
                "status": "failed",
                "submit_s": 1999.5,
                "queue_s": "",
                "jct_s": 3.0,
                "tasks": 44,
                "relaunched_tasks": 0,
            }
        )
    console = Console(width=80, record=True, file=io.StringIO())
    print_jct_table(tmp_path, SUMMARY, console)
    text = console.export_text()
    for cell in ("relaunched", "wordcount", "succeeded", "pagerank", "1234.50", "1999.50", "120"):
        assert cell in text, text
    assert "…" not in text, text
    assert "times in emulated seconds since the run started (= wall seconds: no dilation)" in text
