"""docs/plugins.md's recovery strategy, from a directory outside the package, on real local
agents and a real broker under an eviction: the tasks the eviction set back run again on the
reserved node only, the outputs are exact against the workload's reference, and the run is
labelled with the plugin."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from master.shell.run import run_scenario
from testbed.app.cli import main
from testbed.scenario.schema import load_scenario
from testbed.workloads.check import check_output
from tests.support.plugins import reruns, write_doc_files
from tests.support.settings import settings_of

pytestmark = pytest.mark.e2e


async def test_the_docs_strategy_reruns_on_reserved_nodes_exactly(
    tmp_path: Path, isolated_path: None
) -> None:
    plugins = tmp_path / "my-strategies"
    plugins.mkdir()
    write_doc_files(plugins)
    scenario = load_scenario(plugins / "evicted.yaml")
    run_dir = tmp_path / "run"
    result = await run_scenario(settings_of(scenario), run_dir)
    assert result.ok, result.summary
    assert result.summary["evictions"] == 1, result.summary  # the storm: half of the two transient nodes
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    again = reruns(events)
    assert again and {cls for _, cls in again} == {"reserved"}, again
    assert check_output(scenario.jobs[0], scenario.seed * 1000, run_dir / "outputs" / "j000") == []
    assert main(["check-output", "--run", str(run_dir)]) == 0
    label = result.summary["plugins"]["strategy"]
    assert label["import_path"] == "evicted_to_reserved:EvictedToReserved"
    assert re.fullmatch(r"sha256:[0-9a-f]{12}", label["version"])
