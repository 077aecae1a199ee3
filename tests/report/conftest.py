"""Fixtures: a complete recorded run per policy (see tests/support/recorded_run.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.recorded_run import RecordedRun, write_run


@pytest.fixture
def spark_run(tmp_path: Path) -> RecordedRun:
    return write_run(tmp_path / "spark-run", strategy="spark")


@pytest.fixture
def pado_run(tmp_path: Path) -> RecordedRun:
    return write_run(tmp_path / "pado-run", strategy="pado", scale=0.5)
