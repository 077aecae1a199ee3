"""``testbed report`` and ``testbed compare``: argparse wiring and exit statuses.

Handlers return 0 on success and 2 (after one line on stderr) when a run
directory cannot be used. matplotlib is imported only when a report is made,
so registering these commands keeps the CLI's start-up fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from testbed.app.report.errors import UsageError

USAGE_ERROR = 2


def add_report_commands(subparsers: argparse._SubParsersAction) -> None:
    """Register ``report`` and ``compare``; each sets ``handler(args) -> int``."""
    report = subparsers.add_parser(
        "report",
        help="write report.md and report.html (with plots) into a run directory",
        description="Write report.md, a self-contained report.html and plots/*.png and *.svg into "
        "RUN_DIR: JCT tables and CDFs, node timeline with evictions, tasks per node, "
        "spill and shuffle bytes, cost, memory utilisation and policy metrics.",
    )
    report.add_argument(
        "run_dir",
        metavar="RUN_DIR",
        nargs="?",
        default="runs/latest",
        type=Path,
        help="a run directory (default: runs/latest)",
    )
    report.set_defaults(handler=run_report)

    compare = subparsers.add_parser(
        "compare",
        help="compare runs as ratios to the first (baseline) run",
        description="One table with each metric per run and its ratio to the first run "
        "(the baseline). Prints Markdown; --md and --csv also write it to files.",
    )
    compare.add_argument(
        "run_dirs",
        metavar="RUN_DIR",
        nargs="+",
        type=Path,
        help="run directories; the first is the baseline",
    )
    compare.add_argument("--csv", metavar="FILE", type=Path, help="also write the table as CSV")
    compare.add_argument("--md", metavar="FILE", type=Path, help="also write it as Markdown")
    compare.add_argument(
        "--plot",
        metavar="STEM",
        type=Path,
        help="also write the runs' JCT and queueing-delay CDFs overlaid: STEM-jct-cdf.png/.svg, "
        "STEM-queue-cdf.png/.svg (3.3 in wide)",
    )
    compare.set_defaults(handler=run_compare)


def run_report(args: argparse.Namespace) -> int:
    from testbed.app.report.build import write_report

    try:
        markdown, html = write_report(args.run_dir)
    except UsageError as exc:
        return _usage_error(exc)
    print(f"wrote {markdown}\nwrote {html}")
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from testbed.app.report.compare import compare_runs

    try:
        comparison = compare_runs(args.run_dirs)
        markdown = comparison.to_markdown()
        _write(args.md, markdown)
        _write(args.csv, comparison.to_csv())
        plots = _plot(comparison, args.plot)
    except UsageError as exc:
        return _usage_error(exc)
    print(markdown, end="")
    for path in plots:
        print(f"wrote {path}")
    return 0


def _plot(comparison: Any, stem: Path | None) -> list[Path]:
    if stem is None:
        return []
    try:
        return comparison.plot(stem)
    except OSError as exc:
        raise UsageError(f"{stem}: cannot write the plots: {exc.strerror or exc}") from None


def _write(path: Path | None, text: str) -> None:
    if path is None:
        return
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: cannot write: {exc.strerror or exc}") from None


def _usage_error(exc: UsageError) -> int:
    print(f"error: {exc}", file=sys.stderr)
    return USAGE_ERROR
