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


def _jobs_csv(tmp_path: Path, workload: str = "wordcount") -> None:
    with (tmp_path / "jobs.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, TABLES["jobs"], restval="")
        writer.writeheader()
        writer.writerow(
            {
                "job_id": "j000",
                "workload": workload,
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


def test_every_cell_is_printed_whole_in_80_columns(tmp_path: Path) -> None:
    _jobs_csv(tmp_path)
    console = Console(width=80, record=True, file=io.StringIO())
    print_jct_table(tmp_path, SUMMARY, console)
    text = console.export_text()
    for cell in ("relaunched", "wordcount", "succeeded", "pagerank", "1234.50", "1999.50", "120"):
        assert cell in text, text
    assert "…" not in text, text
    assert "times in emulated seconds since the run started (= wall seconds: no dilation)" in text


def test_a_long_workload_name_folds_and_no_number_is_cut(tmp_path: Path) -> None:
    """A plugin workload's import path is wider than the table has room for at 80 columns (or
    in a pipe): the name folds onto more lines, every number is printed whole."""
    name = "inverted_index:InvertedIndexWithPositions"
    _jobs_csv(tmp_path, name)
    for width in (80, 60, 40):
        console = Console(width=width, record=True, file=io.StringIO())
        print_jct_table(tmp_path, SUMMARY, console)
        text = console.export_text()
        assert "…" not in text, text
        for cell in ("j000", "succeeded", "0.00", "0.25", "1234.50", "120", "7", "1999.50", "3.00", "44"):
            assert cell in text.split(), text
        lines = text.splitlines()
        header = next(i for i, line in enumerate(lines) if line.startswith("job"))
        first, after = header + 2, next(i for i, line in enumerate(lines) if line.startswith("j001"))
        start, end = lines[header].index("workload"), lines[header].index("status")
        assert "".join(line[start:end].strip() for line in lines[first:after]) == name, text


def test_a_dilated_runs_table_is_in_emulated_seconds_from_a_new_or_an_old_header(tmp_path: Path) -> None:
    """jobs.csv names its wall seconds (``jct_wall_s``; an older run's ``jct_s``): the table
    divides them by the dilation once, as the summary's line does."""
    row = {"job_id": "j000", "workload": "sort", "status": "succeeded", "tasks": 4, "relaunched_tasks": 0}
    times = {"submit_s": 3.0, "queue_s": 1.0, "jct_s": 10.0}
    summary = {**SUMMARY, "dilation": 2.0, "mean_jct_s": 5.0, "p95_jct_s": 5.0, "makespan_s": 6.5}
    printed = []
    for header in ("new", "old"):
        named = {(k.replace("_s", "_wall_s") if header == "new" else k): v for k, v in times.items()}
        (tmp_path / "jobs.csv").write_text(
            ",".join([*row, *named]) + "\n" + ",".join(map(str, [*row.values(), *named.values()])) + "\n"
        )
        console = Console(width=100, record=True, file=io.StringIO())
        print_jct_table(tmp_path, summary, console)
        printed.append(console.export_text())
    assert printed[0] == printed[1]
    (line,) = [line for line in printed[0].splitlines() if line.startswith("j000")]
    assert line.split()[3:6] == ["1.50", "0.50", "5.00"]
    assert "wall / dilation 2" in printed[0]
