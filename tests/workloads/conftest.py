"""Fixtures: run a job locally at a fraction of every task's ideal memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from testbed.workloads.local import LocalJob
from testbed.workloads.profile import run_job_at_fraction
from tests.support.workloads import no_spill_files


@pytest.fixture
def run_at(tmp_path: Path):
    def run(job, seed: int, fraction: float) -> LocalJob:
        local = run_job_at_fraction(job, seed, tmp_path / f"f{fraction}", fraction)
        assert no_spill_files(local)
        return local

    return run
