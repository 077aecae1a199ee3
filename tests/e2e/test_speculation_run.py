"""Speculation for real: outputs stay exact when copies race their originals on real agents,
with evictions, under every recovery strategy (the loser is cancelled, never committed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from master.shell.run import run_scenario
from tests.support.runs import JOBS, assert_clean, assert_exact, evict_first_if_none
from tests.support.scenarios import make_scenario
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e

CLUSTER = {"reserved": 1, "transient": 3, "heartbeat_interval": 0.2, "heartbeat_timeout": 5}
EAGER = {"multiplier": 1.0, "quantile": 0.25, "min_runtime": 0}
"""Spark's rule made eager (any task slower than the median once a quarter has finished), so
that real copies race their originals: the agents report no progress scores yet, and
spark's rule reads durations only."""


@pytest.mark.parametrize("strategy", ["spark", "spark-checkpoint", "pado"])
async def test_outputs_exact_with_copies_and_evictions(tmp_path: Path, strategy: str) -> None:
    scenario = make_scenario(
        time_scale=60,
        cluster=CLUSTER,
        jobs=JOBS,
        policy={"strategy": strategy, "speculation": "spark", "options": {"speculation": {"spark": EAGER}}},
        chaos={
            "transient": {"lifetime": "high", "notice": "30s", "replace": True, "provisioning_delay": "30s"}
        },
    )
    result = await run_scenario(settings_of(scenario), tmp_path, on_event=evict_first_if_none())
    assert result.ok, result.summary
    assert result.summary["evictions"] > 0
    assert result.summary["speculative_attempts"] > 0
    assert_exact(scenario, tmp_path)
    assert_clean(tmp_path)
    journal = (tmp_path / "events.jsonl").read_text().splitlines()
    assert [line for line in journal if '"forged_message"' in line] == []  # a loser's late update is none
