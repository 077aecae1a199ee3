"""The report reads well: a lane per slot, one cross per eviction, tables that scroll inside
the page (checked in headless Chromium), SVG plots, and runs of 1,000 nodes."""

from __future__ import annotations

import csv
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from testbed.app.report.build import write_report
from testbed.app.report.gantt import MAX_GROUPS, gantt, lane_layout, slot_lanes
from testbed.app.report.metrics import StepSeries
from testbed.app.report.plots import eviction_marks, nodes_timeline
from testbed.app.report.records import Eviction, TaskAttempt
from testbed.app.report.rundir import load_run
from tests.support.headless_chromium import CHROMIUM, render
from tests.support.large_run import write_large_run
from tests.support.recorded_run import RecordedRun

needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (Debian package: chromium)"
)
LAYOUT_JS = {
    "page_overflow": "document.documentElement.scrollWidth - document.documentElement.clientWidth",
    "boxes": """Array.from(document.querySelectorAll('table')).map(t => {
        const box = t.parentElement, page = document.body.getBoundingClientRect();
        return {right: box.getBoundingClientRect().right - page.right,
                scrolls: box.scrollWidth > box.clientWidth, overflow: getComputedStyle(box).overflowX,
                tall: box.scrollHeight > box.clientHeight}})""",
}


def attempt(node: str, start: float, end: float | None) -> TaskAttempt:
    return TaskAttempt("t", "j", "s", 0, 0, node, "transient", 1, start, end, "succeeded")


def test_each_attempt_takes_the_lowest_lane_free_at_its_start() -> None:
    attempts = [
        attempt("n", 0, 5),
        attempt("n", 1, 3),
        attempt("n", 2, 4),
        attempt("n", 3.5, 6),
        attempt("n", 6, 7),
    ]
    assert slot_lanes(attempts, end=10) == [0, 1, 2, 1, 0]


def test_concurrent_attempts_on_a_node_never_share_a_lane(spark_run: RecordedRun) -> None:
    run = load_run(spark_run.path)
    layout = lane_layout(run)
    assert layout.lanes == {"r0": 2, "t1": 2, "t2": 2, "t3": 2}  # the scenario's 2 slots
    seen: dict[tuple[str, int], list[TaskAttempt]] = {}
    for i, a in enumerate(run.tasks):
        for other in seen.get((a.node_id, layout.lane_of[i]), []):
            assert a.start_s >= other.end_s or a.end_s <= other.start_s, (a, other)
        seen.setdefault((a.node_id, layout.lane_of[i]), []).append(a)
    r0 = [layout.lane_of[i] for i, a in enumerate(run.tasks) if a.node_id == "r0"]
    assert sorted(set(r0)) == [0, 1]  # two of r0's attempts overlap (3.5 s to 4 s)


def test_evictions_at_one_instant_get_one_cross_each() -> None:
    alive = {"transient": StepSeries([0.0, 5.0], [4.0, 1.0])}
    gone = [Eviction(5.0, f"t{i}", "transient", "storm", None, 0, 0) for i in range(3)]
    later = Eviction(7.0, "t9", "transient", "lifetime", None, 0, 0)
    assert eviction_marks(alive, [*gone, later]) == [(5.0, 4.0), (5.0, 3.0), (5.0, 2.0), (7.0, 1.0)]
    plot = nodes_timeline(alive, [*gone, later])
    assert plot is not None and b"3 at once" in plot.svg


def test_every_plot_is_also_an_svg_file(spark_run: RecordedRun) -> None:
    markdown = write_report(spark_run.path)[0].read_text()
    pngs = sorted(re.findall(r"\]\((plots/\w+)\.png\)", markdown))
    assert len(pngs) == 5
    assert sorted(re.findall(r"\[SVG\]\((plots/\w+)\.svg\)", markdown)) == pngs
    for plot in pngs:
        root = ElementTree.parse(spark_run.path / f"{plot}.svg").getroot()
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert 'href="plots/tasks_gantt.svg"' in (spark_run.path / "report.html").read_text()


def widen_the_jobs_table(run: RecordedRun, columns: int = 30) -> None:
    path = run.path / "jobs.csv"
    rows = list(csv.DictReader(path.open()))
    for row in rows:
        row.update({f"policy_counter_{i}": str(1000 * i + 7) for i in range(columns)})
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


@needs_chromium
async def test_wide_tables_scroll_inside_the_page(spark_run: RecordedRun, tmp_path: Path) -> None:
    widen_the_jobs_table(spark_run)
    page = await render(
        write_report(spark_run.path)[1], tmp_path / "profile", expressions=LAYOUT_JS, width=900
    )
    assert page.console_errors == []
    assert page.values["page_overflow"] == 0
    boxes = page.values["boxes"]
    assert all(box["right"] <= 1 for box in boxes), boxes
    assert any(box["scrolls"] and box["overflow"] == "auto" for box in boxes), boxes


def test_a_thousand_nodes_are_drawn_as_groups(tmp_path: Path) -> None:
    written = write_large_run(tmp_path / "large", nodes=1000)
    figure = gantt(load_run(tmp_path / "large"))
    assert figure is not None
    axes = figure.axes[0]
    assert "1000 nodes in 40 groups" in axes.get_title()
    labels = [label.get_text() for label in axes.get_yticklabels()]
    assert (
        len(labels) == MAX_GROUPS and labels[0] == "r0 .. r24 (25 r)" and labels[-1] == "t975 .. t999 (25 t)"
    )
    crosses = [line for line in axes.get_lines() if line.get_marker() == "X"]
    assert len(crosses) < len(written["evictions"])  # some fell at one instant in one group...
    counts = [int(text.get_text()) for text in axes.texts]
    assert len(crosses) + sum(c - 1 for c in counts) == len(written["evictions"])  # ...and say how many


@needs_chromium
async def test_the_report_of_a_thousand_nodes_reads_in_a_browser(tmp_path: Path) -> None:
    write_large_run(tmp_path / "large", nodes=1000)
    markdown_path, html_path = write_report(tmp_path / "large")
    assert "| t999 | transient |" in markdown_path.read_text()  # every node is still listed
    page = await render(html_path, tmp_path / "profile", expressions=LAYOUT_JS)
    assert page.console_errors == [] and page.broken_images == [] and len(page.images) == 5
    assert page.values["page_overflow"] == 0
    tall = [box for box in page.values["boxes"] if box["tall"]]
    assert tall and all(box["right"] <= 1 for box in page.values["boxes"])  # the node table scrolls
