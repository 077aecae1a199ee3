"""What the CLI prints for people: the JCT table at the end of a run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.segment import Segments
from rich.table import Table

from testbed.journal.tables import emulated_row, read_table

COLUMNS = ("job", "workload", "status", "submit s", "queue s", "JCT s", "tasks", "relaunched")
FOLDED = "workload"
"""The one column that folds onto more lines when the table is wider than the console (a
plugin's import path may be long); every other is printed whole, whatever the width: a
number cut is a wrong number."""
LEFT = ("job", "workload", "status")
GAP = 3
"""Between two columns: their padding (one each) and the (blank) rule."""


def print_jct_table(run_dir: Path, summary: dict[str, Any], console: Console | None = None) -> None:
    console = console or Console()
    dilation = float(summary.get("dilation", 1.0))
    table, width = _jct_table(summary["name"], _table_rows(run_dir / "jobs.csv", dilation), console.width)
    # Rendered at its own width: in a console too narrow for it the terminal wraps, nothing is cut.
    lines = console.render_lines(table, console.options.update_width(width), pad=False, new_lines=True)
    console.print(Segments([segment for line in lines for segment in line]), crop=False, soft_wrap=True)
    for job_id, error in sorted(summary.get("errors", {}).items()):
        console.print(f"{job_id} failed: {error}", markup=False, highlight=False)
    console.print(
        f"{summary['succeeded']}/{summary['jobs']} jobs succeeded; mean JCT {_num(summary['mean_jct_s'])} s, "
        f"p95 {_num(summary['p95_jct_s'])} s, makespan {_num(summary['makespan_s'])} s; "
        f"{summary['evictions']} evictions, {summary['relaunched_tasks']} relaunched tasks\n"
        + _time_note(summary, dilation)
    )


def _jct_table(name: str, rows: list[tuple[str, ...]], width: int) -> tuple[Table, int]:
    """The table of ``rows`` and its width: ``width`` if it fits, the workload taking the room
    the others leave (folded onto more lines), at least its header's; the others are whole."""
    # No vertical rules: the eight columns then fit an 80-column terminal (or a pipe) unclipped.
    table = Table(
        title=f"{name}: job completion times",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
    )
    cells = list(zip(*rows, strict=True)) if rows else [()] * len(COLUMNS)
    widths = [max(map(len, (column, *values))) for column, values in zip(COLUMNS, cells, strict=True)]
    folded = COLUMNS.index(FOLDED)
    room = width - (sum(widths) - widths[folded]) - GAP * (len(COLUMNS) - 1)
    widths[folded] = max(len(FOLDED), min(widths[folded], room))
    for column, column_width in zip(COLUMNS, widths, strict=True):
        justify = "left" if column in LEFT else "right"
        wraps = column == FOLDED
        table.add_column(column, justify=justify, width=column_width, overflow="fold", no_wrap=not wraps)
    for row in rows:
        table.add_row(*row)
    return table, max(width, sum(widths) + GAP * (len(COLUMNS) - 1))


def _table_rows(jobs_csv: Path, dilation: float) -> list[tuple[str, ...]]:
    """The cells of each job's row (``COLUMNS``), by job id."""
    rows = [emulated_row(row, dilation) for row in read_table(jobs_csv, "jobs")]
    return [
        (
            row["job_id"],
            row["workload"],
            row["status"],
            _num(row["submit_s"]),
            _num(row["queue_s"]),
            _num(row["jct_s"]),
            row["tasks"],
            row["relaunched_tasks"],
        )
        for row in sorted(rows, key=lambda r: r["job_id"])
    ]


def _num(value: Any) -> str:
    if value in (None, ""):
        return "-"
    return f"{float(value):.2f}"


def _time_note(summary: dict, dilation: float) -> str:
    if summary.get("backend") == "sim":
        return "times in simulated seconds since the run started (backend: sim, docs/simulation.md)"
    if dilation != 1.0:
        return f"times in emulated seconds: wall / dilation {dilation:g} (wall times in summary.json)"
    return "times in emulated seconds since the run started (= wall seconds: no dilation)"
