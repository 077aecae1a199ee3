"""testbed report on a YARN-ME run: phases, allocation ratios, elastic attempts, model error."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from testbed.app.report.build import write_report
from testbed.app.report.metrics import compute_metrics
from testbed.app.report.rundir import load_run
from testbed.journal.tables import TABLES

JOB = {"job_id": "j000", "workload": "sort", "submit_s": 0.0, "start_s": 0.5, "finish_s": 9.5}
TASKS = [
    # task, memory, elastic, predicted, start, end, spill, status
    ("j000.s0.t0", 20, 0, 2.0, 0.5, 3.0, 0, "succeeded"),
    ("j000.s0.t1", 5, 1, 3.0, 0.5, 4.5, 4096, "succeeded"),
    ("j000.s1.t0", 20, 0, 2.0, 4.5, 9.5, 0, "succeeded"),
    ("j000.s1.t1", 10, 1, 3.0, 4.5, 9.0, 0, "lost"),
]


def write_table(path: Path, table: str, rows: list[dict]) -> None:
    with open(path / f"{table}.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, TABLES[table], extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)


@pytest.fixture
def yarn_me_run(tmp_path: Path) -> Path:
    job = {**JOB, "jct_s": 9.5, "queue_s": 0.5, "status": "succeeded", "tasks": 4}
    write_table(tmp_path, "jobs", [{**job, "map_phase_s": 4.0, "reduce_phase_s": 5.0}])
    tasks = [
        {
            "task_id": task, "job_id": "j000", "stage": task[6], "index": task[-1], "attempt": 0,
            "node_id": "reserved-0", "node_class": "reserved", "memory_mb": memory,
            "elastic": elastic, "ideal_memory_mb": 20, "predicted_s": predicted, "start_s": start,
            "end_s": end, "status": status, "spill_bytes": spill,
        }
        for task, memory, elastic, predicted, start, end, spill, status in TASKS
    ]  # fmt: skip
    write_table(tmp_path, "tasks", tasks)
    write_table(tmp_path, "decisions", [{"t_s": 0.5, "job_id": "j000", "decision": "elastic_accepted"}])
    return tmp_path


def test_elasticity_metrics_cover_the_succeeded_attempts(yarn_me_run: Path) -> None:
    metrics = compute_metrics(load_run(yarn_me_run))
    stats = metrics.elasticity
    assert stats is not None and metrics.elasticity_by_job == {"j000": stats}
    assert (stats.attempts, stats.elastic, stats.elastic_spill_bytes) == (3, 1, 4096)
    assert stats.mean_ratio == pytest.approx((1 + 0.25 + 1) / 3)
    assert stats.min_ratio == 0.25
    assert stats.elastic_error_s == pytest.approx(1.0)  # measured 4.0 s, predicted 3.0 s
    assert stats.regular_error_s == pytest.approx((0.5 + 3.0) / 2)


def test_the_report_shows_phases_ratios_and_every_elastic_attempt(yarn_me_run: Path) -> None:
    markdown, _ = write_report(yarn_me_run)
    text = markdown.read_text()
    assert "| 4 | 0 | 4.00 | 5.00 |" in text  # tasks, relaunched, map phase, reduce phase
    assert "## Memory elasticity" in text
    assert "| j000 | sort | 3 | 1 | 0.750 | 0.250 |" in text
    assert "| j000.s0.t1 | reserved-0 | 5 | 20 | 0.250 | 3.00 | 4.00 |" in text
    assert "j000.s1.t1" not in text.split("## Memory elasticity")[1].split("## ")[0]


def test_runs_without_a_memory_aware_scheduler_have_no_elasticity_section(tmp_path: Path) -> None:
    write_table(tmp_path, "jobs", [{**JOB, "status": "succeeded"}])
    write_table(tmp_path, "tasks", [{"task_id": "j000.s0.t0", "job_id": "j000", "memory_mb": 256}])
    metrics = compute_metrics(load_run(tmp_path))
    assert metrics.elasticity is None and metrics.elasticity_by_job is None
    markdown, _ = write_report(tmp_path)
    assert "Memory elasticity" not in markdown.read_text()
