"""What the CLI prints for people: the JCT table at the end of a run."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table

from testbed.scenario.fidelity import emulated


def print_jct_table(run_dir: Path, summary: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    # No vertical rules: the eight columns then fit an 80-column terminal (or a pipe) unclipped.
    table = Table(
        title=f"{summary['name']}: job completion times",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    for column in ("job", "workload", "status"):
        table.add_column(column, no_wrap=True)
    for column in ("submit s", "queue s", "JCT s", "tasks", "relaunched"):
        table.add_column(column, justify="right", no_wrap=True)
    jobs_csv = run_dir / "jobs.csv"
    dilation = float(summary.get("dilation", 1.0))
    rows = list(csv.DictReader(jobs_csv.open(encoding="utf-8"))) if jobs_csv.exists() else []
    rows = [emulated(row, dilation) for row in rows]
    for row in sorted(rows, key=lambda r: r["job_id"]):
        table.add_row(
            row["job_id"],
            row["workload"],
            row["status"],
            _num(row["submit_s"]),
            _num(row["queue_s"]),
            _num(row["jct_s"]),
            row["tasks"],
            row["relaunched_tasks"],
        )
    console.print(table)
    for job_id, error in sorted(summary.get("errors", {}).items()):
        console.print(f"{job_id} failed: {error}", markup=False, highlight=False)
    console.print(
        f"{summary['succeeded']}/{summary['jobs']} jobs succeeded; mean JCT {_num(summary['mean_jct_s'])} s, "
        f"p95 {_num(summary['p95_jct_s'])} s, makespan {_num(summary['makespan_s'])} s; "
        f"{summary['evictions']} evictions, {summary['relaunched_tasks']} relaunched tasks\n"
        + _time_note(summary, dilation)
        + f"run directory: {run_dir}"
    )


def _num(value: Any) -> str:
    if value in (None, ""):
        return "-"
    return f"{float(value):.2f}"


def _time_note(summary: dict, dilation: float) -> str:
    if summary.get("backend") == "sim":
        return "times in simulated seconds since the run started (backend: sim, docs/simulation.md)\n"
    if dilation != 1.0:
        return f"times in emulated seconds: wall / dilation {dilation:g} (wall times in summary.json)\n"
    return "times in emulated seconds since the run started (= wall seconds: no dilation)\n"
