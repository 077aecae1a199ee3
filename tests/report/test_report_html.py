"""report.html renders in headless Chromium: no console errors, every image loaded, offline."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from testbed.app.report.build import write_report
from tests.support.headless_chromium import CHROMIUM, render
from tests.support.recorded_run import RecordedRun, crash

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (Debian package: chromium)"
)


async def test_report_html_renders_with_every_image(spark_run: RecordedRun, tmp_path: Path) -> None:
    markdown_path, html_path = write_report(spark_run.path)
    plots = re.findall(r"!\[[^\]]*\]\(plots/", markdown_path.read_text())
    page = await render(html_path, tmp_path / "profile")
    assert page.title == "Run report: fixture-spark"
    assert page.console_errors == []
    assert page.external_requests == []
    assert len(page.images) == len(plots) == 5
    assert page.broken_images == []


async def test_partial_report_html_renders(spark_run: RecordedRun, tmp_path: Path) -> None:
    crash(spark_run, at=10.5)
    page = await render(write_report(spark_run.path)[1], tmp_path / "profile")
    assert page.console_errors == []
    assert page.images and page.broken_images == []


async def test_the_checker_sees_broken_images_and_console_errors(tmp_path: Path) -> None:
    """The renderer is the only witness of the checks above: show that it can object."""
    page_path = tmp_path / "broken.html"
    page_path.write_text(
        "<!DOCTYPE html><html><head><title>broken</title></head><body>"
        '<img src="data:image/png;base64,AAAA"><img src="missing.png">'
        "<script>console.error('boom')</script></body></html>"
    )
    page = await render(page_path, tmp_path / "profile")
    assert len(page.broken_images) == 2
    assert any("boom" in error for error in page.console_errors)
