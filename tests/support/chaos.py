"""A scenario for the chaos tests: a cluster with lifetimes, storms and replacements as given."""

from __future__ import annotations

from testbed.scenario.schema import parse_scenario


def scenario(chaos: dict, transient: int = 2, reserved: int = 1, seed: int = 1, time_scale=1.0):
    return parse_scenario(
        {
            "name": "plan-test",
            "seed": seed,
            "time_scale": time_scale,
            "cluster": {"transient": transient, "reserved": reserved},
            "jobs": [{"workload": "sleep"}],
            "chaos": chaos,
        }
    )
