"""The run's time base (``RunSettings.time``): resolved with the dilation, the same arithmetic
as the scenario's own conversions, to the bit."""

from __future__ import annotations

from pathlib import Path

from testbed.scenario.schema import load_scenario
from testbed.settings.resolve import resolve
from testbed.settings.run_settings import Host

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_the_time_base_is_the_resolved_scenarios_to_the_bit() -> None:
    faithful = ["fidelity.mode=faithful", "fidelity.dilation=auto", "time_scale=7"]
    settings = resolve(load_scenario(SCENARIOS / "quickstart.yaml", faithful), Host(2.0))
    scenario, time = settings.scenario, settings.time
    assert time.dilation == settings.dilation > 1.0 and time.time_scale == 7.0
    for trace_s in (0.0, 1.0, 61.5, 1e-3, 3600.0 * 24):
        assert time.trace(trace_s) == scenario.trace(trace_s)
    assert time.trace_per_wall == scenario.time_scale / scenario.fidelity.factor
    assert (time.heartbeat_interval_s, time.heartbeat_timeout_s) == (
        scenario.heartbeat_interval_s,
        scenario.heartbeat_timeout_s,
    )
