"""The external anchor against real Apache Spark (``local-cluster``, executors as processes):
Spark's wordcount output equals ours on the same input, and SIGKILLing an executor once its map
stage has succeeded makes Spark recompute the map output it held (read from its event log).

Skipped where pyspark or Java is missing (``.ci/run`` installs both: the ``spark`` extra)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from master.shell.run import run_scenario
from testbed.app.anchor.compare import (
    RESERVED,
    output_differences,
    pyspark_missing,
    run_spark,
    scenario_data,
    spark_spec,
    write_input,
)
from testbed.app.anchor.spark_run import live_executors
from testbed.scenario.schema import WordcountJob, parse_scenario
from testbed.workloads.check import check_output
from tests.support.runs import assert_clean
from tests.support.settings import settings_of

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.timeout(600),
    pytest.mark.skipif(pyspark_missing() is not None, reason=pyspark_missing() or ""),
    pytest.mark.skipif(shutil.which("java") is None, reason="no Java: apt-get install openjdk-17-jre"),
]

TRANSIENT = 1
"""One killable executor beside the protected reserved one (the victim; the recompute runs on the
other or on the one Spark's worker relaunches): two JVM executors, not three (154 s -> 111 s)."""


async def test_spark_recomputes_a_killed_executors_map_output_and_equals_ours(tmp_path: Path) -> None:
    entry = write_input("wordcount", {"size_mb": 3, "maps": 3, "reduces": 6}, 5, tmp_path / "input")
    ours = await run_scenario(
        settings_of(parse_scenario(scenario_data(entry, TRANSIENT, [], 5))), tmp_path / "ours"
    )
    assert ours.ok, ours.summary
    assert_clean(tmp_path / "ours")

    kills = [{"after_stage": 0, "victim": 0}]  # the map stage has succeeded: its output is needed
    spec = spark_spec(entry, RESERVED + TRANSIENT, tmp_path / "spark-out", kills)
    result = await asyncio.to_thread(run_spark, spec, tmp_path / "spark")

    log = result["log"]
    assert len(result["kills"]) == 1 and log["executors_removed"] == 1, result
    assert log["recomputed_tasks"] >= 1, log  # a map task of stage 0 succeeded twice
    assert log["resubmitted_stages"] >= 1, log
    ours_output = tmp_path / "ours" / "outputs" / "j000"
    assert output_differences("wordcount", ours_output, tmp_path / "spark-out") == []
    job = WordcountJob(**{k: v for k, v in entry.items() if k != "workload"}, workload="wordcount")
    assert check_output(job, 5, tmp_path / "spark-out") == []
    assert live_executors(result["app_id"]) == {}  # the run's executor processes are gone
