"""The core reads no file: a scenario's trace files (a class's capacity outages, a lifetime
trace) are read where the scenario is compiled (``resolve``), so a core built from the
settings runs its chaos with the files gone (it read the capacity trace itself before)."""

from __future__ import annotations

from pathlib import Path

from master.core.machine import MasterCore
from testbed.scenario.schema import parse_scenario
from tests.support.settings import settings_of


def test_a_core_built_from_settings_needs_no_trace_file(tmp_path: Path) -> None:
    outages = tmp_path / "outages.csv"
    outages.write_text("1m,2m\n3m,4m\n")
    scenario = parse_scenario(
        {
            "name": "no-file",
            "cluster": {"transient": 2, "reserved": 1},
            "jobs": [{"workload": "sleep"}],
            "chaos": {"transient": {"lifetime": {"fixed": "10m"}, "capacity": {"trace": str(outages)}}},
        }
    )
    settings = settings_of(scenario)
    outages.unlink()
    core = MasterCore(settings, "no-file")
    core.start(0.0)
    capacity = core.chaos.rules.classes["transient"].capacity
    assert capacity is not None and capacity.windows_until(300.0) == [(60.0, 120.0), (180.0, 240.0)]
